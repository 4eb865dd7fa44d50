"""The built llama-server loads the test model and answers on this CPU: run by install.sh after a
build, so an instruction the CPU cannot run shows there, not as a server dying in every test.

Usage: `python smoke.py LLAMA_SERVER MODEL` (exit status 0 when the server answered `/health`
with the model loaded; 1, with the server's last lines, when it died or never got there).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

LOAD_SECONDS = 120.0  # a bound on a hang, not a figure


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def main(server: str, model: str) -> int:
    port = free_port()
    argv = [server, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-c", "256", "-t", "1"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + LOAD_SECONDS
    try:
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as answer:
                    if answer.status == 200:
                        return 0
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
    finally:
        process.kill()
        output = process.communicate()[0]
    last_lines = "\n".join(output.splitlines()[-15:])
    sys.stderr.write(f"llama-server did not load the model (exit status {process.returncode}):\n{last_lines}\n")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
