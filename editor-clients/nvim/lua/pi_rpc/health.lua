-- :checkhealth pi_rpc
local M = {}

function M.check()
  local health = vim.health
  local config = require("pi_rpc.config")
  local daemon = require("pi_rpc.daemon")
  health.start("pi-rpc")
  if vim.fn.has("nvim-0.11") == 1 then
    health.ok("Neovim " .. tostring(vim.version()))
  else
    health.error("Neovim 0.11 or newer is required")
  end
  local exe = config.options.cmd[1]
  if vim.fn.executable(exe) == 1 then
    health.ok(("daemon executable: %s"):format(vim.fn.exepath(exe)))
  else
    health.error(
      ("daemon executable not found: %s"):format(exe),
      { "pipx install /path/to/pi-rpc (or set `cmd` in setup() to the full path of pi-rpc)" }
    )
  end
  local argv, cwd = config.daemon_argv()
  health.info("command: " .. table.concat(argv, " "))
  if vim.fn.isdirectory(cwd) == 1 then
    health.ok("working directory: " .. cwd)
  else
    health.error("working directory does not exist: " .. cwd)
  end
  health.info("daemon log: " .. daemon.log_path() .. " (:PiLog)")

  if vim.fn.executable(exe) ~= 1 then
    return
  end
  -- `pi-rpc doctor` checks what the daemon depends on; each line starts with its level.
  local doctor = vim.system(vim.list_extend(vim.deepcopy(config.options.cmd), { "doctor", "--cwd", cwd }),
    { text = true }):wait(30000)
  local report = { ok = health.ok, info = health.info, warn = health.warn, fail = health.error }
  for line in vim.gsplit(doctor.stdout or "", "\n", { plain = true, trimempty = true }) do
    local level, text = line:match("^(%a+)%s+(.+)$")
    if report[level] then
      report[level]("doctor: " .. text)
    end
  end
  -- A real round trip: start the daemon if needed and wait for `initialize`.
  daemon.ensure()
  local ready = vim.wait(10000, daemon.is_ready, 20)
  if not ready then
    health.error("the daemon did not answer `initialize` within 10 s", { "see " .. daemon.log_path() })
    return
  end
  local info = daemon.info or {}
  local server = info.serverInfo or {}
  health.ok(
    ("daemon answers: %s %s, protocol %s"):format(server.name, server.version, tostring(info.protocolVersion))
  )
  if type(info.approvalPolicy) == "string" then
    health.info(("approval policy: %s (:PiPolicy changes it)"):format(info.approvalPolicy))
  end
  local model = type(info.model) == "table" and info.model or nil
  if model == nil then
    health.warn("no model is configured, so prompts fail", {
      "export ANTHROPIC_API_KEY or OPENAI_API_KEY before starting Neovim",
      "or add a provider with its apiKey to models.json, or set `provider`/`model` in setup()",
    })
    return
  end
  local scripted = info.scripted == true and " (scripted model: replies come from a script)" or ""
  health.info(("model: %s/%s%s"):format(tostring(model.provider), tostring(model.id), scripted))
end

return M
