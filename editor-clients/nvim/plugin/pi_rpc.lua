-- Commands and the exit hook; everything else loads on first use.
if vim.g.loaded_pi_rpc then
  return
end
vim.g.loaded_pi_rpc = true

if vim.fn.has("nvim-0.11") ~= 1 then
  vim.notify("pi-rpc needs Neovim 0.11 or newer", vim.log.levels.ERROR)
  return
end

local function pi()
  return require("pi_rpc")
end

local command = vim.api.nvim_create_user_command

command("PiPrompt", function(a)
  if a.range > 0 then
    pi().prompt_command(a.args, a.line1, a.line2)
  else
    pi().prompt_command(a.args)
  end
end, { nargs = "*", range = true, desc = "pi-rpc: send a prompt (a range adds those lines as context)" })

command("PiSteer", function(a)
  if a.args == "" then
    pi().open_input("steer")
  else
    pi().steer(a.args)
  end
end, { nargs = "*", desc = "pi-rpc: steer the running agent" })

command("PiFollowUp", function(a)
  if a.args == "" then
    pi().open_input("followUp")
  else
    pi().follow_up(a.args)
  end
end, { nargs = "*", desc = "pi-rpc: queue a follow-up" })

command("PiAbort", function()
  pi().abort()
end, { desc = "pi-rpc: abort the run" })

command("PiTools", function(a)
  pi().tools(a.args)
end, {
  nargs = "?",
  desc = "pi-rpc: list tools and toggle one",
  complete = function()
    return { "read", "bash", "edit", "write", "grep", "find", "ls", "powershell" }
  end,
})

command("PiModel", function(a)
  pi().model(a.args)
end, { nargs = "?", desc = "pi-rpc: choose the model (provider/model)" })

command("PiSessions", function()
  pi().sessions()
end, { desc = "pi-rpc: resume a stored session of this workspace" })

command("PiName", function(a)
  pi().name_session(a.args)
end, { nargs = "?", desc = "pi-rpc: name the session (:PiSessions lists it by its name)" })

command("PiNew", function()
  pi().new_session()
end, { desc = "pi-rpc: new session (aborts any run)" })

command("PiChat", function(a)
  if a.args == "new" then
    pi().new_chat()
  elseif a.args:match("^close") then
    pi().close_chat(tonumber(a.args:match("^close%s+(%d+)$")))
  elseif a.args:match("^%d+$") then
    pi().switch_chat(tonumber(a.args))
  elseif a.args == "" then
    pi().toggle_chat()
  else
    vim.notify("pi-rpc: :PiChat [new|close [n]|{n}]", vim.log.levels.ERROR)
  end
end, {
  nargs = "?",
  desc = "pi-rpc: toggle the chat window; `new`: a new chat; `close [n]`: close one; {n}: switch to chat n",
  complete = function()
    return { "new", "close" }
  end,
})

command("PiChats", function()
  pi().pick_chat()
end, { desc = "pi-rpc: pick one of the open chats" })

command("PiEdit", function()
  pi().edit_last()
end, { desc = "pi-rpc: edit the last prompt and send it again" })

command("PiRewind", function()
  pi().rewind()
end, { desc = "pi-rpc: back to before an earlier prompt: files, conversation, both, or edit and resend" })

command("PiEditPrompt", function()
  pi().edit_prompt()
end, { desc = "pi-rpc: edit an earlier prompt and send it again (files and conversation go back)" })

command("PiThinking", function(a)
  pi().thinking(a.args)
end, {
  nargs = "?",
  desc = "pi-rpc: set the thinking level",
  complete = function()
    return { "off", "minimal", "low", "medium", "high", "xhigh" }
  end,
})

command("PiPolicy", function(a)
  pi().policy(a.args)
end, {
  nargs = "?",
  desc = "pi-rpc: approval policy (ask, acceptEdits, auto, readOnly)",
  complete = function()
    return { "ask", "acceptEdits", "auto", "readOnly" }
  end,
})

command("PiApproval", function()
  pi().approval()
end, { desc = "pi-rpc: show the tool call waiting for approval" })

command("PiStats", function()
  pi().stats()
end, { desc = "pi-rpc: token use and cost of the session" })

command("PiCompact", function(a)
  pi().compact(a.args)
end, { nargs = "?", desc = "pi-rpc: summarise the older turns to free context (optional instructions)" })

command("PiClearQueue", function()
  pi().clear_queue()
end, { desc = "pi-rpc: drop queued steering and follow-up messages" })

command("PiLog", function()
  pi().open_log()
end, { desc = "pi-rpc: open the daemon's log" })

-- <Plug> mappings for every action worth a key, so users bind their own (:help pi-rpc-plug):
-- name, modes, what it does, and the module function it calls (with its one argument).
local PLUGS = {
  { "focus-chat", "n", "focus the chat", "pi_rpc", "focus_chat" },
  { "toggle-chat", "n", "toggle the chat", "pi_rpc", "toggle_chat" },
  { "prompt", "n", "open the prompt input", "pi_rpc", "open_input", "prompt" },
  { "send", { "n", "i" }, "send the input (elsewhere: open it)", "pi_rpc", "send" },
  { "stop", "n", "stop the run", "pi_rpc", "abort" },
  { "accept", "n", "allow the tool call waiting for approval", "pi_rpc.approval", "decide", "allow" },
  { "accept-always", "n", "allow it and calls like it for the session", "pi_rpc.approval", "decide", "allowAlways" },
  { "reject", "n", "reject the tool call waiting for approval", "pi_rpc.approval", "decide", "reject" },
  { "toggle-hunk", "n", "keep or reject the hunk under the cursor in the approval float", "pi_rpc.approval",
    "toggle_hunk" },
  { "next-card", "n", "next tool call in the chat", "pi_rpc.keys", "jump_card", 1 },
  { "prev-card", "n", "previous tool call in the chat", "pi_rpc.keys", "jump_card", -1 },
  { "rewind", "n", "rewind to before an earlier prompt", "pi_rpc", "rewind" },
  { "edit-prompt", "n", "edit an earlier prompt and send it again", "pi_rpc", "edit_prompt" },
}
for _, p in ipairs(PLUGS) do
  local name, modes, desc, module, fn, arg = unpack(p)
  vim.keymap.set(modes, "<Plug>(pi-rpc-" .. name .. ")", function()
    require(module)[fn](arg)
  end, { desc = "pi-rpc: " .. desc, silent = true })
end
vim.keymap.set("x", "<Plug>(pi-rpc-send-selection)", ":PiPrompt<CR>", {
  desc = "pi-rpc: prompt about the selection",
  silent = true,
})

vim.api.nvim_create_autocmd("VimLeavePre", {
  group = vim.api.nvim_create_augroup("pi_rpc", { clear = true }),
  desc = "pi-rpc: stop the daemon",
  callback = function()
    -- Only a daemon that was started needs stopping; don't load the plugin just to exit.
    local daemon = package.loaded["pi_rpc.daemon"]
    if daemon then
      require("pi_rpc.chats").each(daemon.stop_sync) -- each chat has its daemon
    end
  end,
})
