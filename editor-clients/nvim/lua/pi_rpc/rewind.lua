-- :PiRewind and :PiEditPrompt: back to before an earlier prompt, over the daemon's checkpoints
-- (`session/checkpoints`, `session/rewind`). Every step is a vim.ui.select (Telescope, fzf-lua
-- and the like replace it): the prompt to go back to, what to put back, and, when files would
-- change, a confirmation under a preview split of the diffs (`preview: true`: the daemon says
-- what it would restore and writes nothing), conflicts with theirs and a "force" choice.
--
-- Where the restored text lands: the daemon puts a file whose checkpoint came from the editor
-- (an edit or write while the plugin serves files) back with one `fs/writeTextFile`, which
-- files.lua applies to a loaded buffer as one undo step, as it applies the agent's own edits.
-- Files bash changed are put back on disk; their buffers are reloaded here, as reload.lua
-- reloads them after a run. A buffer whose file the rewind deleted goes, unless it holds unsaved
-- changes.
local daemon = require("pi_rpc.daemon")
local files = require("pi_rpc.files")
local util = require("pi_rpc.util")

local M = {}

local PREVIEW = "pi-rpc://rewind"
local MARK = { created = "+", modified = "~", deleted = "-" }

local function fail(what, err)
  util.notify(what .. " failed: " .. tostring(err and err.message or err), vim.log.levels.ERROR)
end

---@param path string
---@return string
local function short(path)
  return vim.fn.fnamemodify(path, ":~:.")
end

-- Days from 1970-01-01 to a date of the proleptic Gregorian calendar: arithmetic, so no local
-- time zone or daylight saving time (os.time's reading of a table) comes into it.
local function days_from_civil(y, m, d)
  y = m <= 2 and y - 1 or y
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * ((m + 9) % 12) + 2) / 5) + d - 1
  return era * 146097 + yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy - 719468
end

-- Seconds since the epoch of an ISO 8601 time ("2026-12-02T06:11:25.123Z", "…+01:00"), or a
-- number of milliseconds; nil when it is neither.
---@param stamp any
---@return integer?
function M.epoch_seconds(stamp)
  if type(stamp) == "number" then
    return math.floor(stamp / 1000)
  end
  if type(stamp) ~= "string" then
    return nil
  end
  local y, mo, d, h, mi, s, zone = stamp:match("^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)[%.%d]*(.*)$")
  if not y then
    return nil
  end
  local t = days_from_civil(tonumber(y), tonumber(mo), tonumber(d)) * 86400 + h * 3600 + mi * 60 + s
  local sign, zh, zm = zone:match("^([+-])(%d%d):?(%d%d)$")
  if sign then
    t = t - (sign == "+" and 1 or -1) * (tonumber(zh) * 3600 + tonumber(zm) * 60)
  end
  return math.floor(t)
end

--- How long ago, in words: "just now", "5 min ago", "3 h ago", "2 days ago".
---@param stamp any
---@param now integer? seconds since the epoch
---@return string
function M.age(stamp, now)
  local t = M.epoch_seconds(stamp)
  if not t then
    return "?"
  end
  local ago = math.max(0, (now or os.time()) - t)
  if ago < 60 then
    return "just now"
  elseif ago < 3600 then
    return ("%d min ago"):format(math.floor(ago / 60))
  elseif ago < 86400 then
    return ("%d h ago"):format(math.floor(ago / 3600))
  end
  local days = math.floor(ago / 86400)
  return ("%d %s ago"):format(days, days == 1 and "day" or "days")
end

