-- pi_rpc.nvim: the Pi coding agent in Neovim, through the pi-rpc daemon.
local config = require("pi_rpc.config")
local daemon = require("pi_rpc.daemon")
local status = require("pi_rpc.status")
local util = require("pi_rpc.util")

local M = {}

local wired = false

-- Route daemon events to the chat buffer and the statusline, once.
local function wire()
  if wired then
    return
  end
  wired = true
  local approval = require("pi_rpc.approval")
  local files = require("pi_rpc.files")
  daemon.on_request("approval/request", approval.request)
  require("pi_rpc.chats").setup()
  daemon.on_request("fs/readTextFile", files.read_text_file)
  daemon.on_request("fs/writeTextFile", files.write_text_file)
  daemon.on_event(function(ev)
    status.apply(ev)
    require("pi_rpc.usage").on_event(ev)
    approval.on_event(ev)
    require("pi_rpc.reload").on_event(ev)
    require("pi_rpc.chat").push(ev)
  end)
  daemon.on_lifecycle(function(what, detail)
    if what == "died" or what == "stopped" then
      approval.drop_all()
    end
    if what == "ready" then
      status.reset("idle")
      require("pi_rpc.usage").refresh()
    elseif what == "died" then
      status.reset("stopped")
      require("pi_rpc.chat").interrupt(detail)
    elseif what == "resumed" then
      require("pi_rpc.chat").note("_The daemon was restarted; the conversation goes on._")
    elseif what == "failed" then
      status.reset("stopped")
      require("pi_rpc.chat").note("**Error:** cannot start the daemon: " .. detail)
    elseif what == "stopped" then
      status.reset("stopped")
    end
  end)
end

local function set_global_keymaps(keys)
  local function map(mode, lhs, rhs, desc)
    if lhs then
      vim.keymap.set(mode, lhs, rhs, { desc = desc, silent = true })
    end
  end
  map("n", keys.prompt, function()
    M.open_input("prompt")
  end, "pi-rpc: prompt")
  map("x", keys.send_selection, ":PiPrompt<CR>", "pi-rpc: prompt about the selection")
  map("n", keys.abort, M.abort, "pi-rpc: abort")
  map("n", keys.toggle_chat, M.toggle_chat, "pi-rpc: toggle the chat")
  map("n", keys.rewind, function()
    M.rewind()
  end, "pi-rpc: rewind to before an earlier prompt")
end

--- Configure the plugin (optional: commands work with the defaults).
---@param opts table?
function M.setup(opts)
  local o = config.setup(opts)
  wire()
  set_global_keymaps(o.keymaps or {})
end

local function open_chat()
  if config.options.chat.auto_open then
    require("pi_rpc.window").open_chat(false)
  end
end

-- The last prompt sent, for :PiEdit.
local last_prompt = nil ---@type string?

--- This chat's last prompt, kept while another chat is current (pi_rpc.chats).
function M.save()
  return { last_prompt = last_prompt }
end

---@param saved table?
function M.load(saved)
  last_prompt = saved and saved.last_prompt or nil
end

--- Sends a prompt; while a run is going it is queued per `while_streaming`.
---@param text string
---@param cb fun(err: table?, result: table?)?
function M.prompt(text, cb)
  wire()
  open_chat()
  last_prompt = text
  require("pi_rpc.chats").note_prompt(text)
  local params = { message = text, streamingBehavior = config.options.while_streaming }
  local chat = require("pi_rpc.chat")
  local epoch = chat.epoch()
  daemon.request("prompt", params, function(err, result)
    local same_chat = chat.epoch() == epoch -- not emptied by :PiNew since
    if err then
      util.notify("prompt failed: " .. tostring(err.message), vim.log.levels.ERROR)
      -- A run that never started (no model configured, say) leaves the chat otherwise silent.
      if same_chat and err.code ~= -32800 and not tostring(err.message):find("exited unexpectedly", 1, true) then
        chat.note("**Error:** " .. tostring(err.message))
      end
    elseif result and result.queued then
      util.notify(("queued as %s"):format(result.queued == "steer" and "steering" or "a follow-up"))
    elseif result and same_chat then
      chat.run_ended(result)
    end
    if cb then
      cb(err, result)
    end
  end)
end

local function queue(method, text)
  wire()
  open_chat()
  daemon.request(method, { message = text }, function(err)
    if err then
      util.notify(method .. " failed: " .. tostring(err.message), vim.log.levels.ERROR)
    end
  end)
end

--- Queues a steering message (delivered after the current tool batch).
function M.steer(text)
  queue("steer", text)
end

--- Queues a follow-up (delivered when the agent would otherwise stop).
function M.follow_up(text)
  queue("followUp", text)
end

--- Aborts the run; the daemon kills what the tools started.
---@param cb fun()?
function M.abort(cb)
  if not daemon.is_running() then
    if cb then
      cb()
    end
    return
  end
  daemon.request("abort", nil, function(err)
    if err then
      util.notify("abort failed: " .. tostring(err.message), vim.log.levels.ERROR)
    end
    if cb then
      cb()
    end
  end)
