-- The agent's state for statuslines: idle, streaming, running a tool, or waiting for approval.
local M = {}

---@class pi_rpc.Status
---@field phase "stopped"|"idle"|"streaming"
---@field running table<string, string> toolCallId -> tool name, in start order below
---@field order string[]
---@field steering integer
---@field follow_up integer
---@field approvals string[] tool names of the calls waiting for approval, in request order
---@field approval_ids string[]

---@param phase "stopped"|"idle"
---@return pi_rpc.Status
local function fresh(phase)
  return {
    phase = phase,
    running = {},
    order = {},
    steering = 0,
    follow_up = 0,
    approvals = {},
    approval_ids = {},
  }
end

M.state = fresh("stopped")

local function changed()
  if require("pi_rpc.chats").in_background() then
    return -- the statusline shows the current chat
  end
  vim.g.pi_rpc_status = M.text()
  vim.api.nvim_exec_autocmds("User", { pattern = "PiRpcStatus", modeline = false })
  vim.cmd("redrawstatus!")
end

--- "idle", "streaming", "tool" or "approval" (the phase a statusline shows).
function M.phase()
  local s = M.state
  if s.phase == "streaming" and #s.approvals > 0 then
    return "approval"
  end
  if s.phase == "streaming" and #s.order > 0 then
    return "tool"
  end
  return s.phase
end

--- Statusline text, e.g. "π idle", "π streaming", "π bash", "π approve edit?",
--- "π streaming (1 queued)".
---@return string
function M.text()
  local s = M.state
  local text
  if s.phase == "streaming" and #s.approvals > 0 then
    text = "π approve " .. s.approvals[1] .. "?"
    if #s.approvals > 1 then
      text = text .. " +" .. (#s.approvals - 1)
    end
  elseif s.phase == "streaming" and #s.order > 0 then
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
    s.phase, s.running, s.order, s.approvals, s.approval_ids = "idle", {}, {}, {}, {}
  elseif t == "tool_approval_request" then
    local request = ev.request or {}
    s.approval_ids[#s.approval_ids + 1] = request.toolCallId
    s.approvals[#s.approvals + 1] = request.toolName or "?"
  elseif t == "tool_approval_end" then
    for i, id in ipairs(s.approval_ids) do
      if id == ev.toolCallId then
        table.remove(s.approval_ids, i)
        table.remove(s.approvals, i)
        break
      end
    end
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

--- This chat's state, to keep while another chat is current (pi_rpc.chats).
function M.save()
  return M.state
end

---@param saved pi_rpc.Status?
function M.load(saved)
  M.state = saved or fresh("stopped")
end

--- Shows the current chat's state (after a switch).
function M.refresh()
  changed()
end

---@param phase "stopped"|"idle"
function M.reset(phase)
  M.state = fresh(phase)
  changed()
end

function M.is_streaming()
  return M.state.phase == "streaming"
end

return M
