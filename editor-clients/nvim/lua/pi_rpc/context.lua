-- Context written into a prompt: `#buffer` (the buffer the input was opened from) and
-- `#diagnostics` (its diagnostics) are expanded on send; `@path` stays a path for the agent to
-- read and is completed from the working directory. The input buffer's 'omnifunc' completes both.
local M = {}

local TOKENS = { "buffer", "diagnostics" }
local SEVERITY = { "ERROR", "WARN", "INFO", "HINT" }

local function name_of(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  return name ~= "" and vim.fn.fnamemodify(name, ":.") or "[No Name]"
end

local function buffer_block(buf)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local fence = require("pi_rpc.format").fence(table.concat(lines, "\n"))
  local out = { ("`%s`:"):format(name_of(buf)), fence .. (vim.bo[buf].filetype or "") }
  vim.list_extend(out, lines)
  out[#out + 1] = fence
  return out
end

local function diagnostics_block(buf)
  local out = { ("Diagnostics of `%s`:"):format(name_of(buf)) }
  local items = vim.diagnostic.get(buf)
  table.sort(items, function(a, b)
    return a.lnum < b.lnum or (a.lnum == b.lnum and a.col < b.col)
  end)
  for _, d in ipairs(items) do
    local source = d.source and (" [" .. d.source .. "]") or ""
    local message = d.message:gsub("\n", " ")
    out[#out + 1] = ("- line %d, col %d, %s%s: %s"):format(
      d.lnum + 1,
      d.col + 1,
      SEVERITY[d.severity] or "?",
      source,
      message
    )
  end
  if #items == 0 then
    out[#out + 1] = "- none"
  end
  return out
end

--- The prompt text with each `#buffer` / `#diagnostics` replaced by a short reference and the
--- content they stand for appended, once each.
---@param text string
---@param origin integer? the buffer the input was opened from
---@return string
function M.expand(text, origin)
  if not origin or not vim.api.nvim_buf_is_valid(origin) then
    return text
  end
  local used = {}
  local expanded = text:gsub("#(%a+)", function(word)
    if word == "buffer" then
      used.buffer = true
      return "`" .. name_of(origin) .. "`"
    elseif word == "diagnostics" then
      used.diagnostics = true
      return "the diagnostics of `" .. name_of(origin) .. "`"
    end
  end)
  local blocks = {}
  if used.buffer then
    vim.list_extend(blocks, { "" })
    vim.list_extend(blocks, buffer_block(origin))
  end
  if used.diagnostics then
    vim.list_extend(blocks, { "" })
    vim.list_extend(blocks, diagnostics_block(origin))
  end
  if #blocks == 0 then
    return text
  end
  return expanded .. "\n" .. table.concat(blocks, "\n")
end

--- 'omnifunc' of the input buffer: `@` completes paths, `#` the context words.
function M.omnifunc(findstart, base)
  if findstart == 1 then
    local line = vim.api.nvim_get_current_line():sub(1, vim.api.nvim_win_get_cursor(0)[2])
    local start = line:find("[@#][^%s@#]*$")
    return start and start - 1 or -3 -- -3: cancel silently
  end
  local sigil, rest = base:sub(1, 1), base:sub(2)
  local items = {}
  if sigil == "#" then
    for _, word in ipairs(TOKENS) do
      if vim.startswith(word, rest) then
        items[#items + 1] = "#" .. word
      end
    end
  elseif sigil == "@" then
    for _, path in ipairs(vim.fn.getcompletion(rest, "file")) do
      items[#items + 1] = "@" .. path
    end
  end
  return items
end

return M
