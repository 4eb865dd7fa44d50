-- The chat buffer: agent events in, markdown blocks out.
-- The buffer is a list of blocks (header, text, thinking, tool); each block owns a run of lines
-- and is rewritten in place, so a tool's status and live output update where they stand.
-- Events from the daemon are queued and rendered together on a short timer (`push`), with runs
-- of deltas merged first: a burst of thousands of deltas costs a few buffer writes, not one each.
-- Folds are manual and made once per finished block, so a write never re-evaluates the folds of
-- the whole buffer.
local config = require("pi_rpc.config")
local format = require("pi_rpc.format")
local util = require("pi_rpc.util")

local M = {}

---@class pi_rpc.Block
---@field lines string[] the block's lines; the first is a blank separator
---@field skip integer 1 when the block starts the buffer and its blank separator is not shown
---@field fold_from integer? line of `lines` where a closed fold starts
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

---@type pi_rpc.ChatState?
local state = nil

-- Events waiting for the next render, and whether a render is scheduled.
local pending = {} ---@type table[]
local scheduled = false
local last_render = 0 -- vim.uv.hrtime() of the last render
-- While a new session replaces a running one, the old run's late events are dropped.
local discarding = false
-- Counts clears, so a prompt's late result can tell the chat it ended in has been emptied.
local epoch = 0

local function opts()
  return config.options
end

--- This chat's state, to keep while another chat is current (pi_rpc.chats).
function M.save()
  return {
    state = state,
    pending = pending,
    scheduled = scheduled,
    last_render = last_render,
    discarding = discarding,
    epoch = epoch,
  }
end

--- Takes a chat's state back (nil: a new chat, whose buffer is made on first use).
---@param saved table?
function M.load(saved)
  saved = saved or { pending = {}, scheduled = false, last_render = 0, discarding = false, epoch = 0 }
  state, pending, scheduled, last_render, discarding, epoch =
    saved.state, saved.pending, saved.scheduled, saved.last_render, saved.discarding, saved.epoch
end

local function new_buffer()
  local buf = vim.api.nvim_create_buf(false, true)
  local id = require("pi_rpc.chats").current().id
  vim.api.nvim_buf_set_name(buf, id == 1 and "pi-rpc://chat" or ("pi-rpc://chat/" .. id))
  vim.b[buf].pi_rpc_chat = id
  vim.api.nvim_create_autocmd("BufEnter", {
    buffer = buf,
    desc = "pi-rpc: this chat becomes the current one",
    callback = function()
      require("pi_rpc.chats").entered(buf)
    end,
  })
  local bo = vim.bo[buf]
  bo.buftype = "nofile"
  bo.bufhidden = "hide"
  bo.swapfile = false
  bo.undolevels = -1
  bo.filetype = "markdown"
  bo.modifiable = false
  require("pi_rpc.keys").chat_buffer(buf)
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

local function shown(block)
  return #block.lines - block.skip
end

--- First buffer row (0-based) of a block.
local function row_of(s, block)
  local row = s.count
  for i = #s.blocks, 1, -1 do
    local b = s.blocks[i]
    row = row - shown(b)
    if b == block then
      return row
    end
  end
  error("pi_rpc: block not in chat")
end

