"""Installing the plugin as its README says: every command, mapping, health check and help tag is
there before the plugin's Lua is first loaded."""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pynvim  # type: ignore[import-untyped]
import pytest

from .conftest import PLUGIN

pytestmark = pytest.mark.nvim

# Loads the README's lazy.nvim spec the way lazy.nvim treats it: a spec with `lazy = false` (or
# no trigger at all) puts the plugin on 'runtimepath' at startup and calls setup(opts); one with
# `cmd`/`keys` triggers gets only stand-ins for those until one is used.
EMULATE_LAZY = r"""
local readme, dir = ...
local src = readme:match("With %[lazy%.nvim%].-```lua\n(.-)```")
local spec = assert(loadstring("return " .. src))()
local lazy = spec.lazy ~= false and (spec.cmd or spec.keys or spec.event or spec.ft) ~= nil
if lazy then
  for _, name in ipairs(spec.cmd or {}) do
    vim.api.nvim_create_user_command(name, function() end, {})
  end
  for _, key in ipairs(spec.keys or {}) do
    local lhs = type(key) == "table" and key[1] or key
    local mode = type(key) == "table" and key.mode or "n"
    vim.keymap.set(mode, lhs, function() end)
  end
else
  vim.opt.runtimepath:prepend(dir)
  vim.cmd.runtime("plugin/pi_rpc.lua")
  if spec.opts then
    require("pi_rpc").setup(spec.opts)
  end
end
return { lazy = lazy, loaded = package.loaded["pi_rpc.chat"] ~= nil }
"""


@contextlib.contextmanager
def plain_nvim(nvim_bin: Path) -> Iterator[pynvim.Nvim]:
    """A headless Neovim with nothing on its runtimepath but its own runtime."""
    nvim = pynvim.attach("child", argv=[str(nvim_bin), "--embed", "--headless", "--clean", "-n", "-i", "NONE"])
    try:
        yield nvim
    finally:
        try:
            nvim.command("qa!")
        except Exception:  # Neovim closing its end is the expected outcome
            pass
        nvim.close()


@pytest.fixture
def bare_nvim(nvim_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[pynvim.Nvim]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    with plain_nvim(nvim_bin) as nvim:
        yield nvim


def plugin_commands() -> list[str]:
    return re.findall(r'^command\("(\w+)"', (PLUGIN / "plugin" / "pi_rpc.lua").read_text(), re.M)


def test_the_readme_lazy_spec_leaves_nothing_unavailable_before_load(bare_nvim: pynvim.Nvim) -> None:
    """The old spec lazy-loaded on five commands, so :PiAbort, :PiSteer, :PiLog, … did
    not exist and <leader>px fell through to `x`, deleting a character."""
    readme = (PLUGIN / "README.md").read_text()
    result = bare_nvim.exec_lua(EMULATE_LAZY, readme, str(PLUGIN))
    assert result["loaded"] is False  # startup read no more than the commands and setup
    commands = bare_nvim.exec_lua("return vim.tbl_keys(vim.api.nvim_get_commands({}))")
    missing = sorted(set(plugin_commands()) - set(commands))
    assert missing == []
    defaults = bare_nvim.exec_lua("return dofile(... .. '/lua/pi_rpc/config.lua').defaults.keymaps", str(PLUGIN))
    modes = {"send_selection": "x"}
    for name in ("prompt", "send_selection", "abort", "toggle_chat", "rewind"):
        lhs = defaults[name]
        mapped = bare_nvim.exec_lua("local lhs, mode = ... return vim.fn.maparg(lhs, mode)", lhs, modes.get(name, "n"))
        assert mapped != "", f"{lhs} is not mapped"
    assert bare_nvim.exec_lua("return #vim.api.nvim_get_runtime_file('lua/pi_rpc/health.lua', false)") == 1
    bare_nvim.command("help pi-rpc")
    assert bare_nvim.current.buffer.name.endswith("doc/pi-rpc.txt")


PLUGS = """
local found = {}
for _, mode in ipairs({ "n", "i", "x" }) do
  for _, map in ipairs(vim.api.nvim_get_keymap(mode)) do
    if map.lhs:find("^<Plug>%(pi%-rpc%-") then
      found[map.lhs] = true
    end
  end
end
return vim.tbl_keys(found)
"""


def test_every_plug_mapping_is_there_before_setup_and_documented_in_help(bare_nvim: pynvim.Nvim) -> None:
    """Focus chat, send, stop, accept, reject, next/previous card and rewind are all bindable,
    each with its own :help tag."""
    bare_nvim.command(f"set runtimepath^={PLUGIN}")
    bare_nvim.command("runtime plugin/pi_rpc.lua")
    plugs = sorted(bare_nvim.exec_lua(PLUGS))
    doc = (PLUGIN / "doc" / "pi-rpc.txt").read_text()
    documented = sorted(set(re.findall(r"\*(<Plug>\(pi-rpc-[a-z-]+\))\*", doc)))
    assert plugs == documented
    for action in ("focus-chat", "send", "stop", "accept", "reject", "next-card", "prev-card", "rewind"):
        assert f"<Plug>(pi-rpc-{action})" in plugs
    bare_nvim.command("help <Plug>(pi-rpc-rewind)")
    assert bare_nvim.current.buffer.name.endswith("doc/pi-rpc.txt")
    assert "<Plug>(pi-rpc-rewind)" in bare_nvim.current.line
    assert bare_nvim.exec_lua("return package.loaded['pi_rpc'] == nil")  # defining them loaded nothing


def test_help_tags_are_current(nvim_bin: Path, tmp_path: Path) -> None:
    """`:help pi-rpc` needs doc/tags, regenerated whenever doc/pi-rpc.txt gains a tag."""
    doc = tmp_path / "doc"
    shutil.copytree(PLUGIN / "doc", doc)
    (doc / "tags").unlink(missing_ok=True)
    with plain_nvim(nvim_bin) as nvim:
        nvim.command(f"helptags {doc}")
    assert (PLUGIN / "doc" / "tags").read_text() == (doc / "tags").read_text(), (
        "stale: run `nvim --headless --clean -c 'helptags editor-clients/nvim/doc' -c q`"
    )
