-- How much of the model's context window the session fills, from `session/stats`'
-- `contextUsage`, asked again after each run, compaction, session switch and daemon start. The
-- chat window's winbar shows it next to the agent's state; statuslines can too.
local M = {}

---@class pi_rpc.ContextUsage
---@field tokens integer? nil right after a compaction, until the next reply
---@field contextWindow integer
---@field percent number?

---@type pi_rpc.ContextUsage?
M.current = nil

-- Events after which the share has changed.
local REFRESH_ON = { agent_end = true, compaction_end = true }

---@param n integer
---@return string
local function short(n)
  if n >= 1000000 then
    return (("%.1fM"):format(n / 1000000):gsub("%.0M$", "M"))
  elseif n >= 1000 then
    return ("%dk"):format(math.floor(n / 1000 + 0.5))
  end
  return tostring(n)
end

--- "context 12% of 200k", "context ? of 200k" after a compaction, "" without a model.
---@return string
function M.text()
  local u = M.current
  if not u or type(u.contextWindow) ~= "number" then
    return ""
  end
  local share = type(u.percent) == "number" and ("%d%%"):format(math.floor(u.percent + 0.5)) or "?"
  return ("context %s of %s"):format(share, short(u.contextWindow))
end

--- Shows the current chat's share (after a change, or a switch of chats).
function M.show()
  if require("pi_rpc.chats").in_background() then
    return -- the winbar shows the current chat
  end
  vim.g.pi_rpc_context = M.text()
  vim.api.nvim_exec_autocmds("User", { pattern = "PiRpcContext", modeline = false })
  vim.cmd("redrawstatus!") -- winbars too
end

--- Asks the daemon for the session's stats and shows the share they carry.
function M.refresh()
  local daemon = require("pi_rpc.daemon")
  if not daemon.is_ready() then
    return -- a daemon not started has no session to measure
  end
  daemon.request("session/stats", nil, function(err, stats)
    if err or type(stats) ~= "table" then
      return
    end
    local u = stats.contextUsage
    M.current = type(u) == "table" and vim.tbl_map(function(v)
      return v ~= vim.NIL and v or nil
    end, u) or nil
    M.show()
  end)
end

--- Called with every daemon event.
---@param ev table
function M.on_event(ev)
  if REFRESH_ON[ev.type] then
    M.refresh()
  end
end

--- The chat window's winbar: the agent's state and the context share, e.g.
--- "π idle · context 12% of 200k".
---@return string
function M.winbar()
  local parts = { require("pi_rpc.status").text() }
  local text = M.text()
  if text ~= "" then
    parts[#parts + 1] = text
  end
  return (table.concat(parts, " · "):gsub("%%", "%%%%"))
end

--- This chat's share, kept while another chat is current (pi_rpc.chats).
function M.save()
  return { current = M.current }
end

---@param saved table?
function M.load(saved)
  M.current = saved and saved.current or nil
end

return M
