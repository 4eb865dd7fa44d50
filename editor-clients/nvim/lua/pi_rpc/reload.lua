-- Keeps buffers in step with files the agent changed: an edit or write reloads that file's
-- buffer when the tool finishes, and the end of a run checks every buffer (bash may write too).
-- Neovim's 'autoread' (on by default) makes an unmodified buffer reload without a prompt.
local config = require("pi_rpc.config")
local files = require("pi_rpc.files")

local M = {}

local FILE_TOOLS = { edit = true, write = true }
-- The path of each running edit/write by toolCallId: only its start event carries the args.
local paths = {} ---@type table<string, string>

--- A tool's path argument made absolute against the agent's working directory.
---@param path string
---@return string
function M.absolute(path)
  if vim.startswith(path, "/") or path:match("^%a:[/\\]") then
    return vim.fs.normalize(path)
  end
  local info = require("pi_rpc.daemon").info
  local cwd = info and type(info.cwd) == "string" and info.cwd or select(2, config.daemon_argv())
  return vim.fs.normalize(vim.fs.joinpath(cwd, path))
end

--- Called with every daemon event, as it arrives.
---@param ev table
function M.on_event(ev)
  if ev.type == "tool_execution_start" and FILE_TOOLS[ev.toolName] then
    local path = type(ev.args) == "table" and ev.args.path
    if type(path) == "string" then
      paths[ev.toolCallId] = path
    end
  elseif ev.type == "tool_execution_end" and paths[ev.toolCallId] then
    local path = paths[ev.toolCallId]
    paths[ev.toolCallId] = nil
    local buf = files.loaded_buffer(M.absolute(path))
    if buf and not ev.isError then
      files.check(buf)
    end
  elseif ev.type == "agent_end" then
    paths = {}
    vim.cmd("silent! checktime")
  end
end

return M
