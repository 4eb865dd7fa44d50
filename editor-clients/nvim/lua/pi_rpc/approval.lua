-- Approvals: the daemon asks (`approval/request`) before a tool runs; a float shows the diff or
-- the command with keys to allow, allow always or reject, and for a diff of several hunks a key
-- that keeps or rejects the hunk under the cursor (pi_rpc.hunks). The request's handler runs inside
-- vim.lsp.rpc's coroutine and yields until the user decides, so the answer goes back as the
-- response. Requests wait in arrival order; one float shows the first.
local config = require("pi_rpc.config")
local hunks = require("pi_rpc.hunks")
local util = require("pi_rpc.util")

local M = {}

---@class pi_rpc.Approval
---@field params table the request's params
---@field co thread the handler's coroutine, resumed with the response
---@field done boolean
---@field hunks pi_rpc.HunkChoice? the hunks kept so far, when the diff has several

local pending = {} ---@type pi_rpc.Approval[]
---@type {win: integer, buf: integer, entry: pi_rpc.Approval, prev: integer}?
local shown = nil

local diff = vim.text and vim.text.diff or vim.diff

--- This chat's waiting requests, to keep while another chat is current (pi_rpc.chats); the
--- float is hidden before the switch.
function M.save()
  return { pending = pending, shown = shown }
end

---@param saved table?
function M.load(saved)
  pending = saved and saved.pending or {}
  shown = saved and saved.shown or nil
end

-- A chat that is not current waits with its float until the user switches to it.
local function may_show()
  return not shown and not require("pi_rpc.chats").in_background()
end

--- The lines the float shows and their filetype: the diff of an edit or write, the command of
--- bash, else the path or the arguments.
---@param params table
---@return string[] lines, string filetype
function M.preview_lines(params)
  local preview = util.get(params, "preview") or {}
  local patch = util.get(preview, "patch")
  if type(patch) ~= "string" or patch == "" then
    local old, new = util.get(preview, "oldText"), util.get(preview, "newText")
    if type(old) == "string" and type(new) == "string" then
      patch = diff(old, new, { ctxlen = 3 }) --[[@as string]]
    end
  end
  if type(patch) == "string" and patch ~= "" then
    return vim.split((patch:gsub("\n$", "")), "\n", { plain = true }), "diff"
  end
  local command = util.get(preview, "command")
  if type(command) == "string" then
    return vim.split(command, "\n", { plain = true }), "sh"
  end
  local path = util.get(preview, "path")
  if type(path) == "string" then
    return { path }, "text"
  end
  return vim.split(vim.json.encode(util.get(params, "args") or {}), "\n", { plain = true }), "json"
end

local function keys()
  return config.options.keymaps.approval or {}
end

local function close_float()
  local s = shown
  shown = nil
  if s and vim.api.nvim_win_is_valid(s.win) then
    local focused = vim.api.nvim_get_current_win() == s.win
    vim.api.nvim_win_close(s.win, true)
    -- Back where the user was, unless they had already gone elsewhere (a cancelled request).
    if focused and vim.api.nvim_win_is_valid(s.prev) then
      vim.api.nvim_set_current_win(s.prev)
    end
  end
end

local show -- forward declaration: finishing one request shows the next

--- Ends a request: `result`/`err` are its response; `resume = false` drops it (daemon gone).
---@param entry pi_rpc.Approval
---@param result table? the approval/request result (`outcome`, the kept `hunks`)
---@param err table? a JSON-RPC error answered instead of a result
---@param resume boolean? false: the daemon is gone, nobody waits for the answer
local function finish(entry, result, err, resume)
  if entry.done then
    return
  end
  entry.done = true
  pending = vim.tbl_filter(function(e)
    return e ~= entry
  end, pending)
  if shown and shown.entry == entry then
    close_float()
  end
  if resume ~= false then
    local ok, msg = coroutine.resume(entry.co, result, err)
    if not ok then
      util.notify("answering an approval failed: " .. tostring(msg), vim.log.levels.ERROR)
    end
  end
  if pending[1] and may_show() then
    show(pending[1])
  end
end

--- Answers the request the float shows: "allow", "allowAlways" or "reject" (asks for a reason).
---@param outcome "allow"|"allowAlways"|"reject"
function M.decide(outcome)
  local entry = shown and shown.entry or pending[1]
  if not entry then
    return
  end
  if outcome ~= "reject" then
    -- Only the kept hunks are applied; naming none rejects the call, with the hunks for the agent.
    finish(entry, { outcome = outcome, hunks = hunks.answer(entry.hunks) })
    return
  end
  vim.ui.input({ prompt = "Reason for the agent (optional): " }, function(reason)
    if reason == nil then
      return -- the prompt was cancelled: the request still waits
    end
    local result = { outcome = "reject" }
    if vim.trim(reason) ~= "" then
      result.reason = reason
    end
    finish(entry, result)
  end)
end

