"""Start the test MCP server (tests/mcp/server.py) as stdio config or as HTTP on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pi_rpc.tools.mcp_config import McpServerConfig

SERVER = Path(__file__).parent / "server.py"


def server_marker(name: str) -> str:
    """What the test server configured as `name` by this test process carries in its environment:
    the process id tells it apart from the servers of tests running beside it (xdist workers)."""
    return f"{name}@{os.getpid()}"


def stdio_config(name: str = "testkit", *, extra: bool = False) -> McpServerConfig:
    """`extra`: with the server's extra tools (`flood`, `weather.now`, `weather-now`)."""
    return McpServerConfig(
        name=name,
        command=sys.executable,
        args=[str(SERVER), "stdio", *(["--extra"] if extra else [])],
        env={"PI_RPC_TEST_MCP": server_marker(name)},
    )


def mcp_json_entry(name: str = "testkit", *, extra: bool = False, **fields: object) -> dict[str, object]:
    """The stdio test server as an entry of Pi's mcp.json, with Pi's other `fields`."""
    config = stdio_config(name, extra=extra)
    return {"command": config.command, "args": config.args, "env": config.env, **fields}


def server_pids(name: str) -> list[int]:
    """Live processes of the stdio test server this test process configured as `name`."""
    marker = f"PI_RPC_TEST_MCP={server_marker(name)}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as environ:
                    if marker in environ.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:
                continue
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def http_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The server on streamable HTTP; yields its URL once it accepts connections."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):  # a guard against a hang, not a timing assertion
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, "the MCP test server exited"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.kill()
        proc.wait()
