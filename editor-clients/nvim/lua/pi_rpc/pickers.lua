-- :PiTools and :PiModel: vim.ui.select over tools/list and models/list, so Telescope,
-- fzf-lua or dressing.nvim take over when the user has them.
local daemon = require("pi_rpc.daemon")
local util = require("pi_rpc.util")

local M = {}

local function fail(what, err)
  util.notify(what .. " failed: " .. tostring(err and err.message or err), vim.log.levels.ERROR)
end

--- Toggles one tool on or off; `cb(active_names)` runs with the daemon's answer.
---@param name string
---@param cb fun(active: string[])?
function M.toggle_tool(name, cb)
  daemon.request("tools/list", nil, function(err, result)
    if err then
      return fail("tools/list", err)
    end
    local active, known = {}, false
    for _, tool in ipairs(result.tools or {}) do
      local on = tool.active == true
      if tool.name == name then
        known = true
        on = not on
      end
      if on then
        active[#active + 1] = tool.name
      end
    end
    if not known then
      util.notify("unknown tool: " .. name, vim.log.levels.WARN)
      return
    end
    daemon.request("tools/setActive", { names = active }, function(serr, set)
      if serr then
        return fail("tools/setActive", serr)
      end
      local now = set.active or {}
      local on = vim.tbl_contains(now, name)
      util.notify(("%s %s (active: %s)"):format(name, on and "on" or "off", table.concat(now, ", ")))
      if cb then
        cb(now)
      end
    end)
  end)
end

--- Lists every registered tool with its state; choosing one toggles it.
function M.tools()
  daemon.request("tools/list", nil, function(err, result)
    if err then
      return fail("tools/list", err)
    end
    vim.ui.select(result.tools or {}, {
      prompt = "Toggle a tool",
      format_item = function(tool)
        local desc = (tool.description or ""):match("^[^\n.]*") or ""
        return ("[%s] %-10s %s"):format(tool.active and "x" or " ", tool.name, desc)
      end,
    }, function(tool)
      if tool then
        M.toggle_tool(tool.name)
      end
    end)
  end)
end

---@param spec string "provider/modelId"
---@param cb fun(model: table)?
function M.set_model(spec, cb)
  local provider, model_id = spec:match("^([^/]+)/(.+)$")
  if not provider then
    util.notify("expected provider/model, got " .. spec, vim.log.levels.WARN)
    return
  end
  daemon.request("model/set", { provider = provider, modelId = model_id }, function(err, model)
    if err then
      return fail("model/set", err)
    end
    if daemon.info then
      daemon.info.model = model
    end
    util.notify(("model: %s/%s"):format(model.provider, model.id))
    if cb then
      cb(model)
    end
  end)
end

--- Picks a model from models/list.
function M.models()
  daemon.request("models/list", nil, function(err, result)
    if err then
      return fail("models/list", err)
    end
    local current = daemon.info and daemon.info.model or {}
    vim.ui.select(result.models or {}, {
      prompt = "Model",
      format_item = function(m)
        local mark = (m.provider == current.provider and m.id == current.id) and "* " or "  "
        return mark .. m.provider .. "/" .. m.id .. (m.name and m.name ~= m.id and ("  " .. m.name) or "")
      end,
    }, function(m)
      if m then
        M.set_model(m.provider .. "/" .. m.id)
      end
    end)
  end)
end

--- When a `session/list` entry was last changed, in local time ("2026-12-02 08:24"); the
--- daemon gives it in UTC ("2026-12-02T07:24:16.1+00:00").
---@param s table
---@return string
function M.session_when(s)
  local y, mo, d, h, mi, sec = tostring(s.modified or ""):match("^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)")
  if not y then
    return ""
  end
  local as_local = os.time({ year = y, month = mo, day = d, hour = h, min = mi, sec = sec })
  local offset = os.time() - os.time(os.date("!*t") --[[@as osdateparam]])
  return os.date("%Y-%m-%d %H:%M", as_local + offset) --[[@as string]]
end

--- A `session/list` entry's title: its name (session/setName, Pi's /name), else its first prompt.
---@param s table
---@return string
function M.session_title(s)
  local title = s.name ~= vim.NIL and s.name or s.firstMessage or ""
  return vim.trim((tostring(title):gsub("\n", " "))):sub(1, 60)
end

--- Picks a stored session of this workspace (newest first) and continues it.
---@param cb fun(loaded: table)?
function M.sessions(cb)
  daemon.request("session/list", nil, function(err, result)
    if err then
      return fail("session/list", err)
    end
    local sessions = result.sessions or {}
    if #sessions == 0 then
      util.notify("no stored sessions for this workspace")
      return
    end
    vim.ui.select(sessions, {
      prompt = "Resume a session",
      format_item = function(s)
        return ("%s  %3d msgs  %s"):format(M.session_when(s), s.messageCount or 0, M.session_title(s))
      end,
    }, function(s)
      if not s then
        return
      end
      -- Loading aborts any run: its last events belong to the chat being replaced.
      require("pi_rpc.chat").discard()
      daemon.request("session/load", { sessionId = s.sessionId }, function(lerr, loaded)
        require("pi_rpc.chat").accept()
        if lerr then
          return fail("session/load", lerr)
        end
        M.show_session(loaded.sessionId, function()
          util.notify(("resumed session with %d messages"):format(loaded.messageCount or 0))
          if cb then
            cb(loaded)
          end
        end)
      end)
    end)
  end)
end

--- The daemon now holds session `session_id` (loaded, or forked by a rewind): the chat shows its
--- conversation as it is stored, then `cb()` runs.
---@param session_id string
---@param cb fun()?
function M.show_session(session_id, cb)
  daemon.session_id = session_id
  daemon.request("messages", nil, function(err, m)
    if err then
      return fail("messages", err)
    end
    require("pi_rpc.chat").replay(m.messages or {})
    require("pi_rpc.usage").refresh() -- another conversation fills another share
    if cb then
      cb()
    end
  end)
end

return M
