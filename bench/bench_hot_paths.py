"""In-process micro-benchmarks of pi-rpc's hot paths, each against a naive baseline in the same run.

Run: `.venv/bin/python bench/bench_hot_paths.py [--repeat 9] [--output-mib 200]`

1. Event encoding. A realistic run's `agent/event` stream (text deltas, tool-call deltas whose
   parsed arguments grow, tail-truncated `tool_execution_update` snapshots, closing messages)
   encoded and framed the way the daemon does it (msgspec Structs -> bytes, Content-Length
   header), against what pygls' default writer does with equivalent dicts (`json.dumps`, str
   header, `.encode()`). A second baseline adds the `msgspec.to_builtins` copy that pygls would
   need before it could write our Structs at all.
2. `truncate_tail` over a 10 MB command output (short lines: the line limit cuts; long lines: the
   byte limit cuts) against a naive tail: split every line, join the last 2000, cut to 50 KB. Also
   over 200 KB, the most the daemon ever hands it (OutputAccumulator's rolling tail).
3. `OutputAccumulator` fed `--output-mib` MiB in 64 KiB chunks, with a snapshot per MiB as the bash
   tool takes them: peak traced memory (tracemalloc) against a baseline that keeps every chunk in a
   list. Time per MiB is measured in a separate untraced pass.

Times are the median of `--repeat` runs; ratios below 1 favour pi-rpc.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from statistics import median
from typing import Any

import msgspec
from daemons import source_revision

from pi_rpc.agent.types import AgentEnd, AgentToolResult, MessageEnd, MessageUpdate, ToolExecutionUpdate, TurnEnd
from pi_rpc.ai.types import (
    AssistantMessage,
    Cost,
    TextContent,
    TextDeltaEvent,
    ToolCall,
    ToolcallDeltaEvent,
    Usage,
    UserMessage,
)
from pi_rpc.modes.framing import encode_lsp
from pi_rpc.modes.jsonrpc.protocol import AgentEventNotification
from pi_rpc.tools.output import OutputAccumulator
from pi_rpc.tools.truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, truncate_tail

MIB = 1 << 20
CHUNK = 64 * 1024


def timed(fn: Callable[[], Any], repeat: int) -> float:
    """Median wall time of `repeat` calls, garbage collection off inside each."""
    samples = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return median(samples)


def row(label: str, ours: str, base: str, ratio: float) -> str:
    return f"  {label:<46} {ours:>14} {base:>14} {ratio:>8.3f}"


def header(title: str, ours: str = "pi-rpc", base: str = "baseline") -> str:
    return f"{title}\n  {'':<46} {ours:>14} {base:>14} {'ratio':>8}"


# --- 1. event encoding ------------------------------------------------------------------------


def _usage() -> Usage:
    return Usage(
        input=1200,
        output=830,
        cache_read=0,
        cache_write=0,
        total_tokens=2030,
        cost=Cost(input=0.0036, output=0.01245, cache_read=0.0, cache_write=0.0, total=0.01605),
    )


def realistic_events(text_deltas: int = 2000, arg_deltas: int = 200, snapshots: int = 50) -> list[Any]:
    """One run's events, in the shapes the agent emits (see protocol/PROTOCOL.md)."""
    words = ["the", "parser", "returns", "a", "list", "of", "tokens;", "é", "→", "naïve", "résumé", "🙂"]
    pieces = [words[i % len(words)] + (" " if i % 9 else "\n") for i in range(text_deltas)]
    events: list[Any] = [
        MessageUpdate(assistant_message_event=TextDeltaEvent(content_index=0, delta=p)) for p in pieces
    ]
    content = "x" * 40 + "".join(f"line {n}: replace the old name with the new one\n" for n in range(60))
    arguments = json.dumps({"path": "src/parser.py", "oldText": content, "newText": content.upper()})
    step = max(len(arguments) // arg_deltas, 1)
    for end in range(step, len(arguments) + step, step):
        partial = arguments[:end]
        # The parsed-so-far arguments grow with the stream, as the daemon's partial JSON does.
        parsed = {"path": "src/parser.py", "oldText": content[: min(end, len(content))]}
        events.append(
            MessageUpdate(
                assistant_message_event=ToolcallDeltaEvent(
                    content_index=1, delta=partial[end - step : end], arguments=parsed
                )
            )
        )
    output_line = "test_module_{n}.py::test_case_{n} PASSED [ {p}%]\n"
    for n in range(1, snapshots + 1):
        lines = "".join(output_line.format(n=k, p=k % 100) for k in range(n * 40 - 800, n * 40) if k >= 0)
        text, truncation = truncate_tail(lines)
        events.append(
            ToolExecutionUpdate(
                tool_call_id="call_1",
                tool_name="bash",
                args={"command": "pytest -q"},
                partial_result=AgentToolResult(
                    content=[TextContent(text=text)], details={"truncation": msgspec.to_builtins(truncation)}
                ),
            )
        )
    final = AssistantMessage(
        content=[
            TextContent(text="".join(pieces)),
            ToolCall(id="call_1", name="edit", arguments=json.loads(arguments)),
        ],
        api="openai-completions",
        provider="openai",
        model="bench-model",
        usage=_usage(),
        stop_reason="toolUse",
        timestamp=1_700_000_000_000,
    )
    events += [
        MessageEnd(message=final),
        TurnEnd(message=final, tool_results=[]),
        AgentEnd(messages=[UserMessage(content="fix the parser", timestamp=1_700_000_000_000), final]),
    ]
    return events


def encode_ours(events: list[Any]) -> int:
    encoder = msgspec.json.Encoder()
    size = 0
    for event in events:
        size += len(encode_lsp(encoder.encode(AgentEventNotification(params=event))))
    return size


def encode_pygls_default(dicts: list[dict[str, Any]]) -> int:
    """pygls 2.1.1 `JsonRPCProtocol._send_data`: json.dumps, a str header, one .encode()."""
    size = 0
    for params in dicts:
        body = json.dumps({"jsonrpc": "2.0", "method": "agent/event", "params": params})
        header = f"Content-Length: {len(body)}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"
        size += len((header + body).encode("utf-8"))
    return size


def encode_via_builtins(events: list[Any]) -> int:
    return encode_pygls_default([msgspec.to_builtins(event) for event in events])


def bench_encoding(repeat: int) -> list[str]:
    events = realistic_events()
    dicts = [msgspec.to_builtins(event) for event in events]
    ours_bytes, base_bytes = encode_ours(events), encode_pygls_default(dicts)
    ours = timed(lambda: encode_ours(events), repeat)
    base = timed(lambda: encode_pygls_default(dicts), repeat)
    copy = timed(lambda: encode_via_builtins(events), repeat)
    kinds: dict[str, int] = {}
    for event in dicts:
        kind = event["type"] if event["type"] != "message_update" else event["assistantMessageEvent"]["type"]
        kinds[kind] = kinds.get(kind, 0) + 1
    mix = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
    return [
        header(f"1. event encoding: {len(events)} events ({mix})", base="json.dumps"),
        row("time to encode + frame the stream", f"{ours * 1e3:.1f} ms", f"{base * 1e3:.1f} ms", ours / base),
        row("  ... baseline incl. to_builtins of Structs", f"{ours * 1e3:.1f} ms", f"{copy * 1e3:.1f} ms", ours / copy),
        row(
            "bytes on the wire (json.dumps escapes non-ASCII)",
            f"{ours_bytes / MIB:.2f} MiB",
            f"{base_bytes / MIB:.2f} MiB",
            ours_bytes / base_bytes,
        ),
    ]


# --- 2. truncate_tail --------------------------------------------------------------------------


def naive_tail(text: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Split everything, keep the last lines, then cut the front to the byte limit at a newline."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    kept = "\n".join(lines[-max_lines:]).encode("utf-8")
    if len(kept) > max_bytes:
        kept = kept[len(kept) - max_bytes :]
        kept = kept[kept.find(b"\n") + 1 :]
    return kept.decode("utf-8", "ignore")


def outputs() -> dict[str, str]:
    size = 10 * 1000 * 1000
    short = "".join(f"{n}\n" for n in range(1, 1_500_000))[:size]
    long_line = "".join(
        f"[{n:07d}] INFO building target //pkg/mod_{n % 97}:lib with flags -O2 -g " + "." * 120 + "\n"
        for n in range(size // 200 + 1)
    )[:size]
    return {
        "10 MB, short lines (line limit cuts)": short,
        "10 MB, 200-byte lines (byte limit cuts)": long_line,
        # What the daemon really hands truncate_tail: OutputAccumulator's rolling tail.
        "200 KB, short lines (accumulator tail)": short[-200 * 1024 :],
    }


def bench_truncate(repeat: int) -> list[str]:
    lines = [header("2. truncate_tail over command output", base="naive split")]
    for label, text in outputs().items():
        content, _ = truncate_tail(text)
        if content != naive_tail(text):
            lines.append(f"  note: the naive tail differs from truncate_tail on {label}")
        ours = timed(partial(truncate_tail, text), repeat)
        base = timed(partial(naive_tail, text), repeat)
        lines.append(row(label, f"{ours * 1e3:.2f} ms", f"{base * 1e3:.2f} ms", ours / base))
    return lines


# --- 3. OutputAccumulator ----------------------------------------------------------------------


def make_chunk(n: int) -> bytes:
    """A distinct 64 KiB piece of a build log (distinct, so a list of them really holds them)."""
    line = f"[{n:06d}] cc -c src/module_{n % 97}.c -o build/module_{n % 97}.o -O2 -Wall\n".encode()
    reps = CHUNK // len(line) + 1
    return (line * reps)[:CHUNK]


def feed_accumulator(total: int, temp_dir: str) -> tuple[int, int]:
    acc = OutputAccumulator(temp_file_prefix="pi-bench", temp_dir=temp_dir)
    snapshots = 0
    for n in range(total // CHUNK):
        acc.append(make_chunk(n))
        if n % (MIB // CHUNK) == 0:
            acc.snapshot()
            snapshots += 1
    acc.finish()
    acc.snapshot(persist_if_truncated=True)
    acc.close_temp_file()
    path = acc.full_output_path
    written = os.path.getsize(path) if path else 0
    if path:
        os.remove(path)
    return acc.retained_bytes, written


def feed_list(total: int) -> int:
    chunks: list[bytes] = []
    for n in range(total // CHUNK):
        chunks.append(make_chunk(n))
    return sum(len(c) for c in chunks)


def traced_peak(fn: Callable[[], Any]) -> tuple[int, Any]:
    gc.collect()
    tracemalloc.start()
    try:
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, result


def bench_accumulator(output_mib: int) -> list[str]:
    total = output_mib * MIB
    with tempfile.TemporaryDirectory(prefix="pi-bench-acc-") as temp_dir:
        ours_peak, (retained, written) = traced_peak(lambda: feed_accumulator(total, temp_dir))
        base_peak, kept = traced_peak(lambda: feed_list(total))
        start = time.perf_counter()
        feed_accumulator(total, temp_dir)
        ours_time = time.perf_counter() - start
        start = time.perf_counter()
        for n in range(total // CHUNK):
            make_chunk(n)
        chunk_time = time.perf_counter() - start
    per_mib = (ours_time - chunk_time) / output_mib * 1e3
    return [
        header(f"3. OutputAccumulator fed {output_mib} MiB in 64 KiB chunks", base="list of chunks"),
        row("peak traced memory", f"{ours_peak / MIB:.2f} MiB", f"{base_peak / MIB:.1f} MiB", ours_peak / base_peak),
        f"  pi-rpc keeps {retained / 1024:.0f} KiB at the end; its log file holds {written / MIB:.0f} MiB "
        f"(the list holds {kept / MIB:.0f} MiB); {per_mib:.2f} ms per MiB fed, snapshot per MiB included",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--output-mib", type=int, default=200)
    args = parser.parse_args(argv)
    revision = source_revision(None)
    load_before = os.getloadavg()
    started = time.perf_counter()
    report = [*bench_encoding(args.repeat), "", *bench_truncate(args.repeat), "", *bench_accumulator(args.output_mib)]
    load_after = os.getloadavg()
    print(
        f"pi-rpc {revision} hot paths: median of {args.repeat} runs, {os.cpu_count()} CPUs, load average "  # noqa: T201
        f"{load_before[0]:.2f} before / {load_after[0]:.2f} after, {time.perf_counter() - started:.0f} s in all; "
        "ratio = pi-rpc / baseline, below 1 favours pi-rpc"
    )
    print("\n".join(report))  # noqa: T201


if __name__ == "__main__":
    main()
