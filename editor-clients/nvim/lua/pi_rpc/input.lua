-- The prompt input buffer: a markdown scratch split whose text is sent on submit.
local config = require("pi_rpc.config")

local M = {}

local TITLES = {
  prompt = "Prompt",
  steer = "Steer (delivered after the current tool batch)",
  followUp = "Follow-up (delivered when the agent would stop)",
}

-- `@` or `#` typed at the start of a word opens the omnifunc's menu, as <C-x><C-o> would.
---@param buf integer
local function auto_complete(buf)
  local keys = vim.api.nvim_replace_termcodes("<C-x><C-o>", true, false, true)
  vim.api.nvim_create_autocmd("InsertCharPre", {
    buffer = buf,
    desc = "pi-rpc: complete @ mentions and #words",
    callback = function()
      local char = vim.v.char
      if char ~= "@" and char ~= "#" then
        return
      end
      local before = vim.api.nvim_get_current_line():sub(1, vim.api.nvim_win_get_cursor(0)[2])
      if before ~= "" and not before:match("%s$") then
        return -- a mail address, an issue number: not a context token
      end
      -- After the character is inserted; only if the user is still typing in this buffer.
      vim.schedule(function()
        if vim.api.nvim_get_current_buf() == buf and vim.fn.mode() == "i" and vim.fn.pumvisible() == 0 then
          vim.api.nvim_feedkeys(keys, "n", false)
        end
      end)
    end,
  })
end

-- The send function of each open input buffer, for <Plug>(pi-rpc-send).
local submits = {} ---@type table<integer, fun()>

--- Sends the input in `buf` (default: the current buffer); false when it is no input buffer.
---@param buf integer?
---@return boolean
function M.submit(buf)
  local submit = submits[buf or vim.api.nvim_get_current_buf()]
  if submit then
    submit()
  end
  return submit ~= nil
end

-- What @buffer, @selection and @diagnostics refer to: the buffer being edited, not the chat.
-- From the chat: the file shown in this tab that was used last (the previous window may be an
-- input just closed).
---@return integer
local function origin_buffer()
  local current = vim.api.nvim_get_current_buf()
  if current ~= require("pi_rpc.chat").buf() then
    return current
  end
  local best, used = vim.fn.winbufnr(vim.fn.winnr("#")), -1
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local buf = vim.api.nvim_win_get_buf(win)
    local info = vim.fn.getbufinfo(buf)[1]
    if vim.bo[buf].buftype == "" and info and info.lastused > used then
      best, used = buf, info.lastused
    end
  end
  return best
end

---@param mode "prompt"|"steer"|"followUp"
---@param prefill string[]?
function M.open(mode, prefill)
  local origin = origin_buffer()
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].filetype = "markdown"
  vim.b[buf].pi_rpc_input_mode = mode
  vim.b[buf].pi_rpc_origin = origin -- the buffer whose LSP servers complete @symbol:
  vim.bo[buf].omnifunc = "v:lua.require'pi_rpc.context'.omnifunc"
  local lines = vim.deepcopy(prefill or {})
  if #lines > 0 then
    vim.list_extend(lines, { "", "" }) -- a blank line, then the line the cursor starts on
  end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, #lines > 0 and lines or { "" })
  local win = require("pi_rpc.window").open_input(buf)
  local keys = config.options.keymaps.input or {}
  vim.api.nvim_set_option_value(
    "winbar",
    ("%s  (%s: send, %s: close, @file @buffer @symbol: @diagnostics…, <C-x><C-o>: complete)"):format(
      TITLES[mode],
      keys.submit_normal or "",
      keys.close or ""
    ),
    { win = win, scope = "local" }
  )

  local function submit()
    local text = vim.trim(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n"))
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
    vim.cmd("stopinsert")
    if text == "" then
      return
    end
    text = require("pi_rpc.context").expand(text, origin)
    local pi = require("pi_rpc")
    if mode == "steer" then
      pi.steer(text)
    elseif mode == "followUp" then
      pi.follow_up(text)
    else
      pi.prompt(text)
    end
  end
  local function close()
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
  end
  submits[buf] = submit
  vim.api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    once = true,
    callback = function()
      submits[buf] = nil
    end,
  })
  if keys.submit_normal then
    vim.keymap.set("n", keys.submit_normal, submit, { buffer = buf, desc = "pi-rpc: send" })
  end
  if keys.submit_insert then
    vim.keymap.set("i", keys.submit_insert, submit, { buffer = buf, desc = "pi-rpc: send" })
  end
  if keys.close then
    vim.keymap.set("n", keys.close, close, { buffer = buf, desc = "pi-rpc: close" })
  end
  if config.options.auto_complete then
    auto_complete(buf)
  end
  vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
  vim.cmd("startinsert")
  return buf, win, submit
end

return M
