"""A small blocking JSON-RPC client for a `pi-rpc` subprocess: the demo's and the tests' driver.

It speaks either framing over the child's real pipes, keeps every notification it receives, and
lets a caller send malformed bytes on purpose. A reader thread does the I/O, so a caller can wait
for a response or an event with a deadline instead of sleeping.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import IO, Any

import msgspec

from pi_rpc.modes.framing import JsonlFrameReader, LspFrameReader, encode_jsonl, encode_lsp

Json = dict[str, Any]


class RpcError(Exception):
    def __init__(self, error: Json) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = error.get("message", "")
        self.data = error.get("data")


class DaemonClient:
    def __init__(
        self,
        args: Sequence[str] = (),
        *,
        framing: str = "lsp",
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stderr: int | IO[bytes] | None = subprocess.PIPE,
        on_notification: Callable[[Json], None] | None = None,
    ) -> None:
        # -P: the caller's current folder is not put on sys.path, so a `types.py` (or any module
        # named like a standard one) there cannot replace the real one in the daemon.
        command = [sys.executable, "-P", "-m", "pi_rpc", "--framing", framing, *args]
        self.framing = framing
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=cwd, env=env
        )
        self._on_notification = on_notification
        self._ids = itertools.count(1)
        self._lock = threading.Condition()
        self._responses: dict[object, Json] = {}  # by the id of the request each answers
        self.notifications: list[Json] = []
        self.server_requests: list[Json] = []
        self.messages: list[Json] = []  # everything received, in order
        self.stderr_lines: list[str] = []
        self._stderr_grew = threading.Condition()  # told of each new stderr line
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._stderr_reader: threading.Thread | None = None
        if stderr is subprocess.PIPE:
            self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
            self._stderr_reader.start()

    # --- sending --------------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Json) -> None:
        body = msgspec.json.encode(message)
        self.send_raw(encode_lsp(body) if self.framing == "lsp" else encode_jsonl(body))

    def request_nowait(self, method: str, params: Json | None = None) -> int:
        msg_id = next(self._ids)
        message: Json = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return msg_id

    def notify(self, method: str, params: Json | None = None) -> None:
        message: Json = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def request(self, method: str, params: Json | None = None, timeout: float = 60) -> Any:
        return self.result(self.request_nowait(method, params), timeout)

    # --- receiving ------------------------------------------------------------------------------

    def response(self, msg_id: int, timeout: float = 60) -> Json:
        with self._lock:
            if not self._lock.wait_for(lambda: msg_id in self._responses or self._closed, timeout):
                raise TimeoutError(f"no response to request {msg_id} within {timeout}s")
            if msg_id not in self._responses:
                raise ConnectionError(f"daemon closed its output before answering {msg_id}")
            return self._responses.pop(msg_id)

    def result(self, msg_id: int, timeout: float = 60) -> Any:
        response = self.response(msg_id, timeout)
        if "error" in response:
            raise RpcError(response["error"])
        return response["result"]

    def events(self) -> list[Json]:
        with self._lock:
            return [n["params"] for n in self.notifications if n.get("method") == "agent/event"]

    def wait_for_event(self, predicate: Callable[[Json], bool], timeout: float = 60, start: int = 0) -> Json:
        """The first agent event at index >= start that matches."""

        def find() -> Json | None:
            events = [n["params"] for n in self.notifications if n.get("method") == "agent/event"]
            return next((event for event in events[start:] if predicate(event)), None)

        with self._lock:
            found: list[Json] = []

            def ready() -> bool:
                event = find()
                if event is not None:
                    found.append(event)
                return event is not None or self._closed

            if not self._lock.wait_for(ready, timeout) or not found:
                raise TimeoutError("expected event did not arrive")
            return found[0]

    def wait_for_message(self, predicate: Callable[[Json], bool], timeout: float = 60, start: int = 0) -> Json:
        """The first received message at index >= start that matches (responses included)."""
        with self._lock:
            found: list[Json] = []

            def ready() -> bool:
                found[:] = [m for m in self.messages[start:] if predicate(m)][:1]
                return bool(found) or self._closed

            if not self._lock.wait_for(ready, timeout) or not found:
                raise TimeoutError("expected message did not arrive")
            return found[0]

    def wait_for_type(self, event_type: str, timeout: float = 60, start: int = 0) -> Json:
        return self.wait_for_event(lambda e: e.get("type") == event_type, timeout, start)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        reader = LspFrameReader() if self.framing == "lsp" else JsonlFrameReader()
        fd = self.proc.stdout.fileno()
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            frames = reader.feed(chunk) if chunk else reader.finish()
            for frame in frames:
                if isinstance(frame, bytes):
                    self._deliver(msgspec.json.decode(frame))
            if not chunk:
                with self._lock:
                    self._closed = True
                    self._lock.notify_all()
                return

    def _deliver(self, message: Json) -> None:
        with self._lock:
            self.messages.append(message)
            if "method" in message and "id" in message:
                self.server_requests.append(message)
            elif "method" in message:
                self.notifications.append(message)
                if self._on_notification is not None:
                    self._on_notification(message)
            else:
                self._responses[message.get("id")] = message
            self._lock.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in iter(self.proc.stderr.readline, b""):
            with self._stderr_grew:
                self.stderr_lines.append(line.decode("utf-8", "replace").rstrip("\n"))
                self._stderr_grew.notify_all()

    def wait_for_log(self, text: str, timeout: float = 60) -> bool:
        """Whether a line of the daemon's log (its stderr) containing `text` arrives within
        `timeout` seconds (the deadline only stops a hang)."""
        with self._stderr_grew:
            return self._stderr_grew.wait_for(lambda: any(text in line for line in self.stderr_lines), timeout)

    # --- ending ---------------------------------------------------------------------------------

    def close(self, timeout: float = 30) -> int:
        """Close stdin (the daemon exits on EOF) and return its exit code."""
        try:
            if self.proc.stdin is not None and not self.proc.stdin.closed:
                self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        finally:
            self._release_pipes()

    def _release_pipes(self) -> None:
        for thread in (self._reader, self._stderr_reader):
            if thread is not None:
                thread.join(5)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()

    def __enter__(self) -> DaemonClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.terminate()

    def terminate(self) -> None:
        """Make sure the child is gone and every pipe is closed (for fixtures and error paths)."""
        if self.proc.poll() is None:
            try:
                self.close(timeout=15)
                return
            except subprocess.TimeoutExpired:
                pass
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        self._release_pipes()