-- Windows whose cursor is on the last line keep following the output. Asked before a write,
-- against the buffer as it is then.
local function followers(s)
  local last = vim.api.nvim_buf_line_count(s.buf)
  local list = {}
  for _, win in ipairs(vim.fn.win_findbuf(s.buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= last then
      list[#list + 1] = win
    end
  end
  return list
end

local function write(s, first, last, lines)
  local follow = followers(s)
  vim.bo[s.buf].modifiable = true
  vim.api.nvim_buf_set_lines(s.buf, first, last, false, lines)
  vim.bo[s.buf].modifiable = false
  local bottom = vim.api.nvim_buf_line_count(s.buf)
  for _, win in ipairs(follow) do
    vim.api.nvim_win_set_cursor(win, { bottom, 0 })
  end
end

-- Writes a block's new lines over its old ones at `row`. The block at the top of the buffer
-- does not show its blank separator, and the first write replaces the line every buffer
-- starts with.
local function place(s, block, row, lines)
  local old = shown(block)
  local was_empty = s.count == 0
  block.lines = lines
  block.skip = (row == 0 and lines[1] == "") and 1 or 0
  local visible = block.skip == 1 and vim.list_slice(lines, 2) or lines
  s.count = s.count + #visible - old
  if was_empty then
    write(s, 0, -1, visible)
  else
    write(s, row, row + old, visible)
  end
end

-- Closes the block's fold in every window showing the chat (folds belong to windows).
local function fold_in_windows(s, block)
  if not block.fold_from then
    return
  end
  local first = row_of(s, block) + block.fold_from - block.skip
  local last = row_of(s, block) + block.fold_to - block.skip
  if first < 1 or last < first then
    return
  end
  for _, win in ipairs(vim.fn.win_findbuf(s.buf)) do
    if vim.wo[win].foldmethod == "manual" then
      vim.api.nvim_win_call(win, function()
        vim.cmd(("silent! %d,%dfold"):format(first, last))
      end)
    end
  end
end

--- Makes the folds of every folded block in `win` (a window that starts showing the chat).
---@param win integer
function M.refold(win)
  local s = chat()
  vim.api.nvim_win_call(win, function()
    vim.cmd("silent! normal! zE")
    local row = 0
    for _, b in ipairs(s.blocks) do
      if b.fold_from then
        vim.cmd(("silent! %d,%dfold"):format(row + b.fold_from - b.skip, row + b.fold_to - b.skip))
      end
      row = row + shown(b)
    end
  end)
end

---@param lines string[]
---@param extra table? fields of the new block besides its lines (`tool`, `thinking`)
---@return pi_rpc.Block
local function append(lines, extra)
  local s = chat()
  local block = vim.tbl_extend("force", extra or {}, { lines = {}, skip = 0 })
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
  local row = row_of(s, block) + shown(block) - 1
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
    max_output_lines = o.chat.max_output_lines,
    open_key = o.keymaps.chat and o.keymaps.chat.open_full_output or nil,
  })
  block.full_output_path = path
  block.fold_from, block.fold_to = nil, nil
  replace(block, lines)
  if o.chat.fold_results and from then
    block.fold_from, block.fold_to = from, to
    fold_in_windows(chat(), block)
  end
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
      fold_in_windows(s, block)
    end
  elseif t == "toolcall_start" then
    ensure_tool(ev.id or ("#" .. tostring(idx)), ev.toolName)
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
  elseif role == "bashExecution" then
    append(format.bash_lines(msg))
    s.last_role = "user"
  elseif role == "compactionSummary" or role == "branchSummary" then
    append(format.summary_lines(msg))
    s.last_role = "summary"
  elseif role == "custom" then
    if msg.display then -- an extension's message Pi shows; the others are the model's alone
      append(format.custom_lines(msg))
      s.last_role = "user"
    end
  elseif role == "assistant" then
    ensure_assistant_header()
    s.content = {}
  end
end

-- A note's lines after a blank separator: buffer lines cannot hold a newline, and error texts
-- (a daemon's stderr, a provider's message) often have several.
local function note_lines(text)
  local lines = { "" }
  vim.list_extend(lines, vim.split(text, "\n", { plain = true }))
  return lines
end

local function on_message_end(msg)
  if msg.role ~= "assistant" then
    return
  end
  local reason = msg.stopReason
  local err = util.get(msg, "errorMessage")
  if reason == "error" then
    append(note_lines("**Error:** " .. (err or "unknown error")))
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

-- A call waiting for the user says so in its header until the decision; a rejected or
-- cancelled call then ends with its error result.
local function on_approval_event(ev)
  local request = ev.type == "tool_approval_request" and ev.request or ev
  local block = ensure_tool(request.toolCallId, request.toolName)
  if ev.type == "tool_approval_request" then
    block.tool.status = "approval"
  elseif block.tool.status == "approval" then
    block.tool.status = "running"
  end
  render_tool(block)
end

--- Applies one `agent/event` to the chat buffer at once (`push` batches them).
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
  elseif t == "tool_approval_request" or t == "tool_approval_end" then
    on_approval_event(ev)
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

-- Deltas of one content block that follow each other become one delta, and a tool's partial
-- results (each holds all output so far) collapse to the newest: same text, far fewer writes.
-- The daemon's event tables are left as they are (other listeners hold them too).
local function merge(events)
  local out = {}
  local parts = {} ---@type table<integer, string[]> deltas by index in `out`
  for _, ev in ipairs(events) do
    local prev = out[#out]
    local a = prev and prev.type == "message_update" and prev.assistantMessageEvent or nil
    local b = ev.type == "message_update" and ev.assistantMessageEvent or nil
    if
      a
      and b
      and (b.type == "text_delta" or b.type == "thinking_delta")
      and a.type == b.type
      and a.contentIndex == b.contentIndex
    then
      local list = parts[#out] or { a.delta or "" }
      parts[#out] = list
      list[#list + 1] = b.delta or ""
    elseif
      prev
      and ev.type == "tool_execution_update"
      and prev.type == ev.type
      and prev.toolCallId == ev.toolCallId
    then
      out[#out] = ev
    else
      out[#out + 1] = ev
    end
  end
  for i, list in pairs(parts) do
    local ev = out[i]
    out[i] = setmetatable({
      assistantMessageEvent = vim.tbl_extend("force", ev.assistantMessageEvent, { delta = table.concat(list) }),
    }, { __index = ev })
  end
  return out
end

--- Renders every queued event now.
function M.flush()
  scheduled = false
  if #pending == 0 then
    return
  end
  local events = merge(pending)
  pending = {}
  for _, ev in ipairs(events) do
    local ok, err = pcall(M.apply, ev)
    if not ok then
      util.notify("rendering an event failed: " .. tostring(err), vim.log.levels.ERROR)
    end
  end
  last_render = vim.uv.hrtime()
end

--- Queues a daemon event for rendering: at once when the last render is `chat.render_ms` old,
--- else by a timer. The timer alone is not enough: its callback queues behind every
--- notification already waiting, so in a burst it would fire late.
---@param ev table
function M.push(ev)
  if discarding then
    return
  end
  pending[#pending + 1] = ev
  local interval = opts().chat.render_ms
  if vim.uv.hrtime() - last_render >= interval * 1e6 then
    M.flush()
  elseif not scheduled then
    scheduled = true
    local owner = require("pi_rpc.chats").current() -- the timer fires for this chat
    vim.defer_fn(function()
      require("pi_rpc.chats").within(owner, M.flush)
    end, interval)
  end
end

--- Drops daemon events until `accept()`: the old run's tail while a new session starts.
function M.discard()
  discarding = true
  pending = {}
end

function M.accept()
  discarding = false
end

---@return integer
function M.epoch()
  return epoch
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
    if m.role ~= "assistant" and m.role ~= "toolResult" and m.role ~= "system" then
      -- the user's words, and the session's own kinds (a summary, a command, an extension's note)
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

--- Appends a note in the chat (a lifecycle message, a resumed session).
---@param line string
function M.note(line)
  M.flush()
  append(note_lines(line))
end

--- Notes how a run ended when no assistant message said so (e.g. a `$/cancelRequest` that
--- raced the run's end); the daemon normally ends an aborted run with an aborted message.
---@param result table the `prompt` result
function M.run_ended(result)
  M.flush()
  local s = chat()
  local last = s.blocks[#s.blocks]
  local text = last and last.lines[#last.lines] or ""
  local error_line = "**Error:** " .. (util.get(result, "errorMessage") or "unknown error")
  if result.stopReason == "aborted" and text ~= "_Aborted._" then
    append({ "", "_Aborted._" })
  elseif result.stopReason == "error" and not M.text():find(error_line, 1, true) then
    append(note_lines(error_line))
  end
end

--- Marks tools still running as failed (the daemon died under them) and notes it in the chat.
---@param why string
function M.interrupt(why)
  M.flush()
  local s = chat()
  for _, block in pairs(s.tools) do
    if block.tool.status == "running" or block.tool.status == "pending" then
      block.tool.status = "error"
      render_tool(block)
    end
  end
  s.tools = {}
  append(note_lines("**Error:** " .. why))
end

--- Starts over: an empty chat for a new session.
function M.clear()
  local s = chat()
  pending = {}
  epoch = epoch + 1
  s.blocks, s.tools, s.content, s.count, s.last_role = {}, {}, {}, 0, nil
  write(s, 0, -1, {})
  for _, win in ipairs(vim.fn.win_findbuf(s.buf)) do
    vim.api.nvim_win_call(win, function()
      vim.cmd("silent! normal! zE")
    end)
  end
end

--- The tool block at (or above) a buffer line.
---@param lnum integer 1-based
---@return pi_rpc.Block?
function M.block_at(lnum)
  M.flush()
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
    row = row + shown(b)
  end
  return found
end

--- The buffer line (1-based) of each tool card's header line, top to bottom.
---@return integer[]
function M.card_lines()
  M.flush()
  local rows, row = {}, 0
  for _, b in ipairs(chat().blocks) do
    if b.tool then
      rows[#rows + 1] = row + 2 - b.skip -- lines[1] is the blank separator, lines[2] the header
    end
    row = row + shown(b)
  end
  return rows
end

--- The tool under the cursor, or the newest one.
---@return pi_rpc.Block?
function M.tool_here()
  local block = M.block_at(vim.api.nvim_win_get_cursor(0)[1])
  if block then
    return block
  end
  local s = chat()
  for i = #s.blocks, 1, -1 do
    if s.blocks[i].tool then
      return s.blocks[i]
    end
  end
end

--- Opens the whole output of the tool under the cursor: Pi's full output log when the result
--- was truncated, else the result (or an edit's diff) in a scratch buffer.
function M.open_full_output()
  local block = M.tool_here()
  if not block then
    util.notify("no tool output here", vim.log.levels.WARN)
    return
  end
  if block.full_output_path then
    require("pi_rpc.window").open_file(block.full_output_path)
    return
  end
  local tool = block.tool
  local patch = util.get(tool.details, "patch")
  local text = type(patch) == "string" and patch or tool.output or ""
  require("pi_rpc.window").open_scratch(
    "pi-rpc://output/" .. tool.id,
    vim.split(text, "\n", { plain = true }),
    type(patch) == "string" and "diff" or "text"
  )
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
