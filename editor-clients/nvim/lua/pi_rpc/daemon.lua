-- The pi-rpc daemon: spawn on first use, initialize, restart when it dies, stop on exit.
-- The wire is Neovim's own LSP client (vim.lsp.rpc): the daemon speaks LSP base framing.
local config = require("pi_rpc.config")
local util = require("pi_rpc.util")

local M = {}

M.version = "0.1.0"

---@class pi_rpc.Generation
---@field client vim.lsp.rpc.PublicClient?
---@field ready boolean
---@field exited boolean
---@field stopping boolean
---@field queue {[1]: string, [2]: any, [3]: fun(err: any, result: any)?}[]
---@field log_offset integer size of the log when this daemon started: its stderr follows
---@field resume string? the session to continue once initialized (after a crash)
---@field owner pi_rpc.ChatRecord the chat this daemon serves (pi_rpc.chats)

---@type pi_rpc.Generation?
local current = nil
---@type table? the initialize result of the running daemon
M.info = nil
---@type string? the session the daemon holds, continued by a daemon started after a crash
M.session_id = nil
---@type string? the approval policy chosen with :PiPolicy, kept for a daemon started after a crash
M.policy = nil
local restarts = {} ---@type number[] uv.now() of recent restarts
local request_handlers = {} ---@type table<string, fun(params: table, owner: pi_rpc.ChatRecord): any, table?>
local event_listeners = {} ---@type fun(event: table)[]
local life_listeners = {} ---@type fun(what: string, detail: any)[]

