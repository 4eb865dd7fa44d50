-- The chat buffer: agent events in, markdown blocks out.
-- The buffer is a list of blocks (header, text, thinking, tool); each block owns a run of lines
-- and is rewritten in place, so a tool's status and live output update where they stand.
local config = require("pi_rpc.config")
local format = require("pi_rpc.format")
local util = require("pi_rpc.util")

local M = {}

---@class pi_rpc.Block
---@field lines string[]
---@field fold_from integer? 1-based line within the block where a closed fold starts
---@field fold_to integer?
---@field tool pi_rpc.ToolState?
---@field full_output_path string?
---@field thinking boolean?

---@class pi_rpc.ChatState
---@field buf integer
---@field blocks pi_rpc.Block[]
---@field count integer lines in the buffer according to the blocks
---@field tools table<string, pi_rpc.Block> by toolCallId
---@field content table<integer, pi_rpc.Block> text/thinking blocks of the streaming message
---@field last_role string?
---@field levels integer[]? fold level per line, rebuilt lazily

---@type pi_rpc.ChatState?
local state = nil

local function opts()
  return config.options
end

local function new_buffer()
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, "pi-rpc://chat")
  local bo = vim.bo[buf]
  bo.buftype = "nofile"
  bo.bufhidden = "hide"
  bo.swapfile = false
  bo.undolevels = -1
  bo.filetype = "markdown"
  bo.modifiable = false
  local keys = opts().keymaps.chat or {}
  local function map(lhs, fn, desc)
    if lhs then
      vim.keymap.set("n", lhs, fn, { buffer = buf, desc = desc, nowait = true })
    end
  end
  map(keys.abort, function()
    require("pi_rpc").abort()
  end, "pi-rpc: abort the run")
  map(keys.input, function()
    require("pi_rpc").open_input("prompt")
  end, "pi-rpc: write a prompt")
  map(keys.open_full_output, function()
    M.open_full_output()
  end, "pi-rpc: open the full output of the tool under the cursor")
  map(keys.close, function()
    require("pi_rpc.window").close_chat()
  end, "pi-rpc: close the chat")
  return buf
end

---@return pi_rpc.ChatState
local function chat()
  if state == nil or not vim.api.nvim_buf_is_valid(state.buf) then
    state = { buf = new_buffer(), blocks = {}, count = 0, tools = {}, content = {} }
  end
  return state
end

--- The chat buffer, created on first use.
function M.buf()
  return chat().buf
end

--- First buffer row (0-based) of a block.
local function row_of(s, block)
  local row = s.count
  for i = #s.blocks, 1, -1 do
    local b = s.blocks[i]
    row = row - #b.lines
    if b == block then
      return row
    end
  end
  error("pi_rpc: block not in chat")
end

