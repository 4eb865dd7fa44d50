-- Several chats, each with its own daemon, so two chats can run at the same time (one daemon
-- runs one agent loop; switching sessions inside one daemon would abort the other chat's run).
-- The modules below keep the current chat's state in their own variables; a chat that is not
-- current keeps it here. A daemon's callbacks run `within` their chat: its state swapped in,
-- the callback run, swapped out again, all synchronously, so nothing else sees the swap.
local config = require("pi_rpc.config")
local util = require("pi_rpc.util")

local M = {}

-- Each implements save() -> table and load(table?) (nil: a new chat's fresh state).
local MODULES = { "pi_rpc.daemon", "pi_rpc.chat", "pi_rpc.status", "pi_rpc.usage", "pi_rpc.approval", "pi_rpc" }

---@class pi_rpc.ChatRecord
---@field id integer shown in the picker and the statusline
---@field saved table<string, table>? the modules' state while this chat is not current
---@field first_prompt string? what the picker names the chat by
---@field tab integer? the tabpage the chat belongs to (chats.per_tab)

local records = {} ---@type pi_rpc.ChatRecord[]
local active = nil ---@type pi_rpc.ChatRecord?
local next_id = 1
local background = 0 -- depth of `within` calls for chats that are not current

local function save_all()
  local saved = {}
  for _, name in ipairs(MODULES) do
    saved[name] = require(name).save()
  end
  return saved
end

local function load_all(saved)
  for _, name in ipairs(MODULES) do
    require(name).load(saved and saved[name])
  end
end

local function new_record()
  local rec = { id = next_id }
  next_id = next_id + 1
  records[#records + 1] = rec
  return rec
end

--- The current chat (the first one is made on first use, holding the modules' initial state).
---@return pi_rpc.ChatRecord
function M.current()
  if active == nil then
    active = new_record()
    active.tab = vim.api.nvim_get_current_tabpage()
  end
  return active
end

--- True while a callback of a chat that is not current runs: floats and the statusline wait.
function M.in_background()
  return background > 0
end

--- Runs `fn` with `rec`'s state swapped in (at once when `rec` is current or gone).
---@param rec pi_rpc.ChatRecord?
---@param fn fun(): any
function M.within(rec, fn)
  local prev = M.current()
  if rec == nil or rec == prev or rec.saved == nil then
    return fn()
  end
  prev.saved = save_all()
  load_all(rec.saved)
  rec.saved = nil
  active = rec
  background = background + 1
  local ok, result = pcall(fn)
  background = background - 1
  rec.saved = save_all()
  load_all(prev.saved)
  prev.saved = nil
  active = prev
  if not ok then
    error(result, 0)
  end
  return result
end

-- Shows the current chat's buffer in the window of this tab that shows a chat, if any.
local function show_in_tab()
  local chat = require("pi_rpc.chat")
  local buf = chat.buf()
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local b = vim.api.nvim_win_get_buf(win)
    if b ~= buf and vim.b[b].pi_rpc_chat then
      vim.api.nvim_win_set_buf(win, buf)
      chat.refold(win)
      vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
    end
  end
end

--- Makes `rec` the current chat: :PiAbort, the statusline, the approval float and prompts act
--- on it from now on. `keep_windows`: leave the chat windows of this tab as they are.
---@param rec pi_rpc.ChatRecord
---@param keep_windows boolean?
function M.activate(rec, keep_windows)
  local prev = M.current()
  if rec == prev then
    return
  end
  local approval = require("pi_rpc.approval")
  approval.hide() -- the float belongs to the chat left
  prev.saved = save_all()
  load_all(rec.saved)
  rec.saved = nil
  active = rec
  require("pi_rpc.status").refresh()
  require("pi_rpc.usage").show()
  if not keep_windows then
    show_in_tab()
  end
  if approval.pending()[1] then
    approval.show()
  end
end

--- A new, empty chat made current; its daemon starts on first use.
---@return pi_rpc.ChatRecord
function M.new()
  M.current()
  local rec = new_record()
  rec.tab = vim.api.nvim_get_current_tabpage()
  M.activate(rec)
  return rec
end

--- Remembers the first prompt of the current chat (the picker's label).
---@param text string
function M.note_prompt(text)
  local rec = M.current()
  rec.first_prompt = rec.first_prompt or text
end

---@return pi_rpc.ChatRecord[]
function M.list()
  M.current()
  return records
end

--- "#2 streaming  fix the greeting": the chat's number, state and first prompt.
---@param rec pi_rpc.ChatRecord
---@return string
function M.label(rec)
  local status = M.within(rec, function()
    return require("pi_rpc.status").text()
  end)
  local prompt = (rec.first_prompt or "(no prompt yet)"):gsub("%s+", " ")
  if #prompt > 60 then
    prompt = prompt:sub(1, 57) .. "..."
  end
  local mark = rec == M.current() and "*" or " "
  return ("%s#%d %s  %s"):format(mark, rec.id, (status:gsub("^π ", "")), prompt)
end

--- :PiChats: pick a chat (or a new one) with vim.ui.select.
function M.pick()
  local items = vim.list_slice(M.list())
  items[#items + 1] = "new"
  vim.ui.select(items, {
    prompt = "pi-rpc chats",
    format_item = function(item)
      return item == "new" and "+ new chat" or M.label(item)
    end,
  }, function(choice)
    if choice == "new" then
      M.new()
      require("pi_rpc.window").open_chat(true)
    elseif choice then
      M.activate(choice)
      require("pi_rpc.window").open_chat(true)
    end
  end)
end

--- :PiChat {n}: switch to chat number n.
---@param id integer
function M.switch(id)
  for _, rec in ipairs(M.list()) do
    if rec.id == id then
      M.activate(rec)
      require("pi_rpc.window").open_chat(true)
      return
    end
  end
  util.notify(("no chat #%d (:PiChats lists them)"):format(id), vim.log.levels.WARN)
end

--- Entering a window that shows a chat's buffer makes that chat current (its `<C-c>`, `i` and
--- the statusline then act on the chat under the cursor).
---@param buf integer
function M.entered(buf)
  local id = vim.b[buf].pi_rpc_chat
  for _, rec in ipairs(M.list()) do
    if rec.id == id and rec ~= active then
      M.activate(rec, true)
      return
    end
  end
end

--- Closes a chat: its daemon stops (aborting any run; the session stays on disk for
--- :PiSessions) and its buffer goes. Closing the current chat makes another current, a new one
--- when it was the only one.
---@param rec pi_rpc.ChatRecord?
function M.close(rec)
  rec = rec or M.current()
  if rec == M.current() then
    local other = nil
    for _, r in ipairs(records) do
      if r ~= rec and (other == nil or r.tab == vim.api.nvim_get_current_tabpage()) then
        other = r
      end
    end
    if other then
      M.activate(other)
    else
      M.new()
    end
  end
  M.within(rec, function()
    require("pi_rpc.approval").drop_all()
    require("pi_rpc.daemon").stop_sync()
    local buf = require("pi_rpc.chat").save().state
    buf = buf and buf.buf
    if buf and vim.api.nvim_buf_is_valid(buf) then
      pcall(vim.api.nvim_buf_delete, buf, { force = true })
    end
  end)
  records = vim.tbl_filter(function(r)
    return r ~= rec
  end, records)
end

--- :PiChat close [n]
---@param id integer?
function M.close_id(id)
  for _, rec in ipairs(M.list()) do
    if id == nil and rec == active or rec.id == id then
      M.close(rec)
      return
    end
  end
  util.notify(("no chat #%d (:PiChats lists them)"):format(id), vim.log.levels.WARN)
end

--- Runs `fn` within every chat (stopping all daemons on exit).
---@param fn fun()
function M.each(fn)
  for _, rec in ipairs(vim.list_slice(M.list())) do
    M.within(rec, fn)
  end
end

-- chats.per_tab: entering a tabpage makes its chat current, a new one for a tab without.
local function on_tab_enter()
  local tab = vim.api.nvim_get_current_tabpage()
  for _, rec in ipairs(M.list()) do
    if rec.tab == tab then
      M.activate(rec)
      return
    end
  end
  M.new()
end

local wired = false

--- Installs the tabpage autocommand when `chats.per_tab` is set.
function M.setup()
  if wired or not (config.options.chats or {}).per_tab then
    return
  end
  wired = true
  M.current()
  vim.api.nvim_create_autocmd("TabEnter", {
    group = vim.api.nvim_create_augroup("pi_rpc_chats", { clear = true }),
    desc = "pi-rpc: the chat of this tabpage",
    callback = on_tab_enter,
  })
  vim.api.nvim_create_autocmd("TabClosed", {
    group = "pi_rpc_chats",
    desc = "pi-rpc: close the chat of a closed tabpage",
    callback = vim.schedule_wrap(function() -- 0.11 still calls the tabpage valid in TabClosed
      for _, rec in ipairs(vim.list_slice(records)) do
        if rec.tab and not vim.api.nvim_tabpage_is_valid(rec.tab) then
          M.close(rec)
        end
      end
    end),
  })
end

return M