--- Subscribe to `agent/event` notifications (already scheduled on the main loop).
---@param fn fun(event: table)
function M.on_event(fn)
  event_listeners[#event_listeners + 1] = fn
end

--- Serve a request the daemon sends (`approval/request`, `fs/readTextFile`, ...). `fn` runs in
--- vim.lsp.rpc's coroutine on the main loop and may yield until it has an answer; it returns
--- the result, or nil and an error made with vim.lsp.rpc.rpc_response_error. Its second
--- argument is the chat whose daemon asks.
---@param method string
---@param fn fun(params: table, owner: pi_rpc.ChatRecord): any, table?
function M.on_request(method, fn)
  request_handlers[method] = fn
end

-- `fn` gets the chat of the daemon asking; it may yield, so it is not run `within` that chat.
local function serve_request(gen, method, params)
  if M.trace then
    M.trace("request", method, params)
  end
  local fn = request_handlers[method]
  if not fn then
    return nil, vim.lsp.rpc.rpc_response_error(-32601, "pi_rpc.nvim does not handle " .. method)
  end
  return fn(params, gen.owner)
end

--- Subscribe to lifecycle changes: "ready" (info), "died" (message), "stopped".
---@param fn fun(what: string, detail: any)
function M.on_lifecycle(fn)
  life_listeners[#life_listeners + 1] = fn
end

-- Runs a callback of `gen`'s daemon with its chat's state current (see pi_rpc.chats).
---@param gen pi_rpc.Generation
---@param fn function
---@param ... any fn's arguments
local function as_owner(gen, fn, ...)
  local args = { ... }
  local n = select("#", ...)
  return require("pi_rpc.chats").within(gen.owner, function()
    return fn(unpack(args, 1, n))
  end)
end

--- This chat's state, to keep while another chat is current (pi_rpc.chats).
function M.save()
  return { current = current, info = M.info, session_id = M.session_id, policy = M.policy, restarts = restarts }
end

--- Takes a chat's state back (nil: a new chat, whose daemon starts on first use).
---@param saved table?
function M.load(saved)
  saved = saved or { restarts = {} }
  current, M.info, M.session_id, M.policy, restarts =
    saved.current, saved.info, saved.session_id, saved.policy, saved.restarts
end

local function emit_life(what, detail)
  for _, fn in ipairs(life_listeners) do
    local ok, err = pcall(fn, what, detail)
    if not ok then
      util.notify("lifecycle listener failed: " .. tostring(err), vim.log.levels.ERROR)
    end
  end
end

function M.log_path()
  return config.options.log_file
end

function M.is_running()
  return current ~= nil and not current.exited
end

function M.is_ready()
  return current ~= nil and current.ready and not current.exited
end

local function log_line(text)
  local path = M.log_path()
  vim.fn.mkdir(vim.fs.dirname(path), "p")
  local f = io.open(path, "a")
  if f then
    f:write(os.date("%Y-%m-%d %H:%M:%S "), text, "\n")
    f:close()
  end
end

-- On Unix a `sh -c 'exec ...'` shim sends stderr to the log file: vim.lsp.rpc would otherwise
-- write every stderr chunk into the shared LSP log. `exec` keeps the daemon's pid the child's.
local function spawn_argv(argv)
  if vim.fn.has("win32") == 1 then
    return argv
  end
  local wrapped = { "sh", "-c", 'exec "$@" 2>>"$PI_RPC_NVIM_LOG"', "pi-rpc" }
  return vim.list_extend(wrapped, argv)
end

--- Set to a function to observe every decoded message from the daemon (tests, debugging):
--- trace("notification", method, params), trace("request", method, params) for requests from
--- the daemon, and trace("response", method, err, result).
---@type fun(kind: string, ...)?
M.trace = nil

local function dispatch_event(method, params)
  if M.trace then
    M.trace("notification", method, params)
  end
  if method ~= "agent/event" or type(params) ~= "table" then
    return
  end
  for _, fn in ipairs(event_listeners) do
    local ok, err = pcall(fn, params)
    if not ok then
      util.notify("event handler failed: " .. tostring(err), vim.log.levels.ERROR)
    end
  end
end

-- The last lines the daemon wrote to stderr (appended to the log since it started).
---@param gen pi_rpc.Generation
---@return string
local function stderr_tail(gen)
  local f = io.open(M.log_path(), "r")
  if not f then
    return ""
  end
  f:seek("set", gen.log_offset)
  local text = f:read("*a") or ""
  f:close()
  local lines = vim.tbl_filter(function(l)
    return vim.trim(l) ~= ""
  end, vim.split(text, "\n", { plain = true }))
  return table.concat(vim.list_slice(lines, math.max(1, #lines - 4)), "\n")
end

local start -- forward declaration: handle_exit restarts

---@param gen pi_rpc.Generation
---@param code integer
---@param signal integer
local function handle_exit(gen, code, signal)
  local tail = stderr_tail(gen) -- before this function's own log line
  log_line(("daemon exited (code %s, signal %s)"):format(code, signal))
  if gen ~= current then
    return -- an old daemon we already replaced
  end
  current = nil
  M.info = nil
  if gen.stopping then
    emit_life("stopped")
    return
  end
  local msg = ("the daemon exited unexpectedly (code %s, signal %s)"):format(code, signal)
  if tail ~= "" then
    msg = msg .. ":\n" .. tail
  end
  emit_life("died", msg)
  for _, call in ipairs(gen.queue) do
    if call[3] then
      call[3]({ code = -32603, message = msg }, nil)
    end
  end
  if not gen.ready then
    -- It never answered `initialize` (bad arguments, a broken install): another try would
    -- fail the same way.
    util.notify(msg .. "\nNot restarting. Log: " .. M.log_path() .. " (:PiLog)", vim.log.levels.ERROR)
    return
  end
  local now = vim.uv.now()
  restarts = vim.tbl_filter(function(t)
    return now - t < 60000
  end, restarts)
  if #restarts >= config.options.max_restarts then
    util.notify(msg .. "\nIt keeps dying, not restarting. Log: " .. M.log_path(), vim.log.levels.ERROR)
    return
  end
  restarts[#restarts + 1] = now
  util.notify(msg .. "\nRestarting. Log: " .. M.log_path() .. " (:PiLog)", vim.log.levels.WARN)
  start(M.session_id)
end

---@param gen pi_rpc.Generation
---@param method string
---@param params table?
---@param cb fun(err: table?, result: any)?
local function send_now(gen, method, params, cb)
  local ok, id = gen.client.request(method, params, function(err, result)
    if M.trace then
      M.trace("response", method, err, result)
    end
    if cb then
      as_owner(gen, cb, err, result)
    end
  end)
  if not ok and cb then
    cb({ code = -32603, message = "the daemon is not running" }, nil)
  end
  return id
end

---@param gen pi_rpc.Generation
local function flush(gen)
  gen.ready = true
  local queue = gen.queue
  gen.queue = {}
  for _, call in ipairs(queue) do
    send_now(gen, call[1], call[2], call[3])
  end
end

-- The steps after `initialize`, each a request whose answer starts the next; then "ready".
---@param gen pi_rpc.Generation
local function after_initialize(gen)
  local o = config.options
  local steps = {}
  if o.provider and o.model then
    steps[#steps + 1] = function(next_step)
      send_now(gen, "model/set", { provider = o.provider, modelId = o.model }, function(err, model)
        if err then
          util.notify("model/set failed: " .. tostring(err.message), vim.log.levels.ERROR)
        elseif M.info then
          M.info.model = model
        end
        next_step()
      end)
    end
  end
  if gen.resume then
    -- A restart after a crash continues the conversation the chat still shows.
    steps[#steps + 1] = function(next_step)
      send_now(gen, "session/load", { sessionId = gen.resume }, function(err)
        if err then
          log_line("could not resume session " .. gen.resume .. ": " .. tostring(err.message))
        else
          emit_life("resumed", gen.resume)
        end
        next_step()
      end)
    end
  else
    -- The first start in this Neovim may continue the folder's last conversation (resume_last).
    steps[#steps + 1] = function(next_step)
      require("pi_rpc.resume").step(function(method, params, cb)
        send_now(gen, method, params, cb)
      end, next_step)
    end
  end
  steps[#steps + 1] = function(next_step)
    send_now(gen, "state", nil, function(err, result)
      if not err and type(result) == "table" then
        M.session_id = util.get(result, "sessionId")
      end
      next_step()
    end)
  end
  local i = 0
  local function next_step()
    if gen ~= current then
      return
    end
    i = i + 1
    if steps[i] then
      steps[i](next_step)
    else
      emit_life("ready", M.info)
      flush(gen)
    end
  end
  next_step()
end

---@param gen pi_rpc.Generation
local function initialize(gen)
  local o = config.options
  local params = {
    clientInfo = { name = "pi_rpc.nvim", version = M.version },
    -- Declared only when their handlers are registered (require("pi_rpc") does that).
    capabilities = {
      approvals = o.approvals.enabled ~= false and request_handlers["approval/request"] ~= nil,
      files = o.files ~= false and request_handlers["fs/writeTextFile"] ~= nil,
    },
    approvalPolicy = M.policy or o.approvals.policy,
  }
  send_now(gen, "initialize", params, function(err, result)
    if gen ~= current then
      return
    end
    if err then
      util.notify("initialize failed: " .. tostring(err.message), vim.log.levels.ERROR)
      return
    end
    M.info = result
    after_initialize(gen)
  end)
end

--- Why the daemon cannot be started, or nil when its executable is there.
---@param argv string[]
---@return string?
local function not_startable(argv)
  if vim.fn.executable(argv[1]) == 1 then
    return nil
  end
  return ("`%s` is not an executable on PATH. Install pi-rpc (pip install pi-rpc) or set `cmd` in "
    .. "require('pi_rpc').setup() to its full path; :checkhealth pi_rpc"):format(argv[1])
end

---@param resume string? a session to continue
start = function(resume)
  local argv, cwd = config.daemon_argv()
  local why = not_startable(argv)
  if why then
    log_line("cannot start: " .. why)
    emit_life("failed", why)
    vim.schedule(function() -- after the caller's own error handling
      util.notify("cannot start the daemon: " .. why, vim.log.levels.ERROR)
    end)
    return nil
  end
  log_line("starting: " .. table.concat(argv, " "))
  ---@type pi_rpc.Generation
  local gen = {
    ready = false,
    exited = false,
    stopping = false,
    queue = {},
    log_offset = vim.fn.getfsize(M.log_path()),
    resume = resume,
  }
  gen.owner = require("pi_rpc.chats").current()
  current = gen
  local env = vim.tbl_extend("force", config.options.env or {}, { PI_RPC_NVIM_LOG = M.log_path() })
  local ok, client = pcall(vim.lsp.rpc.start, spawn_argv(argv), {
    notification = function(method, params)
      as_owner(gen, dispatch_event, method, params)
    end,
    server_request = function(method, params)
      return serve_request(gen, method, params)
    end,
    -- Called from a libuv callback, outside the main loop: only set a flag here.
    on_exit = function(code, signal)
      gen.exited = true
      vim.schedule(function()
        as_owner(gen, handle_exit, gen, code, signal)
      end)
    end,
  }, { cwd = cwd, env = env })
  if not ok then
    current = nil
    util.notify("cannot start the daemon: " .. tostring(client), vim.log.levels.ERROR)
    emit_life("failed", tostring(client))
    return nil
  end
  gen.client = client
  initialize(gen)
  return gen
end

--- Send a request, starting the daemon first if needed (calls wait for `initialize`).
--- Returns the request id when it was sent at once (nil while queued behind `initialize`).
---@param method string
---@param params table?
---@param cb fun(err: table?, result: any)?
---@return integer?
function M.request(method, params, cb)
  local gen = current
  if gen == nil or gen.exited or gen.stopping then
    gen = start()
    if gen == nil then
      if cb then
        cb({ code = -32603, message = "the daemon could not be started (:PiLog)" }, nil)
      end
      return
    end
  end
  if gen.ready then
    return send_now(gen, method, params, cb)
  else
    gen.queue[#gen.queue + 1] = { method, params, cb }
  end
end

--- Send a notification to a running daemon (dropped when none runs).
---@param method string
---@param params table?
function M.notify(method, params)
  if current and current.client and not current.exited then
    current.client.notify(method, params)
  end
end

--- Start the daemon now if it is not running.
function M.ensure()
  if current == nil or current.exited or current.stopping then
    start()
  end
end

---@param gen pi_rpc.Generation
---@param on_exit_sent fun()? called once `exit` is sent
local function begin_stop(gen, on_exit_sent)
  gen.stopping = true
  if gen.exited or not gen.client then
    return
  end
  -- shutdown aborts any run; exit then ends the process.
  gen.client.request("shutdown", nil, function()
    if not gen.exited then
      gen.client.notify("exit", nil)
    end
    if on_exit_sent then
      on_exit_sent()
    end
  end)
end

--- Stop the daemon and wait for it to exit (used on VimLeavePre, so it blocks, boundedly).
---@param timeout_ms integer?
function M.stop_sync(timeout_ms)
  local gen = current
  if gen == nil or gen.exited then
    return
  end
  timeout_ms = timeout_ms or 3000
  begin_stop(gen)
  vim.wait(timeout_ms, function()
    return gen.exited
  end, 10)
  if not gen.exited then
    gen.client.terminate() -- SIGTERM
    vim.wait(1000, function()
      return gen.exited
    end, 10)
  end
end

--- Replace the daemon with a fresh one (a new session); `cb` runs once the new one is ready.
---@param cb fun()?
function M.restart(cb)
  local old = current
  if old and not old.exited then
    begin_stop(old)
    -- A daemon that ignores `exit` is terminated after a grace period.
    vim.defer_fn(function()
      if not old.exited and old.client then
        old.client.terminate()
      end
    end, 3000)
  end
  current = nil
  M.info = nil
  M.session_id = nil
  start()
  if cb then
    M.request("state", nil, function()
      cb()
    end)
  end
end

return M
