-- luacheck's configuration for the plugin (`make lint-lua`, part of `make test`; README, Development).
-- The plugin runs on Neovim's LuaJIT: the luajit standard library plus Neovim's `vim` table.
std = "luajit"
max_line_length = 120

-- `vim` itself is not assigned to, but its option and variable tables are: `vim.bo[buf].modifiable =
-- false`, `vim.g.pi_rpc_status = …`. Every other field (vim.api, vim.fn, …) may be read.
local writable = { read_only = false, other_fields = true }
read_globals = {
  vim = {
    other_fields = true,
    fields = {
      g = writable, b = writable, w = writable, t = writable, env = writable,
      o = writable, go = writable, bo = writable, wo = writable, opt = writable, opt_local = writable,
    },
  },
}
