-- Keeping some hunks of a waiting edit or write. The approval float shows the patch, one `@@` hunk
-- after another; a key keeps or rejects the hunk under the cursor (a rejected hunk is dimmed, and
-- every header says which it is), and allowing names the kept ones in the answer (`hunks`), so the
-- daemon writes only those and tells the agent which it may not redo.
local util = require("pi_rpc.util")

local M = {}

local ns = vim.api.nvim_create_namespace("pi_rpc_hunks")

---@class pi_rpc.HunkChoice
---@field list table[] the request's `preview.hunks`
---@field starts integer[] the float line (1-based) of each hunk's `@@` header
---@field kept table<integer, boolean> by hunk index

--- The choice for a request whose float shows `lines`: nil when there is nothing to choose (one
--- hunk, none, or a float whose `@@` lines are not the request's hunks).
---@param params table
---@param lines string[]
---@return pi_rpc.HunkChoice?
function M.choice(params, lines)
  local list = util.get(util.get(params, "preview") or {}, "hunks")
  if type(list) ~= "table" or #list < 2 then
    return nil
  end
  local starts = {}
  for i, line in ipairs(lines) do
    if line:sub(1, 2) == "@@" then
      starts[#starts + 1] = i
    end
  end
  if #starts ~= #list then
    return nil
  end
  local kept = {}
  for _, hunk in ipairs(list) do
    kept[hunk.index] = true
  end
  return { list = list, starts = starts, kept = kept }
end

--- The position in `choice.list` of the hunk that holds float line `lnum` (the file headers
--- above the first hunk count as the first).
---@param choice pi_rpc.HunkChoice
---@param lnum integer
---@return integer
function M.at(choice, lnum)
  local found = 1
  for k, start in ipairs(choice.starts) do
    if start <= lnum then
      found = k
    end
  end
  return found
end

---@param choice pi_rpc.HunkChoice
---@param lnum integer
function M.toggle(choice, lnum)
  local index = choice.list[M.at(choice, lnum)].index
  choice.kept[index] = not choice.kept[index]
end

--- The indices the answer names: nil when every hunk is kept (a plain allow).
---@param choice pi_rpc.HunkChoice?
---@return integer[]?
function M.answer(choice)
  if not choice then
    return nil
  end
  local kept = {}
  for _, hunk in ipairs(choice.list) do
    if choice.kept[hunk.index] then
      kept[#kept + 1] = hunk.index
    end
  end
  return #kept < #choice.list and kept or nil
end

---@param choice pi_rpc.HunkChoice
---@return integer kept, integer total
function M.count(choice)
  local n = 0
  for _, hunk in ipairs(choice.list) do
    n = n + (choice.kept[hunk.index] and 1 or 0)
  end
  return n, #choice.list
end

--- Marks each hunk in the float's buffer: its header says kept or rejected, a rejected one's
--- lines are dimmed.
---@param choice pi_rpc.HunkChoice
---@param buf integer
---@param toggle_key string? the key that toggles, for the marks' hint
function M.render(choice, buf, toggle_key)
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  local line_count = vim.api.nvim_buf_line_count(buf)
  local total = #choice.list
  for k, hunk in ipairs(choice.list) do
    local first = choice.starts[k]
    local last = (choice.starts[k + 1] or (line_count + 1)) - 1
    local keeps = choice.kept[hunk.index]
    local label = keeps and ("✓ hunk %d/%d kept"):format(k, total) or ("✗ hunk %d/%d rejected"):format(k, total)
    if toggle_key then
      label = label .. (" (%s %s it)"):format(toggle_key, keeps and "rejects" or "keeps")
    end
    vim.api.nvim_buf_set_extmark(buf, ns, first - 1, 0, {
      virt_text = { { "  " .. label, keeps and "DiagnosticOk" or "DiagnosticError" } },
      virt_text_pos = "eol",
    })
    if not keeps then
      vim.api.nvim_buf_set_extmark(buf, ns, first, 0, {
        end_row = last,
        end_col = 0,
        hl_group = "Comment",
        hl_eol = true,
        priority = 200, -- over the diff syntax
      })
    end
  end
end

--- The marks as text, line by line (for tests and screen readers): `{lnum, label}`.
---@param buf integer
---@return table[]
function M.marks(buf)
  local out = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    local details = mark[4]
    if details.virt_text then
      out[#out + 1] = { mark[2] + 1, vim.trim(details.virt_text[1][1]) }
    end
  end
  return out
end

return M