end

--- A new session: `session/new` aborts any run and empties the transcript; the daemon stays.
--- A daemon that is not running is simply (re)started, which is a new session too.
---@param cb fun()?
function M.new_session(cb)
  wire()
  local chat = require("pi_rpc.chat")
  chat.clear()
  require("pi_rpc.resume").skip() -- a new session, not the folder's last one
  if not daemon.is_running() then
    status.reset("stopped")
    daemon.restart(cb)
    return
  end
  -- session/new aborts the run first; that run's last events arrive before its answer and
  -- belong to the conversation just closed.
  chat.discard()
  daemon.request("session/new", vim.empty_dict(), function(err, result)
    chat.accept()
    if err then
      util.notify("new session failed: " .. tostring(err.message), vim.log.levels.ERROR)
    else
      daemon.session_id = util.get(result, "sessionId")
    end
    if cb then
      cb()
    end
  end)
end

--- Markdown context for lines `l1`..`l2` of the current buffer: file, range and the text.
---@param l1 integer
---@param l2 integer
---@param buf integer?
---@return string[]
function M.selection_context(l1, l2, buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(buf)
  local path = name ~= "" and vim.fn.fnamemodify(name, ":.") or "[No Name]"
  local text = vim.api.nvim_buf_get_lines(buf, l1 - 1, l2, false)
  local fence = require("pi_rpc.format").fence(table.concat(text, "\n"))
  local lines = { ("From `%s`, lines %d-%d:"):format(path, l1, l2), fence .. (vim.bo[buf].filetype or "") }
  vim.list_extend(lines, text)
  lines[#lines + 1] = fence
  return lines
end

--- :PiPrompt [text] with an optional range: the range becomes context; no text opens the input.
---@param text string
---@param l1 integer?
---@param l2 integer?
function M.prompt_command(text, l1, l2)
  local context = l1 and M.selection_context(l1, l2) or nil
  if text == "" then
    M.open_input("prompt", context)
    return
  end
  if context then
    text = table.concat(context, "\n") .. "\n\n" .. text
  end
  M.prompt(text)
end

---@param mode "prompt"|"steer"|"followUp"
---@param prefill string[]?
function M.open_input(mode, prefill)
  wire()
  daemon.ensure() -- start the daemon while the user types
  open_chat()
  return require("pi_rpc.input").open(mode, prefill)
end

function M.toggle_chat()
  wire()
  require("pi_rpc.window").toggle_chat()
  if require("pi_rpc.resume").pending() then
    daemon.ensure() -- the daemon's start brings the folder's last conversation back
  end
end

--- :PiChat new: a new chat with its own daemon, shown in the chat window.
function M.new_chat()
  wire()
  require("pi_rpc.resume").skip()
  require("pi_rpc.chats").new()
  require("pi_rpc.window").open_chat(true)
end

--- :PiChats: pick one of the open chats (or a new one).
function M.pick_chat()
  wire()
  require("pi_rpc.chats").pick()
end

--- :PiChat close [n]: close the current chat (or number n) and stop its daemon.
---@param id integer?
function M.close_chat(id)
  wire()
  require("pi_rpc.chats").close_id(id)
end

--- :PiChat {n}: switch to chat number n.
---@param id integer
function M.switch_chat(id)
  wire()
  require("pi_rpc.chats").switch(id)
end

--- :PiTools [name]: pick a tool to toggle, or toggle `name`.
function M.tools(name)
  wire()
  if name and name ~= "" then
    require("pi_rpc.pickers").toggle_tool(name)
  else
    require("pi_rpc.pickers").tools()
  end
end

--- :PiModel [provider/model]
function M.model(spec)
  wire()
  if spec and spec ~= "" then
    require("pi_rpc.pickers").set_model(spec)
  else
    require("pi_rpc.pickers").models()
  end
end

--- :PiSessions: resume a stored session of this workspace.
function M.sessions()
  wire()
  require("pi_rpc.pickers").sessions()
end

--- :PiName [name]: name the session (kept in its file); :PiSessions lists it by that name.
--- Without a name, asks for one with the current name filled in.
---@param name string
function M.name_session(name)
  wire()
  if vim.trim(name) == "" then
    daemon.request("state", nil, function(_, state)
      local current = util.get(state, "sessionName")
      vim.ui.input({ prompt = "Session name: ", default = type(current) == "string" and current or "" }, function(input)
        if input and vim.trim(input) ~= "" then
          M.name_session(input)
        end
      end)
    end)
    return
  end
  daemon.request("session/setName", { name = name }, function(err, result)
    if err then
      util.notify("session/setName failed: " .. tostring(err.message), vim.log.levels.ERROR)
    else
      util.notify(("session named %q"):format(result.name))
    end
  end)
end

--- :PiEdit: the input prefilled with the last prompt, to change and send again.
function M.edit_last()
  if not last_prompt then
    util.notify("no prompt sent yet", vim.log.levels.WARN)
    return
  end
  M.open_input("prompt", vim.split(last_prompt, "\n", { plain = true }))
end

--- :PiRewind: back to before an earlier prompt (files, conversation, both, or edit and resend).
---@param cb fun(result: table?)?
function M.rewind(cb)
  wire()
  require("pi_rpc.rewind").pick(nil, cb)
end

--- :PiEditPrompt: pick an earlier prompt; files and conversation go back to before it and the
--- input opens with its text, to change and send again.
---@param cb fun(result: table?)?
function M.edit_prompt(cb)
  wire()
  require("pi_rpc.rewind").pick("edit", cb)
end

--- <Plug>(pi-rpc-send): sends the input from its buffer; elsewhere opens it.
function M.send()
  if not require("pi_rpc.input").submit() then
    M.open_input("prompt")
  end
end

--- <Plug>(pi-rpc-focus-chat): opens the chat if needed and puts the cursor in it.
function M.focus_chat()
  wire()
  require("pi_rpc.window").open_chat(true)
end

--- :PiThinking [level]: set the thinking level (the daemon clamps it to what the model has).
---@param level string
function M.thinking(level)
  wire()
  if level == "" then
    local levels = { "off", "minimal", "low", "medium", "high", "xhigh" }
    vim.ui.select(levels, { prompt = "Thinking level" }, function(choice)
      if choice then
        M.thinking(choice)
      end
    end)
    return
  end
  daemon.request("thinking/set", { level = level }, function(err, result)
    if err then
      util.notify("thinking/set failed: " .. tostring(err.message), vim.log.levels.ERROR)
    else
      util.notify(("thinking: %s (this model has: %s)"):format(
        result.level,
        table.concat(result.available or {}, ", ")
      ))
    end
  end)
end

local POLICIES = { "ask", "acceptEdits", "auto", "readOnly" }

--- :PiPolicy [policy]: how the agent asks before acting (ask, acceptEdits, auto, readOnly).
---@param policy string
function M.policy(policy)
  wire()
  if policy == "" then
    local current = daemon.policy or util.get(daemon.info, "approvalPolicy")
    local prompt = "Approval policy" .. (current and (" (now " .. current .. ")") or "")
    vim.ui.select(POLICIES, { prompt = prompt }, function(choice)
      if choice then
        M.policy(choice)
      end
    end)
    return
  end
  daemon.request("approval/setPolicy", { policy = policy }, function(err, result)
    if err then
      util.notify("approval/setPolicy failed: " .. tostring(err.message), vim.log.levels.ERROR)
      return
    end
    daemon.policy = result.policy
    if daemon.info then
      daemon.info.approvalPolicy = result.policy
    end
    util.notify("approval policy: " .. result.policy)
  end)
end

--- :PiApproval: shows the tool call that waits for approval again (after `q` hid it).
function M.approval()
  wire()
  require("pi_rpc.approval").show()
end

--- :PiStats: token use and cost of the session.
function M.stats()
  wire()
  daemon.request("session/stats", nil, function(err, s)
    if err then
      util.notify("session/stats failed: " .. tostring(err.message), vim.log.levels.ERROR)
      return
    end
    local t = s.tokens or {}
    util.notify(
      ("%d messages, %d tool calls; tokens in %d, out %d, cache read %d, write %d; cost $%.4f"):format(
        s.totalMessages or 0,
        s.toolCalls or 0,
        t.input or 0,
        t.output or 0,
        t.cacheRead or 0,
        t.cacheWrite or 0,
        tonumber(s.cost) or 0
      )
    )
  end)
end

--- :PiCompact [instructions]: the model summarises the older turns and the recent ones stay
--- verbatim, making room in the context window; the chat notes it and the winbar's share drops.
---@param instructions string
function M.compact(instructions)
  wire()
  local params = vim.trim(instructions) ~= "" and { customInstructions = instructions } or vim.empty_dict()
  util.notify("compacting the conversation…")
  daemon.request("compact", params, function(err, result)
    if err then
      util.notify("compact failed: " .. tostring(err.message), vim.log.levels.ERROR)
      return
    end
    local tokens = result.tokensBefore or 0
    require("pi_rpc.chat").note(("_Earlier conversation summarised (%d tokens before)._"):format(tokens))
  end)
end

--- :PiClearQueue: drop the queued steering and follow-up messages.
function M.clear_queue()
  if not daemon.is_running() then
    return
  end
  daemon.request("clearQueue", nil, function(err, removed)
    if err then
      util.notify("clearQueue failed: " .. tostring(err.message), vim.log.levels.ERROR)
    else
      local n = #(removed.steering or {}) + #(removed.followUp or {})
      util.notify(("removed %d queued %s"):format(n, n == 1 and "message" or "messages"))
    end
  end)
end

function M.open_log()
  require("pi_rpc.window").open_file(daemon.log_path())
end

--- Statusline component: "π idle", "π streaming", "π bash" (the running tool), "π approve
--- edit?" (a call waits for the user), "π stopped".
---@return string
function M.statusline()
  return status.text()
end

--- Statusline component: the share of the model's context window the session fills,
--- "context 12% of 200k" ("" before the daemon reports it).
---@return string
function M.context_usage()
  return require("pi_rpc.usage").text()
end

return M
