"""An editor's side of a daemon in-process: every frame it was sent, recorded."""

from __future__ import annotations

import anyio
import anyio.abc

from pi_rpc.modes.framing import JsonlFrameReader
from pi_rpc.modes.stdio import StdoutSink, read_frames


class Recorder:
    """A front end: says hello at start, echoes each line, and notes each step `serve` takes."""

    def __init__(self, stdin_fd: int, exit_on: bytes | None = None) -> None:
        self.stdin_fd = stdin_fd
        self.exit_on = exit_on
        self.steps: list[str] = []

    def frame(self, body: bytes) -> bytes:
        return b"<" + body + b">\n"

    async def start(self, tasks: anyio.abc.TaskGroup, sink: StdoutSink, stop: anyio.Event) -> None:
        self.steps.append("start")
        self.sink, self.stop = sink, stop
        sink.send(b"hello")

    async def read(self) -> None:
        self.steps.append("read")
        await read_frames(self.stdin_fd, JsonlFrameReader(), self._echo)
        self.steps.append("end of input")

    def _echo(self, frame: object) -> None:
        assert isinstance(frame, bytes)
        self.sink.send(frame)
        if frame == self.exit_on:
            self.stop.set()

    async def close(self) -> None:
        self.steps.append("close")
        self.sink.send(b"closed")  # a run's last answer goes out while the sink is open

    async def release(self) -> None:
        self.steps.append("release")
