-- Small helpers shared by the modules: JSON null handling and notifications.
local M = {}

--- Walks `t` by keys; JSON null (vim.NIL, which Neovim 0.11+ keeps) reads as nil.
---@return any
function M.get(t, ...)
  local v = t
  for i = 1, select("#", ...) do
    if type(v) ~= "table" then
      return nil
    end
    v = v[select(i, ...)]
  end
  if v == vim.NIL then
    return nil
  end
  return v
end

---@param msg string
---@param level integer?
function M.notify(msg, level)
  vim.notify("pi-rpc: " .. msg, level or vim.log.levels.INFO, { title = "pi-rpc" })
end

--- The text of a list of content blocks (text blocks joined; images named).
---@param content any
---@return string
function M.content_text(content)
  if type(content) == "string" then
    return content
  end
  if type(content) ~= "table" then
    return ""
  end
  local parts = {}
  for _, block in ipairs(content) do
    if block.type == "text" then
      parts[#parts + 1] = block.text
    elseif block.type == "image" then
      parts[#parts + 1] = "[image " .. (M.get(block, "mimeType") or "") .. "]"
    end
  end
  return table.concat(parts, "\n")
end

return M
