#!/bin/sh
# The Neovim plugin's lint, as `make test` runs it (`make lint-nvim`): luacheck over lua/ and plugin/
# with .luacheckrc (LuaJIT and Neovim's `vim`). luacheck comes from Debian (lua-check), installed
# here when it is not on PATH; without root or apt-get this says what to install and fails, since
# `make test` cannot pass unlinted.
set -eu
cd "$(dirname "$0")/.."
if ! command -v luacheck >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "luacheck is missing: install Debian's lua-check (or \`luarocks install luacheck\`)" >&2
    exit 1
  fi
  install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends lua-check >/dev/null
  }
  # A fresh image has no package lists yet: fetch them only when the first attempt needs them.
  install || { apt-get update -qq && install; }
fi

luacheck --no-color --quiet lua plugin

# The configuration still catches what it is there for: a global nobody defined, and an assignment
# to `vim` itself; writes to its option and variable tables (vim.bo, vim.g, …) pass.
expect() { # expect WARNINGS SNIPPET: the codes luacheck reports on SNIPPET, space-separated
  got=$(printf '%s\n' "$2" | luacheck --no-color --codes --formatter plain - | sed -n 's/.*(\([EW][0-9]*\)).*/\1/p' | tr '\n' ' ')
  if [ "$got" != "$1" ]; then
    echo ".luacheckrc: luacheck reported \"$got\" on \`$2\`, expected \"$1\"" >&2
    exit 1
  fi
}
expect "W113 " 'return undefined_name'
expect "W122 " 'vim.api = nil'
expect "" 'vim.bo.filetype = "x"; vim.b[0].y = 1; vim.wo[0].wrap = false; vim.g.z = 1; vim.o.undolevels = -1'
