-- What each `@` mention of the prompt carries: a short reference left in the prompt's text and a
-- markdown block appended after it. Every block is capped (`mentions` in the options): a mention
-- must never send a whole log or a huge generated file to the model.
local config = require("pi_rpc.config")

local M = {}

local SEVERITY = { "ERROR", "WARN", "INFO", "HINT" }
-- A file not loaded in a buffer is read whole (to say how many lines were left out) up to this.
local READ_WHOLE_BYTES = 4 * 1024 * 1024

---@class pi_rpc.Mention
---@field ref string what stands in the prompt's text instead of the mention
---@field block string[] the content, appended once after the text

local function caps()
  return config.options.mentions or config.defaults.mentions
end

---@param buf integer
---@return string
function M.name_of(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  return name ~= "" and vim.fn.fnamemodify(name, ":.") or "[No Name]"
end

-- `lines` cut to the line and byte caps, with a line saying what was left out.
---@param lines string[]
---@return string[] kept, string? note
local function capped(lines)
  local c = caps()
  local kept, bytes = {}, 0
  for i, line in ipairs(lines) do
    if i > c.max_lines or bytes + #line + 1 > c.max_bytes then
      return kept, ("(%d more lines not included)"):format(#lines - #kept)
    end
    kept[#kept + 1] = line
    bytes = bytes + #line + 1
  end
  return kept, nil
end

-- A heading, the lines in a fence (longer than any fence inside them), and a note when capped.
---@param heading string
---@param lines string[]
---@param filetype string
---@param cut string? the note for lines left out before the caps were applied
---@return string[]
local function fenced(heading, lines, filetype, cut)
  local kept, note = capped(lines)
  note = cut or note
  local fence = require("pi_rpc.format").fence(table.concat(kept, "\n"))
  local out = { heading, fence .. filetype }
  vim.list_extend(out, kept)
  out[#out + 1] = fence
  if note then
    out[#out + 1] = note
  end
  return out
end

-- A heading and one `- ` line per item, at most `max_items`; "- none" for no item.
---@param heading string
---@param items string[]
---@return string[]
local function listed(heading, items)
  local out = { heading }
  local max = caps().max_items
  for i, item in ipairs(items) do
    if i > max then
      out[#out + 1] = ("(%d more not included)"):format(#items - max)
      break
    end
    out[#out + 1] = "- " .. item
  end
  if #items == 0 then
    out[#out + 1] = "- none"
  end
  return out
end

--- `@buffer`: the buffer's text as it is in Neovim, unsaved changes included.
---@param buf integer
---@return pi_rpc.Mention
function M.buffer(buf)
  local name = M.name_of(buf)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  return { ref = "`" .. name .. "`", block = fenced(("`%s`:"):format(name), lines, vim.bo[buf].filetype or "") }
end

--- `@path/to/file`: the file, from its buffer when one is loaded (unsaved changes included).
---@param path string relative to the working directory, or absolute
---@return pi_rpc.Mention
function M.file(path)
  local name = vim.fn.fnamemodify(path, ":.")
  local buf = vim.fn.bufnr(vim.fn.fnamemodify(path, ":p"))
  local lines, cut
  if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
    lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  elseif vim.fn.getfsize(path) > READ_WHOLE_BYTES then
    -- Too big to count its lines: the first ones and a line saying the file goes on.
    lines = vim.fn.readfile(path, "", caps().max_lines)
    cut = ("(the file has %d bytes: the rest is not included)"):format(vim.fn.getfsize(path))
  else
    lines = vim.fn.readfile(path)
  end
  local filetype = vim.filetype.match({ filename = path }) or ""
  return { ref = "`" .. name .. "`", block = fenced(("`%s`:"):format(name), lines, filetype, cut) }
end

--- `@path/to/folder/`: the folder's entries (folders end in `/`), hidden ones included.
---@param path string
---@return pi_rpc.Mention
function M.folder(path)
  local name = vim.fn.fnamemodify(path, ":.")
  name = name:sub(-1) == "/" and name or name .. "/"
  local entries = {}
  for entry, kind in vim.fs.dir(path) do
    entries[#entries + 1] = kind == "directory" and entry .. "/" or entry
  end
  table.sort(entries)
  return { ref = "`" .. name .. "`", block = listed(("Folder `%s`:"):format(name), entries) }
end

---@param d vim.Diagnostic
---@param with_name boolean
---@return string
local function diagnostic_line(d, with_name)
  local source = d.source and (" [" .. d.source .. "]") or ""
  local where = with_name and (M.name_of(d.bufnr) .. ": ") or ""
  return ("%sline %d, col %d, %s%s: %s"):format(
    where,
    d.lnum + 1,
    d.col + 1,
    SEVERITY[d.severity] or "?",
    source,
    (d.message:gsub("\n", " "))
  )
end

--- `@diagnostics`: the buffer's diagnostics; `@diagnostics:all` those of every buffer.
---@param buf integer? nil: the workspace's
---@return pi_rpc.Mention
function M.diagnostics(buf)
  local items = vim.diagnostic.get(buf)
  table.sort(items, function(a, b)
    if a.bufnr ~= b.bufnr then
      return M.name_of(a.bufnr) < M.name_of(b.bufnr)
    end
    return a.lnum < b.lnum or (a.lnum == b.lnum and a.col < b.col)
  end)
  local lines = vim.tbl_map(function(d)
    return diagnostic_line(d, buf == nil)
  end, items)
  if buf then
    local name = M.name_of(buf)
    return { ref = "the diagnostics of `" .. name .. "`", block = listed(("Diagnostics of `%s`:"):format(name), lines) }
  end
  return { ref = "the workspace's diagnostics", block = listed("Diagnostics of the workspace:", lines) }
end

--- `@quickfix`: the quickfix list, its title and each entry's place and text.
---@return pi_rpc.Mention
function M.quickfix()
  local qf = vim.fn.getqflist({ title = 1, items = 1 })
  local lines = {}
  for _, item in ipairs(qf.items) do
    local where = item.bufnr > 0 and M.name_of(item.bufnr) or ""
    if item.lnum > 0 then
      where = where .. ":" .. item.lnum .. (item.col > 0 and (":" .. item.col) or "")
    end
    local text = vim.trim((item.text:gsub("\n", " ")))
    lines[#lines + 1] = (where ~= "" and (where .. ": ") or "") .. text
  end
  local title = qf.title ~= "" and (" (" .. qf.title .. ")") or ""
  return { ref = "the quickfix list", block = listed(("Quickfix list%s:"):format(title), lines) }
end

--- The terminal buffer used last, or nil when there is none.
---@return integer?
function M.last_terminal()
  local best, used = nil, -1
  for _, info in ipairs(vim.fn.getbufinfo({ bufloaded = 1 })) do
    if vim.bo[info.bufnr].buftype == "terminal" and info.lastused > used then
      best, used = info.bufnr, info.lastused
    end
  end
  return best
end

--- `@terminal`: the last lines of the terminal buffer used last (its scrollback's tail).
---@return pi_rpc.Mention?
function M.terminal()
  local buf = M.last_terminal()
  if not buf then
    return nil
  end
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  while #lines > 0 and vim.trim(lines[#lines]) == "" do
    lines[#lines] = nil -- a terminal buffer is padded to its window's height
  end
  local n = caps().terminal_lines
  local tail = vim.list_slice(lines, math.max(1, #lines - n + 1), #lines)
  local title = vim.b[buf].term_title or M.name_of(buf)
  return {
    ref = "the terminal output",
    block = fenced(("Last %d lines of the terminal `%s`:"):format(#tail, title), tail, "text"),
  }
end

--- `@selection`: the lines of the buffer's last visual selection ('< to '>), nil if none.
---@param buf integer
---@return pi_rpc.Mention?
function M.selection(buf)
  local l1 = vim.api.nvim_buf_get_mark(buf, "<")[1]
  local l2 = vim.api.nvim_buf_get_mark(buf, ">")[1]
  if l1 == 0 or l2 == 0 then
    return nil
  end
  local lines = require("pi_rpc").selection_context(l1, l2, buf)
  return { ref = ("lines %d-%d of `%s`"):format(l1, l2, M.name_of(buf)), block = lines }
end

--- `@symbol:Name`: the symbol's definition, found through the LSP servers (pi_rpc.symbols).
---@param name string
---@param buf integer the buffer whose servers are asked first
---@return pi_rpc.Mention?
function M.symbol(name, buf)
  local found = require("pi_rpc.symbols").find(name, buf)
  if not found then
    return nil
  end
  local path = vim.fn.fnamemodify(found.path, ":.")
  local heading = ("%s `%s` in `%s`, lines %d-%d:"):format(found.kind, name, path, found.first, found.last)
  local filetype = vim.filetype.match({ filename = found.path }) or ""
  return { ref = "`" .. name .. "`", block = fenced(heading, found.lines, filetype) }
end

return M
