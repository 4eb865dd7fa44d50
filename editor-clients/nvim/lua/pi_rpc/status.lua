-- The agent's state for statuslines: idle, streaming, or running a tool.
local M = {}

---@class pi_rpc.Status
---@field phase "stopped"|"idle"|"streaming"
---@field running table<string, string> toolCallId -> tool name, in start order below
---@field order string[]
---@field steering integer
---@field follow_up integer
M.state = { phase = "stopped", running = {}, order = {}, steering = 0, follow_up = 0 }

local function changed()
  vim.g.pi_rpc_status = M.text()
  vim.api.nvim_exec_autocmds("User", { pattern = "PiRpcStatus", modeline = false })
  vim.cmd("redrawstatus!")
end

--- "idle", "streaming" or "tool" (the phase a statusline shows).
function M.phase()
  local s = M.state
  if s.phase == "streaming" and #s.order > 0 then
    return "tool"
  end
  return s.phase
end

--- Statusline text, e.g. "π idle", "π streaming", "π bash", "π streaming +1 queued".
---@return string
function M.text()
  local s = M.state
  local text
  if s.phase == "streaming" and #s.order > 0 then
    text = "π " .. s.running[s.order[#s.order]]
    if #s.order > 1 then
      text = text .. " +" .. (#s.order - 1)
    end
  else
    text = "π " .. s.phase
  end
  local queued = s.steering + s.follow_up
  if queued > 0 then
    text = text .. (" (%d queued)"):format(queued)
  end
  return text
end

---@param ev table an agent/event
function M.apply(ev)
  local s = M.state
  local t = ev.type
  if t == "agent_start" then
    s.phase = "streaming"
  elseif t == "agent_end" or t == "agent_settled" then
    s.phase, s.running, s.order = "idle", {}, {}
  elseif t == "tool_execution_start" then
    s.running[ev.toolCallId] = ev.toolName
    s.order[#s.order + 1] = ev.toolCallId
  elseif t == "tool_execution_end" then
    s.running[ev.toolCallId] = nil
    s.order = vim.tbl_filter(function(id)
      return id ~= ev.toolCallId
    end, s.order)
  elseif t == "queue_update" then
    s.steering = type(ev.steering) == "table" and #ev.steering or 0
    s.follow_up = type(ev.followUp) == "table" and #ev.followUp or 0
  else
    return
  end
  changed()
end

---@param phase "stopped"|"idle"
function M.reset(phase)
  M.state = { phase = phase, running = {}, order = {}, steering = 0, follow_up = 0 }
  changed()
end

function M.is_streaming()
  return M.state.phase == "streaming"
end

return M