local function footer(entry)
  local k = keys()
  local parts = {}
  local function add(lhs, what)
    if lhs then
      parts[#parts + 1] = lhs .. " " .. what
    end
  end
  if entry.hunks then
    add(k.toggle_hunk, ("keep/reject hunk (%d of %d kept)"):format(hunks.count(entry.hunks)))
  end
  add(k.allow, entry.hunks and "allow kept" or "allow")
  add(k.allow_always, "always (" .. (util.get(entry.params, "suggestedRule") or "this tool") .. ")")
  add(k.reject, "reject")
  add(k.hide, "later")
  local text = " " .. table.concat(parts, " · ") .. " "
  if #pending > 1 then
    text = text .. ("(1 of %d) "):format(#pending)
  end
  return text
end

---@param entry pi_rpc.Approval
show = function(entry)
  if shown then
    close_float()
  end
  local lines, filetype = M.preview_lines(entry.params)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].filetype = filetype
  if entry.hunks == nil and filetype == "diff" then
    entry.hunks = hunks.choice(entry.params, lines) -- kept across hiding and showing again
  end
  local width = 20
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  local foot = footer(entry)
  width = math.min(math.max(width, vim.fn.strdisplaywidth(foot)) + 1, math.floor(vim.o.columns * 0.9))
  local height = math.max(1, math.min(#lines, math.floor(vim.o.lines * 0.6)))
  local title = util.get(entry.params, "title") or util.get(entry.params, "toolName") or "approve?"
  local prev = vim.api.nvim_get_current_win()
  if vim.fn.mode() ~= "n" then
    vim.cmd("stopinsert")
  end
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1),
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    width = width,
    height = height,
    style = "minimal",
    border = "rounded",
    title = " " .. title .. " ",
    title_pos = "center",
    footer = foot,
    footer_pos = "center",
  })
  vim.wo[win].wrap = false
  shown = { win = win, buf = buf, entry = entry, prev = prev }
  local k = keys()
  local function map(lhs, fn, desc)
    if lhs then
      vim.keymap.set("n", lhs, fn, { buffer = buf, nowait = true, silent = true, desc = desc })
    end
  end
  map(k.allow, function()
    M.decide("allow")
  end, "pi-rpc: allow this call")
  map(k.allow_always, function()
    M.decide("allowAlways")
  end, "pi-rpc: allow this and similar calls for the session")
  map(k.reject, function()
    M.decide("reject")
  end, "pi-rpc: reject this call, with a reason")
  map(k.hide, M.hide, "pi-rpc: hide; :PiApproval shows it again")
  if entry.hunks then
    map(k.toggle_hunk, M.toggle_hunk, "pi-rpc: keep or reject the hunk under the cursor")
    hunks.render(entry.hunks, buf, k.toggle_hunk)
  end
  -- Closed by any other means (:q, <C-w>o): the request keeps waiting, in the statusline.
  vim.api.nvim_create_autocmd("WinClosed", {
    pattern = tostring(win),
    once = true,
    callback = function()
      if shown and shown.win == win then
        shown = nil
      end
    end,
  })
end

--- Keeps or rejects the hunk under the cursor of the float (the float's `t`); outside the float,
--- nothing.
function M.toggle_hunk()
  local s = shown
  if not (s and s.entry.hunks and vim.api.nvim_win_is_valid(s.win)) then
    return
  end
  if vim.api.nvim_get_current_win() ~= s.win then
    util.notify("put the cursor on a hunk in the approval float first")
    return
  end
  hunks.toggle(s.entry.hunks, vim.api.nvim_win_get_cursor(s.win)[1])
  hunks.render(s.entry.hunks, s.buf, keys().toggle_hunk)
  vim.api.nvim_win_set_config(s.win, { footer = footer(s.entry), footer_pos = "center" })
end

--- Hides the float; the request keeps waiting (the statusline says so, :PiApproval shows it).
function M.hide()
  close_float()
end

--- :PiApproval: shows the first waiting request again.
function M.show()
  if pending[1] then
    show(pending[1])
  else
    util.notify("no tool call waits for approval")
  end
end

--- The `approval/request` handler: yields until the user decides (or the request is cancelled).
--- A request of a chat that is not current waits in that chat, and a message says so.
---@param params table
---@param owner pi_rpc.ChatRecord? the chat whose daemon asks (nil: the current one)
function M.request(params, owner)
  local co, is_main = coroutine.running()
  if not co or is_main then
    local code = vim.lsp.protocol.ErrorCodes.InternalError
    return nil, vim.lsp.rpc.rpc_response_error(code, "not in a coroutine")
  end
  local entry = { params = params, co = co, done = false }
  -- Only the queueing runs within the owner's chat: the yield below must not hold it current.
  local chats = require("pi_rpc.chats")
  chats.within(owner, function()
    pending[#pending + 1] = entry
    if may_show() then
      show(pending[1])
    elseif shown and shown.entry ~= entry then
      vim.api.nvim_win_set_config(shown.win, { footer = footer(shown.entry), footer_pos = "center" })
    elseif chats.in_background() then
      util.notify(("chat #%d waits for approval of %s (:PiChats)"):format(
        chats.current().id,
        tostring(util.get(params, "toolName") or "a tool call")
      ))
    end
  end)
  return coroutine.yield()
end

local function cancel(entry)
  local code = vim.lsp.protocol.ErrorCodes.RequestCancelled
  finish(entry, nil, vim.lsp.rpc.rpc_response_error(code, "cancelled"))
end

--- Daemon events: `tool_approval_end` for a request still open means it was cancelled (an
--- abort, a timeout) or answered elsewhere: its float closes. A run's end closes them all.
---@param ev table
function M.on_event(ev)
  if ev.type == "tool_approval_end" then
    for _, entry in ipairs(pending) do
      if util.get(entry.params, "toolCallId") == ev.toolCallId then
        cancel(entry)
        return
      end
    end
  elseif ev.type == "agent_end" then
    for _, entry in ipairs(vim.list_slice(pending)) do
      cancel(entry)
    end
  end
end

--- The daemon is gone: nobody waits for an answer any more.
function M.drop_all()
  for _, entry in ipairs(vim.list_slice(pending)) do
    finish(entry, nil, nil, false)
  end
end

--- The waiting requests' params, first shown first (for tests and statuslines).
---@return table[]
function M.pending()
  return vim.tbl_map(function(e)
    return e.params
  end, pending)
end

--- The float's window while one shows.
---@return integer?
function M.float_win()
  return shown and shown.win or nil
end

return M