--- One checkpoint as the picker lists it: its prompt's first line, its age, the files it would
--- change (`+` created by the agent, so deleted by a rewind; `~` modified; `-` deleted).
---@param checkpoint table
---@param now integer?
---@return string
function M.describe(checkpoint, now)
  local text = (checkpoint.text or ""):match("^[^\n]*")
  if #text > 50 then
    text = text:sub(1, 49) .. "…"
  end
  local changed = {}
  for i, f in ipairs(checkpoint.files or {}) do
    if i > 4 then
      changed[#changed + 1] = ("and %d more"):format(#checkpoint.files - 4)
      break
    end
    changed[#changed + 1] = (MARK[f.change] or "") .. short(f.path)
  end
  local what = #changed > 0 and table.concat(changed, " ") or "no file changes"
  return ("%s  · %s · %s"):format(text, M.age(checkpoint.timestamp, now), what)
end

--- The lines of the preview split: what a files rewind would restore, the diff of each, and the
--- conflicts (files changed since the agent's last change) with theirs.
---@param checkpoint table
---@param preview table the `session/rewind` result with `preview: true`
---@return string[]
function M.preview_lines(checkpoint, preview)
  local lines = { ("# Rewind the files to before: %s"):format((checkpoint.text or ""):match("^[^\n]*")) }
  local function add(text)
    vim.list_extend(lines, vim.split((text:gsub("\n$", "")), "\n", { plain = true }))
  end
  local diffs = preview.diffs or {}
  lines[#lines + 1] = ("# %d %s would be put back"):format(#diffs, #diffs == 1 and "file" or "files")
  for _, d in ipairs(diffs) do
    add(d.diff)
  end
  local conflicts = preview.conflicts or {}
  if #conflicts > 0 then
    lines[#lines + 1] = ("# %d %s changed since the agent's last change: left alone unless forced"):format(
      #conflicts,
      #conflicts == 1 and "file was" or "files were"
    )
    for _, c in ipairs(conflicts) do
      add(c.diff)
    end
  end
  for _, why in ipairs(preview.notRestored or {}) do
    lines[#lines + 1] = "# cannot be put back: " .. why
  end
  return lines
end

--- Brings loaded buffers in line with what a rewind restored: a buffer whose file is back on disk
--- is reloaded (one the daemon restored through the editor already shows it), one whose file the
--- rewind deleted goes when it holds no unsaved changes (its windows show another buffer).
---@param paths string[]
function M.sync_buffers(paths)
  for _, path in ipairs(paths) do
    local buf = files.loaded_buffer(path)
    if buf and vim.uv.fs_lstat(path) then
      files.check(buf)
    elseif buf and not vim.bo[buf].modified then
      for _, win in ipairs(vim.fn.win_findbuf(buf)) do
        vim.api.nvim_win_call(win, function()
          local alt = vim.fn.bufnr("#")
          vim.cmd(alt > 0 and alt ~= buf and vim.api.nvim_buf_is_loaded(alt) and ("buffer " .. alt) or "enew")
        end)
      end
      vim.api.nvim_buf_delete(buf, {})
    end
  end
end

--- What a rewind did, in a message: files restored, conflicts left alone, what could not be.
---@param result table
local function report(result)
  local n = #(result.restored or {})
  local parts = { ("%d %s restored"):format(n, n == 1 and "file" or "files") }
  local conflicts = vim.tbl_map(function(c)
    return short(c.path)
  end, result.conflicts or {})
  if #conflicts > 0 then
    parts[#parts + 1] = "left alone (changed since the agent's change): " .. table.concat(conflicts, ", ")
  end
  local level = #conflicts > 0 and vim.log.levels.WARN or vim.log.levels.INFO
  for _, why in ipairs(result.notRestored or {}) do
    parts[#parts + 1] = "not restored: " .. why
    level = vim.log.levels.WARN
  end
  util.notify("rewind: " .. table.concat(parts, "; "), level)
end

--- `session/rewind` for real, then the buffers, the chat and (for "edit") the input follow.
---@param checkpoint table
---@param action "files"|"conversation"|"both"|"edit"
---@param force boolean
---@param cb fun(result: table?)?
function M.run(checkpoint, action, force, cb)
  local restore = action == "edit" and "both" or action
  local params = { entryId = checkpoint.entryId, restore = restore, force = force }
  daemon.request("session/rewind", params, function(err, result)
    if err then
      fail("session/rewind", err)
      return cb and cb(nil)
    end
    M.sync_buffers(result.restored or {})
    if restore ~= "conversation" then
      report(result)
    end
    local forked = util.get(result, "sessionId")
    if not forked then
      return cb and cb(result)
    end
    require("pi_rpc.pickers").show_session(forked, function()
      if action == "edit" then
        local text = util.get(result, "text") or checkpoint.text or ""
        require("pi_rpc").open_input("prompt", vim.split(text, "\n", { plain = true }))
      end
      if cb then
        cb(result)
      end
    end)
  end)
end

local function close(win)
  if win and vim.api.nvim_win_is_valid(win) then
    vim.api.nvim_win_close(win, true)
  end
end

--- Shows what rewinding the files would do and asks; `run` follows the choice.
---@param checkpoint table
---@param action "files"|"both"|"edit"
---@param cb fun(result: table?)?
function M.confirm(checkpoint, action, cb)
  local params = { entryId = checkpoint.entryId, restore = "files", preview = true }
  daemon.request("session/rewind", params, function(err, preview)
    if err then
      fail("session/rewind", err)
      return cb and cb(nil)
    end
    local win = require("pi_rpc.window").open_scratch(PREVIEW, M.preview_lines(checkpoint, preview), "diff", true)
    local n, k = #(preview.diffs or {}), #(preview.conflicts or {})
    local function count(m, noun)
      return ("%d %s%s"):format(m, noun, m == 1 and "" or "s")
    end
    local choices = { { force = false, label = "Rewind: put back " .. count(n, "file") } }
    if k > 0 then
      choices[1].label = choices[1].label .. (" and leave the %s alone"):format(count(k, "conflict"))
      choices[2] = { force = true, label = ("Force: put back the %s too"):format(count(k, "conflict")) }
    end
    choices[#choices + 1] = { cancel = true, label = "Cancel" }
    vim.ui.select(choices, {
      prompt = "Rewind the files (the diff is in " .. PREVIEW .. ")",
      format_item = function(c)
        return c.label
      end,
    }, function(choice)
      close(win)
      if not choice or choice.cancel then
        return cb and cb(nil)
      end
      M.run(checkpoint, action, choice.force, cb)
    end)
  end)
end

local ACTIONS = {
  { action = "files", label = "Files: put back what the agent changed from this prompt on" },
  { action = "conversation", label = "Conversation: continue from before this prompt (this branch is kept)" },
  { action = "both", label = "Both files and conversation" },
  { action = "edit", label = "Edit this prompt and send it again (files and conversation back)" },
}

--- After a checkpoint is chosen: what to put back, then the preview when files would change.
---@param checkpoint table
---@param action string? skip the question ("edit" for :PiEditPrompt)
---@param cb fun(result: table?)?
function M.choose_action(checkpoint, action, cb)
  local function go(chosen)
    if chosen == "conversation" or #(checkpoint.files or {}) == 0 then
      M.run(checkpoint, chosen, false, cb)
    else
      M.confirm(checkpoint, chosen, cb)
    end
  end
  if action then
    return go(action)
  end
  vim.ui.select(ACTIONS, {
    prompt = "Rewind to before: " .. (checkpoint.text or ""):match("^[^\n]*"),
    format_item = function(a)
      return a.label
    end,
  }, function(choice)
    if choice then
      go(choice.action)
    elseif cb then
      cb(nil)
    end
  end)
end

--- :PiRewind (and :PiEditPrompt with `action = "edit"`): pick a prompt of the conversation, most
--- recent first, and go back to before it. `cb(result)` runs at the end (nil: cancelled/failed).
---@param action string?
---@param cb fun(result: table?)?
function M.pick(action, cb)
  daemon.request("session/checkpoints", vim.empty_dict(), function(err, result)
    if err then
      fail("session/checkpoints", err)
      return cb and cb(nil)
    end
    local checkpoints = result.checkpoints or {}
    if #checkpoints == 0 then
      util.notify("no prompt to rewind to yet")
      return cb and cb(nil)
    end
    local now = os.time()
    vim.ui.select(checkpoints, {
      prompt = action == "edit" and "Edit and resend" or "Rewind to before",
      format_item = function(c)
        return M.describe(c, now)
      end,
    }, function(checkpoint)
      if checkpoint then
        M.choose_action(checkpoint, action, cb)
      elseif cb then
        cb(nil)
      end
    end)
  end)
end

return M
