-- The conversation back after Neovim restarts: the first daemon this Neovim starts continues the
-- folder's newest stored session (`resume_last`), and the chat shows it as it was stored. Only
-- that first start: :PiNew, :PiChat new and later chats are new sessions by request.
local config = require("pi_rpc.config")

local M = {}

local decided = false

--- No session is to be continued by this Neovim any more (a new one was asked for).
function M.skip()
  decided = true
end

--- Whether the next daemon start would continue the folder's last session.
---@return boolean
function M.pending()
  return not decided and config.options.resume_last ~= false
end

---@param s table a `session/list` entry
---@return string
local function described(s)
  local pickers = require("pi_rpc.pickers")
  local when, title = pickers.session_when(s), pickers.session_title(s)
  return ("_Continued the last session of this folder (%s): %s_"):format(when, title)
end

--- A step of the daemon's start-up, run before any queued request goes out (so a prompt typed
--- meanwhile goes on in the continued session): lists the folder's sessions, continues the newest
--- and replays it in the chat, then calls `done`. `send` sends a request at once.
---@param send fun(method: string, params: table?, cb: fun(err: table?, result: any))
---@param done fun()
function M.step(send, done)
  if not M.pending() then
    return done()
  end
  decided = true
  send("session/list", nil, function(err, listed)
    local newest = not err and type(listed) == "table" and (listed.sessions or {})[1] or nil
    if not newest then
      return done()
    end
    send("session/load", { sessionId = newest.sessionId }, function(lerr, loaded)
      if lerr or type(loaded) ~= "table" then
        return done()
      end
      require("pi_rpc.daemon").session_id = loaded.sessionId
      send("messages", nil, function(merr, m)
        if not merr and type(m) == "table" then
          local chat = require("pi_rpc.chat")
          chat.replay(m.messages or {})
          chat.note(described(newest))
        end
        done()
      end)
    end)
  end)
end

return M
