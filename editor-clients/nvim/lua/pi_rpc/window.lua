-- Window layout: the chat split, the prompt input under it, and opening logs.
local config = require("pi_rpc.config")

local M = {}

local function size(value, total)
  if value > 1 then
    return math.floor(value)
  end
  return math.max(10, math.floor(total * value))
end

local function set_wo(win, name, value)
  vim.api.nvim_set_option_value(name, value, { win = win, scope = "local" })
end

--- The window showing the chat buffer in the current tab, if any.
---@return integer?
function M.chat_win()
  local buf = require("pi_rpc.chat").buf()
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then
      return win
    end
  end
  return nil
end

--- Opens (or focuses) the chat window according to `layout`; returns it.
---@param focus boolean?
---@return integer
function M.open_chat(focus)
  local existing = M.chat_win()
  if existing then
    if focus then
      vim.api.nvim_set_current_win(existing)
    end
    return existing
  end
  local layout = config.options.layout
  local buf = require("pi_rpc.chat").buf()
  local prev = vim.api.nvim_get_current_win()
  local pos = layout.position
  if pos == "tab" then
    vim.cmd("tab split")
  else
    local vertical = pos == "left" or pos == "right"
    local cmd = ({ left = "topleft vsplit", right = "botright vsplit", top = "topleft split" })[pos]
      or "botright split"
    vim.cmd(cmd)
    if vertical then
      vim.api.nvim_win_set_width(0, size(layout.width, vim.o.columns))
    else
      vim.api.nvim_win_set_height(0, size(layout.height, vim.o.lines))
    end
  end
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  for name, value in pairs({
    wrap = true,
    linebreak = true,
    number = false,
    relativenumber = false,
    signcolumn = "no",
    foldmethod = "manual", -- the chat makes each fold once; "expr" would redo all on every write
    foldtext = "v:lua.require'pi_rpc.chat'.foldtext()",
    foldlevel = 0,
    foldenable = true,
    winfixwidth = pos == "left" or pos == "right",
    conceallevel = 2,
    winbar = "%{%v:lua.require'pi_rpc.usage'.winbar()%}", -- state and context share
  }) do
    set_wo(win, name, value)
  end
  require("pi_rpc.chat").refold(win)
  vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
  if not focus and vim.api.nvim_win_is_valid(prev) then
    vim.api.nvim_set_current_win(prev)
  end
  return win
end

function M.close_chat()
  local win = M.chat_win()
  if win and #vim.api.nvim_tabpage_list_wins(0) > 1 then
    vim.api.nvim_win_close(win, false)
  end
end

function M.toggle_chat()
  if M.chat_win() then
    M.close_chat()
  else
    M.open_chat(true)
  end
end

--- A split for the prompt input: under the chat window when it is open, else at the bottom.
---@param buf integer
---@return integer
function M.open_input(buf)
  local chat = M.chat_win()
  if chat then
    vim.api.nvim_set_current_win(chat)
    vim.cmd("belowright split")
  else
    vim.cmd("botright split")
  end
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  vim.api.nvim_win_set_height(win, config.options.layout.input_height)
  set_wo(win, "winfixheight", true)
  set_wo(win, "wrap", true)
  return win
end

--- Opens a file (the full output log, the daemon log) in a window that is not the chat.
---@param path string
function M.open_file(path)
  local chat = M.chat_win()
  if chat and vim.api.nvim_get_current_win() == chat then
    vim.cmd("wincmd p")
    if vim.api.nvim_get_current_win() == chat then
      vim.cmd("aboveleft vsplit")
    end
  end
  vim.cmd("edit " .. vim.fn.fnameescape(path))
end

--- Shows `lines` in a read-only scratch buffer named `name` (reused when it exists), in the
--- current window (not the chat's), or with `split` in a new window at the bottom.
---@param name string
---@param lines string[]
---@param filetype string
---@param split boolean?
---@return integer win
function M.open_scratch(name, lines, filetype, split)
  local buf = vim.fn.bufnr(name)
  if buf < 0 then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
    vim.bo[buf].bufhidden = "wipe"
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = filetype
  local chat = M.chat_win()
  if split then
    vim.cmd("botright split")
  elseif chat and vim.api.nvim_get_current_win() == chat then
    vim.cmd("wincmd p")
    if vim.api.nvim_get_current_win() == chat then
      vim.cmd("aboveleft vsplit")
    end
  end
  vim.api.nvim_win_set_buf(0, buf)
  return vim.api.nvim_get_current_win()
end

return M
