-- The editor's files: the daemon's `fs/readTextFile` and `fs/writeTextFile` requests. A file
-- loaded in a buffer is read from the buffer (unsaved changes included) and written into it, so
-- `u` undoes the agent's change and Neovim never finds its file changed behind its back (W12).
-- Files no buffer holds are read and written on disk.
local util = require("pi_rpc.util")

local M = {}

local EOL = { unix = "\n", dos = "\r\n", mac = "\r" }
local diff = vim.text and vim.text.diff or vim.diff -- vim.diff is deprecated from 0.12 on

---@param path string
---@return string
local function canonical(path)
  path = vim.fs.normalize(path)
  return vim.uv.fs_realpath(path) or path
end

--- The loaded buffer holding `path` (an exact match of the full name; symlinks resolved).
---@param path string absolute
---@return integer?
function M.loaded_buffer(path)
  local want = canonical(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if name ~= "" and vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" then
      if name == path or canonical(name) == want then
        return buf
      end
    end
  end
  return nil
end

--- Takes in changes made on disk under a buffer without unsaved changes ('autoread' reloads it
--- silently), so what the agent reads and what `:write` later writes start from the disk.
---@param buf integer
function M.check(buf)
  if vim.api.nvim_buf_is_loaded(buf) then
    vim.cmd("silent! checktime " .. buf)
  end
end

--- The buffer's text as `:write` would put it in the file (line ends as 'fileformat' says).
---@param buf integer
---@return string
function M.buffer_text(buf)
  local eol = EOL[vim.bo[buf].fileformat] or "\n"
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), eol)
  if vim.bo[buf].eol or (vim.bo[buf].fixeol and not vim.bo[buf].binary) then
    text = text .. eol
  end
  return text
end

-- `content` as buffer lines, and whether it ends with a line break.
---@return string[] lines, boolean eol
local function to_lines(content, fileformat)
  local eol = EOL[fileformat] or "\n"
  local ends = content:sub(-#eol) == eol
  if ends then
    content = content:sub(1, -#eol - 1)
  end
  if eol ~= "\n" then
    content = content:gsub(vim.pesc(eol), "\n")
  end
  return vim.split(content, "\n", { plain = true }), ends
end

-- Closes the buffer's current undo block, so the agent's change is an undo step of its own.
---@param buf integer
local function undo_break(buf)
  vim.api.nvim_buf_call(buf, function()
    vim.go.undolevels = vim.go.undolevels -- setting it to itself syncs undo (:help undo-break)
  end)
end

--- Replaces the buffer's text with `lines`, changing only the lines that differ (marks, folds
--- and the cursor elsewhere stay put), as one undo step.
---@param buf integer
---@param lines string[]
function M.set_text(buf, lines)
  local old = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local hunks = diff(table.concat(old, "\n") .. "\n", table.concat(lines, "\n") .. "\n", {
    result_type = "indices",
  }) --[[@as integer[][] ]]
  if #hunks == 0 then
    return
  end
  undo_break(buf)
  -- From the last hunk up, so the line numbers of the ones before stay valid.
  for i = #hunks, 1, -1 do
    local start_a, count_a, start_b, count_b = unpack(hunks[i])
    local replacement = vim.list_slice(lines, start_b, start_b + count_b - 1)
    local first = count_a == 0 and start_a or start_a - 1
    vim.api.nvim_buf_set_lines(buf, first, first + count_a, false, replacement)
  end
  undo_break(buf)
end

---@param path string
---@return string? content, string? error
local function read_disk(path)
  local f, err = io.open(path, "rb")
  if not f then
    return nil, err
  end
  local content = f:read("*a")
  f:close()
  return content, nil
end

---@param path string
---@param content string
---@return string? error
local function write_disk(path, content)
  local f, err = io.open(path, "wb")
  if not f then
    return err
  end
  local ok, werr = f:write(content)
  f:close()
  return ok and nil or werr
end

local function failed(message)
  return nil, vim.lsp.rpc.rpc_response_error(vim.lsp.protocol.ErrorCodes.RequestFailed, message)
end

--- `fs/readTextFile {path}` -> `{content}`.
---@param params table
function M.read_text_file(params)
  local path = util.get(params, "path")
  if type(path) ~= "string" then
    return failed("no path")
  end
  local buf = M.loaded_buffer(path)
  if buf then
    if not vim.bo[buf].modified then
      M.check(buf)
    end
    return { content = M.buffer_text(buf) }
  end
  local content, err = read_disk(path)
  if not content then
    return failed(err or ("cannot read " .. path))
  end
  return { content = content }
end

-- The agent's new text into a loaded buffer; written to disk only when the buffer had no
-- unsaved changes (the user's own edits are never saved behind their back).
---@param buf integer
---@param content string
local function write_buffer(buf, content)
  local had_changes = vim.bo[buf].modified
  if not had_changes then
    M.check(buf)
  end
  local lines, ends = to_lines(content, vim.bo[buf].fileformat)
  M.set_text(buf, lines)
  if vim.bo[buf].eol ~= ends and not vim.bo[buf].fixeol then
    vim.bo[buf].eol = ends
  end
  if had_changes or not vim.bo[buf].modified then
    return
  end
  local ok, err = pcall(vim.api.nvim_buf_call, buf, function()
    vim.cmd("silent keepalt update")
  end)
  if not ok then
    util.notify(
      ("the agent's change to %s is in its buffer but was not saved: %s"):format(
        vim.api.nvim_buf_get_name(buf),
        tostring(err)
      ),
      vim.log.levels.WARN
    )
  end
end

--- `fs/writeTextFile {path, content}` -> null.
---@param params table
function M.write_text_file(params)
  local path, content = util.get(params, "path"), util.get(params, "content")
  if type(path) ~= "string" or type(content) ~= "string" then
    return failed("no path or content")
  end
  local buf = M.loaded_buffer(path)
  if buf then
    local ok, err = pcall(write_buffer, buf, content)
    if not ok then
      return failed(tostring(err))
    end
    return vim.NIL
  end
  local err = write_disk(path, content)
  if err then
    return failed(err)
  end
  return vim.NIL
end

return M
