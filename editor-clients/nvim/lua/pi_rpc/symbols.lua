-- Workspace symbols through Neovim's LSP client, for `@symbol:Name` in the prompt: the servers
-- attached to the buffer the input was opened from are asked (`workspace/symbol`), else every
-- running server that can answer. Requests are synchronous with a short timeout: completion and
-- sending wait for them, and a slow server must not hang the editor.
local M = {}

local METHOD = "workspace/symbol"
local TIMEOUT_MS = 3000
-- A server that gives only the name's range: this many lines from it stand for the definition.
local LINES_WITHOUT_RANGE = 40

---@class pi_rpc.Symbol
---@field name string
---@field kind string e.g. "Function"
---@field path string absolute
---@field first integer 1-based first line
---@field last integer 1-based last line
---@field lines string[]

---@param buf integer
---@return vim.lsp.Client[]
local function clients(buf)
  local attached = vim.lsp.get_clients({ bufnr = buf, method = METHOD })
  if #attached > 0 then
    return attached
  end
  return vim.lsp.get_clients({ method = METHOD })
end

--- The servers' answers to `workspace/symbol` for `query`, in the servers' order.
---@param query string
---@param buf integer
---@return table[] SymbolInformation or WorkspaceSymbol items
function M.query(query, buf)
  local out = {}
  for _, client in ipairs(clients(buf)) do
    local response = client:request_sync(METHOD, { query = query }, TIMEOUT_MS, buf)
    if response and not response.err and type(response.result) == "table" then
      vim.list_extend(out, response.result)
    end
  end
  return out
end

---@param item table
---@return string
function M.kind_name(item)
  return vim.lsp.protocol.SymbolKind[item.kind] or "Symbol"
end

---@param path string
---@return string[]
local function file_lines(path)
  local buf = vim.fn.bufnr(path)
  if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
    return vim.api.nvim_buf_get_lines(buf, 0, -1, false) -- unsaved changes included
  end
  return vim.fn.filereadable(path) == 1 and vim.fn.readfile(path) or {}
end

--- The first symbol named exactly `name` (else the first the servers give), with its lines.
---@param name string
---@param buf integer
---@return pi_rpc.Symbol?
function M.find(name, buf)
  local items = M.query(name, buf)
  local item = nil
  for _, candidate in ipairs(items) do
    if candidate.name == name then
      item = candidate
      break
    end
  end
  item = item or items[1]
  local location = item and item.location
  if not location or not location.uri then
    return nil
  end
  local path = vim.uri_to_fname(location.uri)
  local all = file_lines(path)
  local range = location.range
  local first = range and range.start.line + 1 or 1
  local last = range and range["end"].line + 1 or first
  if last <= first then
    last = first + LINES_WITHOUT_RANGE - 1
  end
  last = math.min(last, #all)
  return {
    name = item.name,
    kind = M.kind_name(item),
    path = path,
    first = first,
    last = last,
    lines = vim.list_slice(all, first, last),
  }
end

return M
