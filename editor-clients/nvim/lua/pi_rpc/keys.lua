-- Buffer-local mappings of the chat buffer, and what they do.
local config = require("pi_rpc.config")
local util = require("pi_rpc.util")

local M = {}

--- Moves the cursor to the next (`dir` = 1) or previous (-1) message header.
---@param dir integer
function M.jump_message(dir)
  local flags = dir > 0 and "W" or "bW"
  if vim.fn.search([[^## \(You\|Pi\)$]], flags) == 0 then
    util.notify(dir > 0 and "no later message" or "no earlier message")
  end
end

--- Moves to the next (`dir` = 1) or previous (-1) tool card of the chat, from anywhere: the
--- chat window is opened and focused first.
---@param dir integer
function M.jump_card(dir)
  local win = require("pi_rpc.window").open_chat(true)
  local here = vim.api.nvim_win_get_cursor(win)[1]
  local cards = require("pi_rpc.chat").card_lines()
  local target
  for i = dir > 0 and 1 or #cards, dir > 0 and #cards or 1, dir do
    if (dir > 0 and cards[i] > here) or (dir < 0 and cards[i] < here) then
      target = cards[i]
      break
    end
  end
  if target then
    vim.api.nvim_win_set_cursor(win, { target, 0 })
  else
    util.notify(dir > 0 and "no later tool call" or "no earlier tool call")
  end
end

--- Yanks the fenced code block under the cursor (its lines, without the fences) into the
--- unnamed register and `+` when it exists.
function M.yank_code()
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  local lnum = vim.api.nvim_win_get_cursor(0)[1]
  local open, fence
  for i = 1, #lines do
    local f = lines[i]:match("^(```+)")
    if f and not fence then
      open, fence = i, f
    elseif fence and lines[i] == fence then
      if lnum >= open and lnum <= i then
        local body = vim.list_slice(lines, open + 1, i - 1)
        vim.fn.setreg('"', body, "l")
        pcall(vim.fn.setreg, "+", body, "l")
        util.notify(("yanked %d lines"):format(#body))
        return
      end
      fence = nil
    end
  end
  util.notify("the cursor is not in a code block", vim.log.levels.WARN)
end

--- Opens the file the tool under the cursor changed, at its first changed line.
function M.open_change()
  local block = require("pi_rpc.chat").tool_here()
  local tool = block and block.tool
  local path = tool and util.get(tool.args, "path")
  if type(path) ~= "string" then
    util.notify("no edited file here", vim.log.levels.WARN)
    return
  end
  local line = tonumber(util.get(tool.details, "firstChangedLine")) or 1
  require("pi_rpc.window").open_file(require("pi_rpc.reload").absolute(path))
  pcall(vim.api.nvim_win_set_cursor, 0, { line, 0 })
end

---@param buf integer the chat buffer
function M.chat_buffer(buf)
  local keys = config.options.keymaps.chat or {}
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
    require("pi_rpc.chat").open_full_output()
  end, "pi-rpc: open the whole output of the tool under the cursor")
  map(keys.open_change, M.open_change, "pi-rpc: open the edited file at the first change")
  map(keys.next_message, function()
    M.jump_message(1)
  end, "pi-rpc: next message")
  map(keys.prev_message, function()
    M.jump_message(-1)
  end, "pi-rpc: previous message")
  map(keys.next_card, function()
    M.jump_card(1)
  end, "pi-rpc: next tool call")
  map(keys.prev_card, function()
    M.jump_card(-1)
  end, "pi-rpc: previous tool call")
  map(keys.yank_code, M.yank_code, "pi-rpc: yank the code block under the cursor")
  map(keys.close, function()
    require("pi_rpc.window").close_chat()
  end, "pi-rpc: close the chat")
end

return M