-- Windows that show the last line keep following the output.
local function followers(s)
  local list = {}
  for _, win in ipairs(vim.fn.win_findbuf(s.buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= math.max(s.count, 1) then
      list[#list + 1] = win
    end
  end
  return list
end

local function write(s, first, last, lines)
  local follow = followers(s)
  s.levels = nil
  vim.bo[s.buf].modifiable = true
  vim.api.nvim_buf_set_lines(s.buf, first, last, false, lines)
  vim.bo[s.buf].modifiable = false
  for _, win in ipairs(follow) do
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(s.buf), 0 })
  end
end

-- Writes a block's new lines over its old ones at `row`. The block at the top of the buffer
-- drops its blank separator, and the first write replaces the line every buffer starts with.
local function place(s, block, row, lines)
  if row == 0 and lines[1] == "" then
    lines = vim.list_slice(lines, 2)
  end
  local old = #block.lines
  local was_empty = s.count == 0
  block.lines = lines
  s.count = s.count + #lines - old
  if was_empty then
    write(s, 0, -1, lines)
  else
    write(s, row, row + old, lines)
  end
end

---@param lines string[]
---@return pi_rpc.Block
local function append(lines, extra)
  local s = chat()
  local block = vim.tbl_extend("force", extra or {}, { lines = {} })
  s.blocks[#s.blocks + 1] = block
  place(s, block, s.count, lines)
  return block
end

---@param block pi_rpc.Block
---@param lines string[]
local function replace(block, lines)
  local s = chat()
  place(s, block, row_of(s, block), lines)
end

--- Appends streamed text to a block's last line; `prefix` starts every new line.
local function append_text(block, delta, prefix)
  local s = chat()
  local row = row_of(s, block) + #block.lines - 1
  local pieces = vim.split(delta, "\n", { plain = true })
  local new = { block.lines[#block.lines] .. pieces[1] }
  for i = 2, #pieces do
    new[#new + 1] = prefix .. pieces[i]
  end
  block.lines[#block.lines] = nil
  vim.list_extend(block.lines, new)
  s.count = s.count + #new - 1
  write(s, row, row + 1, new)
end

---@param block pi_rpc.Block
local function render_tool(block)
  local o = opts()
  local lines, from, to, path = format.tool_lines(block.tool, {
    icons = o.icons,
    live_output_lines = o.chat.live_output_lines,
    open_key = o.keymaps.chat and o.keymaps.chat.open_full_output or nil,
  })
  if o.chat.fold_results then
    block.fold_from, block.fold_to = from, to
  end
  block.full_output_path = path
  replace(block, lines)
end

---@return pi_rpc.Block
local function ensure_tool(id, name)
  local s = chat()
  id = id or ("?" .. tostring(#s.blocks))
  local block = s.tools[id]
  if block == nil then
    block = append({}, { tool = { id = id, name = name or "?", status = "pending", output = "" } })
    s.tools[id] = block
    render_tool(block)
  end
  return block
end

local function ensure_assistant_header()
  local s = chat()
  if s.last_role ~= "assistant" then
    append({ "", "## Pi" })
    s.last_role = "assistant"
  end
end

local function on_assistant_event(ev)
  local s = chat()
  local t = ev.type
  local idx = ev.contentIndex
  if t == "text_start" then
    s.content[idx] = append({ "", "" })
  elseif t == "text_delta" then
    local block = s.content[idx] or append({ "", "" })
    s.content[idx] = block
    append_text(block, ev.delta or "", "")
  elseif t == "thinking_start" and opts().chat.show_thinking then
    s.content[idx] = append({ "", "> " }, { thinking = true })
  elseif t == "thinking_delta" and opts().chat.show_thinking then
    local block = s.content[idx] or append({ "", "> " }, { thinking = true })
    s.content[idx] = block
    append_text(block, ev.delta or "", "> ")
  elseif t == "thinking_end" and opts().chat.show_thinking and opts().chat.fold_thinking then
    local block = s.content[idx]
    if block and #block.lines > 2 then
      block.fold_from, block.fold_to = 2, #block.lines
      s.levels = nil
      replace(block, block.lines) -- rewriting the lines makes Neovim re-evaluate the folds
    end
  elseif t == "toolcall_start" then
    ensure_tool(ev.id or ("#" .. tostring(idx)), ev.name)
  elseif t == "toolcall_end" then
    local call = ev.toolCall or {}
    local block = ensure_tool(call.id, call.name)
    block.tool.args = call.arguments
    render_tool(block)
  end
end

local function on_message_start(msg)
  local s = chat()
  local role = msg.role
  if role == "user" then
    append(format.user_lines(msg.content))
    s.last_role = "user"
  elseif role == "assistant" then
    ensure_assistant_header()
    s.content = {}
  end
end

local function on_message_end(msg)
  if msg.role ~= "assistant" then
    return
  end
  local reason = msg.stopReason
  local err = util.get(msg, "errorMessage")
  if reason == "error" then
    append({ "", "**Error:** " .. (err or "unknown error") })
  elseif reason == "aborted" then
    append({ "", "_Aborted._" })
  end
end

local function on_tool_event(ev)
  local block = ensure_tool(ev.toolCallId, ev.toolName)
  local tool = block.tool
  if ev.args ~= nil and ev.args ~= vim.NIL then
    tool.args = ev.args
  end
  if ev.type == "tool_execution_start" then
    tool.status = "running"
  elseif ev.type == "tool_execution_update" then
    tool.status = "running"
    tool.output = util.content_text(util.get(ev, "partialResult", "content"))
    tool.details = util.get(ev, "partialResult", "details")
  else -- tool_execution_end
    tool.status = ev.isError and "error" or "done"
    tool.output = util.content_text(util.get(ev, "result", "content"))
    tool.details = util.get(ev, "result", "details")
  end
  render_tool(block)
end

--- Renders a stored transcript (from `messages`) as if it had just streamed: the chat of a
--- resumed session looks like the one the user left.
---@param messages table[]
function M.replay(messages)
  M.clear()
  local results = {}
  for _, m in ipairs(messages) do
    if m.role == "toolResult" then
      results[m.toolCallId] = m
    end
  end
  local function update(e)
    M.apply({ type = "message_update", assistantMessageEvent = e })
  end
  for _, m in ipairs(messages) do
    if m.role == "user" then
      M.apply({ type = "message_start", message = m })
    elseif m.role == "assistant" then
      M.apply({ type = "message_start", message = m })
      for i, block in ipairs(m.content or {}) do
        local idx = i - 1
        if block.type == "text" then
          update({ type = "text_start", contentIndex = idx })
          update({ type = "text_delta", contentIndex = idx, delta = block.text })
        elseif block.type == "thinking" then
          update({ type = "thinking_start", contentIndex = idx })
          update({ type = "thinking_delta", contentIndex = idx, delta = block.thinking })
          update({ type = "thinking_end", contentIndex = idx, content = block.thinking })
        elseif block.type == "toolCall" then
          update({ type = "toolcall_end", contentIndex = idx, toolCall = block })
          local r = results[block.id]
          if r then
            M.apply({
              type = "tool_execution_end",
              toolCallId = block.id,
              toolName = block.name,
              result = { content = r.content, details = r.details },
              isError = r.isError,
            })
          end
        end
      end
      M.apply({ type = "message_end", message = m })
    end
  end
end

--- Applies one `agent/event` to the chat buffer.
---@param ev table
function M.apply(ev)
  local t = ev.type
  if t == "message_start" then
    on_message_start(ev.message or {})
  elseif t == "message_update" then
    ensure_assistant_header()
    on_assistant_event(ev.assistantMessageEvent or {})
  elseif t == "message_end" then
    on_message_end(ev.message or {})
  elseif t == "tool_execution_start" or t == "tool_execution_update" or t == "tool_execution_end" then
    on_tool_event(ev)
  elseif t == "auto_retry_start" then
    local e = ev
    append({
      "",
      ("_Retrying (%s/%s) in %.1fs: %s_"):format(
        e.attempt or "?",
        e.maxAttempts or "?",
        (tonumber(e.delayMs) or 0) / 1000,
        util.get(e, "errorMessage") or ""
      ),
    })
  end
end

--- Notes how a run ended when no assistant message said so (e.g. a `$/cancelRequest` that
--- raced the run's end); the daemon normally ends an aborted run with an aborted message.
---@param result table the `prompt` result
function M.run_ended(result)
  local s = chat()
  local last = s.blocks[#s.blocks]
  local shown = last and last.lines[#last.lines] or ""
  if result.stopReason == "aborted" and shown ~= "_Aborted._" then
    append({ "", "_Aborted._" })
  elseif result.stopReason == "error" and not shown:find("^%*%*Error:%*%*") then
    append({ "", "**Error:** " .. (util.get(result, "errorMessage") or "unknown error") })
  end
end

--- Marks tools still running as failed (the daemon died under them) and notes it in the chat.
---@param why string
function M.interrupt(why)
  local s = chat()
  for _, block in pairs(s.tools) do
    if block.tool.status == "running" or block.tool.status == "pending" then
      block.tool.status = "error"
      render_tool(block)
    end
  end
  s.tools = {}
  append({ "", "**Error:** " .. why })
end

--- Starts over: an empty chat for a new session.
function M.clear()
  local s = chat()
  s.blocks, s.tools, s.content, s.count, s.last_role = {}, {}, {}, 0, nil
  write(s, 0, -1, {})
end

--- The tool block at (or above) a buffer line.
---@param lnum integer 1-based
---@return pi_rpc.Block?
function M.block_at(lnum)
  local s = chat()
  local row = 0
  local found
  for _, b in ipairs(s.blocks) do
    if row >= lnum then
      break
    end
    if b.tool then
      found = b
    end
    row = row + #b.lines
  end
  return found
end

--- Opens the full output log of the truncated tool result under the cursor (or the last one).
function M.open_full_output()
  local s = chat()
  local block = M.block_at(vim.api.nvim_win_get_cursor(0)[1])
  local path = block and block.full_output_path
  if not path then
    for i = #s.blocks, 1, -1 do
      path = s.blocks[i].full_output_path
      if path then
        break
      end
    end
  end
  if not path then
    util.notify("no truncated tool output here", vim.log.levels.WARN)
    return
  end
  require("pi_rpc.window").open_file(path)
end

local function levels(s)
  if s.levels then
    return s.levels
  end
  local lv = {}
  local row = 0
  for _, b in ipairs(s.blocks) do
    for i = 1, #b.lines do
      if b.fold_from and i >= b.fold_from and i <= b.fold_to then
        lv[row + i] = i == b.fold_from and ">1" or 1
      else
        lv[row + i] = 0
      end
    end
    row = row + #b.lines
  end
  s.levels = lv
  return lv
end

--- 'foldexpr' of the chat window: folds finished tool output and complete thinking.
function M.foldexpr()
  local s = state
  if s == nil then
    return 0
  end
  return levels(s)[vim.v.lnum] or 0
end

--- 'foldtext' of the chat window.
function M.foldtext()
  local first = vim.fn.getline(vim.v.foldstart)
  return format.fold_text(first, vim.v.foldend - vim.v.foldstart + 1)
end

--- The plain text of the chat buffer (for tests and :checkhealth).
function M.text()
  return table.concat(vim.api.nvim_buf_get_lines(M.buf(), 0, -1, false), "\n")
end

return M
