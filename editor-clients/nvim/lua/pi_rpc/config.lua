-- Options for require("pi_rpc").setup(); every field is documented in doc/pi-rpc.txt.
local M = {}

---@class pi_rpc.Config
M.defaults = {
  -- The daemon. `cmd` is the executable plus fixed arguments; `args` are appended after the
  -- options the plugin derives from the fields below (--cwd, --script, --tools).
  cmd = { "pi-rpc" },
  args = {},
  -- Working directory the agent works in; a function is called at daemon start.
  cwd = function()
    return vim.fn.getcwd()
  end,
  env = nil, ---@type table<string,string>?
  -- Scripted model (the "faux" provider) script, mostly for demos and tests.
  script = nil, ---@type string?
  -- Initially active tools (nil: the daemon's default, read bash edit write).
  tools = nil, ---@type string[]?
  -- Model chosen after the daemon starts, e.g. provider = "anthropic", model = "claude-sonnet-4-5".
  provider = nil, ---@type string?
  model = nil, ---@type string?
  -- Approvals: the daemon asks before bash, edit and write run (a float shows the diff or the
  -- command). `policy` is the session's starting policy: "ask", "acceptEdits", "auto" or
  -- "readOnly"; nil keeps the daemon's default ("ask" for a client that can ask, unless
  -- permissions.defaultPolicy in settings.json says otherwise). `enabled = false`: never asked.
  approvals = {
    enabled = true,
    policy = nil, ---@type string?
  },
  -- read, edit and write go through Neovim: loaded buffers are read with their unsaved changes
  -- and the agent's writes land in them (undoable); false: the agent uses the disk only.
  files = true,
  -- The daemon's stderr is appended here (:PiLog opens it).
  log_file = vim.fs.joinpath(vim.fn.stdpath("log"), "pi-rpc.log"),
  -- A daemon that dies is restarted at most this many times per minute.
  max_restarts = 3,
  -- What :PiPrompt does while a run is going: "steer" (Pi's Enter) or "followUp" (Pi's Alt+Enter).
  while_streaming = "steer",
  layout = {
    position = "right", -- "right" | "left" | "top" | "bottom" | "tab"
    width = 0.4, -- columns (> 1) or a fraction of the editor width
    height = 0.35, -- rows (> 1) or a fraction of the editor height, for top/bottom
    input_height = 6, -- rows of the prompt input split under the chat
  },
  chat = {
    auto_open = true, -- open the chat window when a prompt is sent
    show_thinking = true,
    fold_thinking = true, -- fold a thinking block once it is complete
    fold_results = true, -- fold tool output once the tool has finished
    live_output_lines = 30, -- tail of the output shown while a tool runs
    max_output_lines = 40, -- tail of a finished result (or diff) shown; `go` opens all of it
    render_ms = 30, -- events are rendered together at most this long after they arrive
  },
  -- Several chats, each with its own daemon (:PiChat new, :PiChats). `per_tab`: each tabpage
  -- has its own chat, made current when the tab is entered.
  chats = {
    per_tab = false,
  },
  -- Completion in the prompt input pops up by itself after `@` or `#` (else <C-x><C-o>).
  auto_complete = true,
  -- What an `@` mention in the prompt carries at most (pi_rpc.mentions): the lines and bytes of
  -- one file, buffer, selection or symbol; the entries of a folder, diagnostics or quickfix list;
  -- the last lines of a terminal.
  mentions = {
    max_lines = 400,
    max_bytes = 40000,
    max_items = 200,
    terminal_lines = 100,
  },
  -- The first chat continues this folder's newest stored session when its daemon starts (on
  -- :PiChat or the first prompt), so the conversation is back after Neovim restarts.
  resume_last = true,
  icons = { running = "⏳", done = "✓", error = "✗", pending = "…", approval = "⏸" },
  keymaps = {
    -- Global mappings; set any to false to skip it.
    prompt = "<leader>pp", -- normal: open the prompt input
    send_selection = "<leader>pa", -- visual: prompt with the selection as context
    abort = "<leader>px",
    toggle_chat = "<leader>pc",
    rewind = "<leader>pr", -- :PiRewind
    -- Buffer-local mappings in the chat buffer.
    chat = {
      abort = "<C-c>",
      input = "i",
      open_full_output = "go",
      open_change = "gf", -- the file an edit changed, at its first changed line
      next_message = "]]",
      prev_message = "[[",
      next_card = "]c", -- the next tool call
      prev_card = "[c",
      yank_code = "gy", -- the fenced block under the cursor
      close = "q",
    },
    -- Buffer-local mappings in the approval float.
    approval = {
      allow = "a",
      allow_always = "A",
      reject = "r", -- asks for a reason (vim.ui.input) the agent reads
      hide = "q", -- the call keeps waiting; :PiApproval shows it again
      toggle_hunk = "t", -- keep or reject the hunk under the cursor (a diff of several hunks)
    },
    -- Buffer-local mappings in the input buffer.
    input = {
      submit_normal = "<CR>",
      submit_insert = "<C-s>",
      close = "q",
    },
  },
}

---@type pi_rpc.Config
M.options = vim.deepcopy(M.defaults)

---@param opts table?
function M.setup(opts)
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  local o = M.options
  -- Checked by hand: vim.validate changed its signature between 0.10 and 0.11.
  assert(type(o.cmd) == "table" and #o.cmd > 0, "pi_rpc: `cmd` must be a non-empty list")
  assert(type(o.args) == "table", "pi_rpc: `args` must be a list")
  assert(
    o.while_streaming == "steer" or o.while_streaming == "followUp",
    'pi_rpc: `while_streaming` must be "steer" or "followUp"'
  )
  local policies = { ask = true, acceptEdits = true, auto = true, readOnly = true }
  assert(
    o.approvals.policy == nil or policies[o.approvals.policy],
    'pi_rpc: `approvals.policy` must be "ask", "acceptEdits", "auto" or "readOnly"'
  )
  return o
end

--- The argv that starts the daemon, derived from the options.
---@return string[] argv, string cwd
function M.daemon_argv()
  local o = M.options
  local cwd = type(o.cwd) == "function" and o.cwd() or o.cwd
  local argv = vim.list_extend({}, o.cmd)
  vim.list_extend(argv, { "--cwd", cwd })
  if o.script then
    vim.list_extend(argv, { "--script", vim.fn.fnamemodify(o.script, ":p") })
  end
  if o.tools then
    vim.list_extend(argv, { "--tools", table.concat(o.tools, ",") })
  end
  vim.list_extend(argv, o.args)
  return argv, cwd
end

return M
