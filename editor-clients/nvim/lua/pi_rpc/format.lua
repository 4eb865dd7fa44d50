-- Pure formatting: the markdown lines of each chat block. No buffer access here, so the
-- renderer can be tested from recorded events alone.
local util = require("pi_rpc.util")

local M = {}

-- The key argument of each built-in tool, shown inline in the tool's header line.
local PRIMARY = {
  bash = "command",
  powershell = "command",
  read = "path",
  write = "path",
  edit = "path",
  ls = "path",
  grep = "pattern",
  find = "pattern",
}

-- Arguments whose content the block shows otherwise (an edit's diff) or that are too bulky for
-- the header line: summarised by count instead.
local BULKY = {
  edit = { edits = "edit" },
  write = { content = "line" },
}

local function scalar(v)
  local t = type(v)
  return t == "string" or t == "number" or t == "boolean"
end

local function clip(s, max)
  if #s > max then
    return s:sub(1, max) .. "…"
  end
  return s
end

--- A one-line summary of a tool call's arguments: the key argument in backticks, then the
--- other short scalar arguments as key=value; long strings and tables show their size only.
---@param name string
---@param args table?
---@return string
function M.args_summary(name, args)
  if type(args) ~= "table" then
    return ""
  end
  local parts = {}
  local key = PRIMARY[name]
  local primary = key and args[key]
  if type(primary) == "string" then
    local first = primary:match("^([^\n]*)\n")
    local shown = first and (first .. " …") or primary
    parts[#parts + 1] = "`" .. clip(shown, 120):gsub("`", "'") .. "`"
  end
  local bulky = BULKY[name] or {}
  local keys = vim.tbl_keys(args)
  table.sort(keys)
  for _, k in ipairs(keys) do
    local v = args[k]
    if bulky[k] and v ~= vim.NIL then
      local n = type(v) == "table" and #v or select(2, tostring(v):gsub("\n", "")) + 1
      parts[#parts + 1] = ("(%d %s)"):format(n, M.plural(n, bulky[k]))
    elseif k ~= key and v ~= vim.NIL then
      if scalar(v) and #tostring(v) <= 40 and not tostring(v):find("\n") then
        parts[#parts + 1] = k .. "=" .. tostring(v)
      elseif type(v) == "string" then
        parts[#parts + 1] = ("%s=<%d lines>"):format(k, select(2, v:gsub("\n", "")) + 1)
      elseif type(v) == "table" then
        parts[#parts + 1] = ("%s=<%d items>"):format(k, #v > 0 and #v or vim.tbl_count(v))
      end
    end
  end
  return table.concat(parts, " ")
end

--- A code fence longer than any backtick run in `text`, so output never closes it early.
---@param text string
---@return string
function M.fence(text)
  local longest = 2
  for run in text:gmatch("`+") do
    longest = math.max(longest, #run)
  end
  return string.rep("`", longest + 1)
end

--- Splits Pi's truncation notice off a tool result's text, to show it below the fold. Only a
--- result whose details say it was cut (`details.truncation`) has one: its last line that is a
--- bracketed `[Showing …]` among the final few (bash puts its exit status after it). The words
--- are never read for the full log's path: that is `details.fullOutputPath`, so a file that
--- merely ends like a notice names nothing to open.
---@param text string
---@param details table?
---@return string body, string? notice
function M.split_notice(text, details)
  if type(util.get(details, "truncation")) ~= "table" then
    return text, nil
  end
  local lines = vim.split(text, "\n", { plain = true })
  for i = #lines, math.max(1, #lines - 4), -1 do
    if vim.startswith(lines[i], "[Showing ") and vim.endswith(lines[i], "]") then
      local notice = lines[i]
      local first = (i > 1 and lines[i - 1] == "") and i - 1 or i
      local keep = {}
      for j = 1, #lines do
        if j < first or j > i then
          keep[#keep + 1] = lines[j]
        end
      end
      return table.concat(keep, "\n"), notice
    end
  end
  return text, nil
end

---@class pi_rpc.ToolState
---@field id string
---@field name string
---@field args table?
---@field status "pending"|"approval"|"running"|"done"|"error"
---@field output string text so far (live) or the result text (finished)
---@field details table?

---@param tool pi_rpc.ToolState
---@param icons table
---@return string
function M.tool_header(tool, icons)
  local summary = M.args_summary(tool.name, tool.args)
  local head = "**" .. tool.name .. "**"
  if summary ~= "" then
    head = head .. " " .. summary
  end
  local status = tool.status
  local label = status == "approval" and "waiting for approval" or status
  return ("%s — %s %s"):format(head, icons[status] or "", label)
end

-- A fenced block of `body`, at most `max` lines: the tail, under a line counting the rest.
local function fenced(lines, body, info, max, hint)
  local out = body ~= "" and vim.split(body, "\n", { plain = true }) or {}
  if #out == 0 then
    return nil
  end
  if max and #out > max then
    local hidden = #out - max
    out = vim.list_slice(out, hidden + 1)
    table.insert(out, 1, ("… %d earlier %s%s"):format(hidden, M.plural(hidden, "line"), hint or ""))
  end
  local fence = M.fence(body)
  lines[#lines + 1] = fence .. info
  local from = #lines
  vim.list_extend(lines, out)
  lines[#lines + 1] = fence
  return from, #lines
end

--- The lines of a tool block and the range (1-based, inclusive) to fold once it finished.
--- An edit shows its diff, never folded; other output is folded when it is more than a line,
--- except an error, which stays in view. Finished output longer than `max_output_lines` shows
--- its tail only (the whole of it is a keypress away): a long block would break markdown
--- highlighting after it and slow every redraw.
---@param tool pi_rpc.ToolState
---@param opts {icons: table, live_output_lines: integer, max_output_lines: integer?, open_key: string?}
---@return string[] lines, integer? fold_from, integer? fold_to, string? full_output_path
function M.tool_lines(tool, opts)
  local lines = { "", M.tool_header(tool, opts.icons) }
  local finished = tool.status == "done" or tool.status == "error"
  local hint = opts.open_key and (" (" .. opts.open_key .. ": all)") or ""
  local patch = util.get(tool.details, "patch")
  if tool.status == "done" and type(patch) == "string" and patch ~= "" then
    fenced(lines, (patch:gsub("\n$", "")), "diff", opts.max_output_lines, hint)
    local kept, rejected = util.get(tool.details, "hunks", "kept"), util.get(tool.details, "hunks", "rejected")
    if type(kept) == "table" and type(rejected) == "table" then -- the user kept only some hunks
      local total = #kept + #rejected
      lines[#lines + 1] = ("Kept %d of %d hunk(s); the rejected ones were not applied."):format(#kept, total)
    end
    return lines, nil, nil, nil
  end
  local body, notice = tool.output or "", nil
  if finished then
    body, notice = M.split_notice(body, tool.details)
  end
  local path = util.get(tool.details, "fullOutputPath")
  path = type(path) == "string" and path or nil
  body = body:gsub("\n$", "") -- the closing fence already ends the last line
  local max = finished and opts.max_output_lines or opts.live_output_lines
  local from, to = fenced(lines, body, "text", max, finished and hint or "")
  if notice then
    local open = (path and opts.open_key) and ("  (" .. opts.open_key .. ": open full output)") or ""
    lines[#lines + 1] = notice .. open
  end
  if tool.status ~= "done" or not from or to - from < 3 then
    return lines, nil, nil, path
  end
  return lines, from, to, path
end

--- Lines of user message content: text as is, images named.
---@param content any
---@return string[]
function M.user_lines(content)
  local lines = { "", "## You", "" }
  vim.list_extend(lines, vim.split(util.content_text(content), "\n", { plain = true }))
  return lines
end

--- A command the user ran (a `bashExecution` message, from Pi's `!` or another client): the
--- command, then its output in a text fence, as the chat shows a tool's output.
---@param msg table
---@return string[]
function M.bash_lines(msg)
  local lines = { "", "## You ran `" .. (msg.command or "") .. "`", "", "```text" }
  local output = (msg.output or ""):gsub("\n$", "")
  if output ~= "" then
    vim.list_extend(lines, vim.split(output, "\n", { plain = true }))
  end
  lines[#lines + 1] = "```"
  local exit_code = util.get(msg, "exitCode")
  if msg.cancelled then
    lines[#lines + 1] = "_Cancelled._"
  elseif exit_code ~= nil and exit_code ~= 0 then
    lines[#lines + 1] = ("_Exit code %d._"):format(exit_code)
  end
  if msg.excludeFromContext then
    lines[#lines + 1] = "_Not sent to the model._"
  end
  return lines
end

--- A summary standing for turns the chat no longer holds: a compaction's (`compactionSummary`,
--- the first message of a compacted session) or a branch's (`branchSummary`, from Pi), under a
--- heading that says what it is, then its text.
---@param msg table
---@return string[]
function M.summary_lines(msg)
  local heading = msg.role == "compactionSummary"
      and ("## Earlier conversation summarised (%d tokens)"):format(util.get(msg, "tokensBefore") or 0)
    or "## Summary of another branch"
  local lines = { "", heading, "" }
  vim.list_extend(lines, vim.split(msg.summary or "", "\n", { plain = true }))
  return lines
end

--- A Pi extension's message (`custom`) that Pi's chat shows: its kind, then its content.
---@param msg table
---@return string[]
function M.custom_lines(msg)
  local lines = { "", "## " .. (util.get(msg, "customType") or "Note"), "" }
  vim.list_extend(lines, vim.split(util.content_text(msg.content), "\n", { plain = true }))
  return lines
end

--- Renders a fold's one-line summary.
---@param first string the fold's first line
---@param count integer
---@return string
function M.fold_text(first, count)
  if first:match("^```+text$") then
    return ("  ▸ %d %s of output (za to open)"):format(count - 2, M.plural(count - 2, "line"))
  end
  return ("  ▸ thinking, %d %s (za to open)"):format(count, M.plural(count, "line"))
end

---@param n integer
---@param word string
---@return string
function M.plural(n, word)
  return n == 1 and word or word .. "s"
end

return M
