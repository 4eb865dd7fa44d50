"""Pi mode's session details as Pi 0.73.1 has them, in-process: the `parentSession` of a session's
file, `clone` of an empty session, `get_last_assistant_text`, the `thinking_level_changed` and
`session_info_changed` events, the model and level a session records and resumes on, the cycling
scope, and newer Pi's `get_entries` and `get_tree`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from pi_rpc.ai.providers.faux import FAUX_MODEL
from pi_rpc.ai.types import AssistantMessage, StopReason, TextContent, ThinkingContent
from pi_rpc.modes.pi.entries import tree
from pi_rpc.modes.pi.server import PiDaemon, last_assistant_text
from pi_rpc.session.configuration.config import ModelStart, RetryConfig
from pi_rpc.session.models.patterns import ScopedModel
from pi_rpc.session.session import ModelChoice, SessionConfig
from pi_rpc.session.storage.entries import SessionEntries

from ..session.helpers import reply, script, scripted_choice, session_config
from .pi_harness import Pi, pi_mode
from .pipes import serve_over_pipes

pytestmark = pytest.mark.anyio

HELLO = reply("^hello", [{"text": "  Hello there.  \n"}])
AGAIN = reply("^again", [{"text": "Again."}])
THINKER = msgspec.structs.replace(FAUX_MODEL, id="thinker", name="Thinker", reasoning=True)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def two_models(
    workspace: Path,
    resume_from: Path | None = None,
    pinned: bool = False,
    scoped: list[ScopedModel] | None = None,
) -> SessionConfig:
    """The scripted model and a reasoning twin of it, both reachable (as two models of models.json);
    `pinned`: the command line chose the model and the level."""
    plain = scripted_choice(script(HELLO, AGAIN))
    thinker = ModelChoice(model=THINKER, stream_fn=plain.stream_fn, scripted=True)
    choices = {(m.model.provider, m.model.id): m for m in (plain, thinker)}
    models = ModelStart(
        choice=plain,
        default_thinking_level="medium",
        model_pinned=pinned,
        thinking_pinned=pinned,
        available=lambda: [plain.model, thinker.model],
        resolve=lambda provider, model_id: choices.get((provider, model_id)),
        scoped=scoped or [],
    )
    return session_config(workspace, None, models=models, resume_from=resume_from)


async def answered(pi: Pi, command_id: str, text: str) -> None:
    """Prompt and wait for that run to settle."""
    start = len(pi.peer.lines)
    await pi.data({"id": command_id, "type": "prompt", "message": text})
    await pi.peer.wait_for(lambda line: line.get("type") == "agent_settled", start)


def header_of(path: str) -> dict[str, Any]:
    header: dict[str, Any] = json.loads(Path(path).read_text().splitlines()[0])
    return header


def kinds_of(path: str) -> list[str]:
    return [json.loads(line)["type"] for line in Path(path).read_text().splitlines()[1:]]


async def test_new_fork_and_clone_name_the_session_they_came_from(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, script(HELLO, AGAIN))) as pi:
        await answered(pi, "1", "hello")
        first = (await pi.data({"id": "2", "type": "get_state"}))["sessionFile"]
        assert "parentSession" not in header_of(first)
        await pi.data({"id": "3", "type": "clone"})
        cloned = (await pi.data({"id": "4", "type": "get_state"}))["sessionFile"]
        assert header_of(cloned)["parentSession"] == first
        [point] = (await pi.data({"id": "5", "type": "get_fork_messages"}))["messages"]
        # Forking at the first message leaves nothing before it: the new session's file is made
        # with its first message, and still names its parent.
        await pi.data({"id": "6", "type": "fork", "entryId": point["entryId"]})
        await answered(pi, "7", "again")
        forked = (await pi.data({"id": "8", "type": "get_state"}))["sessionFile"]
        assert header_of(forked)["parentSession"] == cloned
        await pi.data({"id": "9", "type": "new_session", "parentSession": "/elsewhere/parent.jsonl"})
        await answered(pi, "10", "hello")
        fresh = (await pi.data({"id": "11", "type": "get_state"}))["sessionFile"]
        assert fresh not in (first, cloned, forked)
        assert header_of(fresh)["parentSession"] == "/elsewhere/parent.jsonl"


async def test_cloning_a_session_with_no_message_is_refused(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, script(HELLO))) as pi:
        refused = await pi.call({"id": "1", "type": "clone"})
        assert refused["success"] is False
        assert refused["error"] == "Cannot clone session: no current entry selected"


def assistant(*content: TextContent | ThinkingContent, stop_reason: StopReason = "stop") -> AssistantMessage:
    return AssistantMessage(
        content=list(content), api="faux", provider="faux", model="scripted", stop_reason=stop_reason
    )


def test_the_last_assistant_text_is_trimmed_and_skips_an_empty_aborted_reply() -> None:
    answered = assistant(ThinkingContent(thinking="hmm"), TextContent(text="  Done.\n"))
    aborted = assistant(stop_reason="aborted")
    blank = assistant(TextContent(text="  "))
    assert last_assistant_text([answered, aborted]) == "Done."
    assert last_assistant_text([answered, blank]) is None
    assert last_assistant_text([aborted]) is None


async def test_get_last_assistant_text_over_the_wire_is_trimmed(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, script(HELLO))) as pi:
        assert await pi.data({"id": "1", "type": "get_last_assistant_text"}) == {"text": None}
        await answered(pi, "2", "hello")
        assert await pi.data({"id": "3", "type": "get_last_assistant_text"}) == {"text": "Hello there."}


async def test_level_and_name_changes_are_announced_before_their_response(workspace: Path) -> None:
    async with pi_mode(two_models(workspace)) as pi:
        start = len(pi.peer.lines)
        await pi.data({"id": "1", "type": "set_thinking_level", "level": "high"})  # no reasoning: stays off
        await pi.data({"id": "2", "type": "set_model", "provider": "faux", "modelId": "thinker"})
        await pi.data({"id": "3", "type": "set_thinking_level", "level": "high"})
        await pi.data({"id": "4", "type": "set_thinking_level", "level": "high"})  # unchanged: silent
        await pi.data({"id": "5", "type": "set_session_name", "name": "  my work "})
        seen = [
            (line["type"], line.get("id") or line.get("level") or line.get("name"))
            for line in pi.peer.lines[start:]
            if line["type"] != "queue_update"
        ]
        # From a model without reasoning the default level comes back (Pi's model switch).
        assert seen == [
            ("response", "1"),
            ("thinking_level_changed", "medium"),
            ("response", "2"),
            ("thinking_level_changed", "high"),
            ("response", "3"),
            ("response", "4"),
            ("session_info_changed", "my work"),
            ("response", "5"),
        ]


async def test_a_resumed_session_goes_on_with_the_model_and_level_it_recorded(workspace: Path) -> None:
    async with pi_mode(two_models(workspace)) as pi:
        await pi.data({"id": "1", "type": "set_model", "provider": "faux", "modelId": "thinker"})
        await pi.data({"id": "2", "type": "set_thinking_level", "level": "low"})
        await answered(pi, "3", "hello")
        path = (await pi.data({"id": "4", "type": "get_state"}))["sessionFile"]
    kinds = kinds_of(path)
    assert kinds[:2] == ["model_change", "thinking_level_change"]  # what the session started on
    assert kinds.count("model_change") == 2 and kinds.count("thinking_level_change") == 3
    # A new daemon on the plain model at the default level resumes on what the file recorded.
    async with pi_mode(two_models(workspace, resume_from=Path(path))) as pi:
        state = await pi.data({"id": "1", "type": "get_state"})
        assert (state["model"]["id"], state["thinkingLevel"]) == ("thinker", "low")
    # Unless the command line chose the model and the level.
    pinned = two_models(workspace, resume_from=Path(path), pinned=True)
    async with pi_mode(pinned) as pi:
        state = await pi.data({"id": "1", "type": "get_state"})
        assert (state["model"]["id"], state["thinkingLevel"]) == ("scripted", "off")
    assert kinds_of(path) == kinds  # resuming wrote nothing: the file records a level already


async def test_cycle_model_walks_the_scope_at_the_levels_it_names(workspace: Path) -> None:
    scope = [ScopedModel(THINKER, "high"), ScopedModel(FAUX_MODEL, None)]
    async with pi_mode(two_models(workspace, scoped=scope)) as pi:
        first = await pi.data({"id": "1", "type": "cycle_model"})
        assert (first["model"]["id"], first["thinkingLevel"], first["isScoped"]) == ("thinker", "high", True)
        second = await pi.data({"id": "2", "type": "cycle_model"})
        assert (second["model"]["id"], second["isScoped"]) == ("scripted", True)
    async with pi_mode(two_models(workspace)) as pi:
        unscoped = await pi.data({"id": "1", "type": "cycle_model"})
        assert (unscoped["model"]["id"], unscoped["isScoped"]) == ("thinker", False)


async def test_get_entries_lists_every_entry_after_a_cursor(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, script(HELLO, AGAIN))) as pi:
        await answered(pi, "1", "hello")
        listed = await pi.data({"id": "2", "type": "get_entries"})
        entries = listed["entries"]
        assert [e["type"] for e in entries][:2] == ["model_change", "thinking_level_change"]
        assert listed["leafId"] == entries[-1]["id"]
        messages = [e["message"]["role"] for e in entries if e["type"] == "message"]
        assert messages == ["system", "user", "assistant"] and entries[-1]["message"]["content"][0]["text"].strip()
        [user] = [e for e in entries if e["type"] == "message" and e["message"]["role"] == "user"]
        # Fork back before the first message and answer again: the old branch is still listed.
        await pi.data({"id": "3", "type": "fork", "entryId": user["id"]})
        await answered(pi, "4", "again")
        after = await pi.data({"id": "5", "type": "get_entries", "since": entries[1]["id"]})
        assert [e["message"]["role"] for e in after["entries"] if e["type"] == "message"] == [
            "system",
            "user",
            "assistant",
        ]
        missing = await pi.call({"id": "6", "type": "get_entries", "since": "nope"})
        assert missing["success"] is False and missing["error"] == "Entry not found: nope"


async def test_get_tree_nests_entries_under_their_parents(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, script(HELLO, AGAIN))) as pi:
        await answered(pi, "1", "hello")
        await answered(pi, "2", "again")
        data = await pi.data({"id": "3", "type": "get_tree"})
        [root] = data["tree"]
        chain = [root]
        while chain[-1]["children"]:
            [only] = chain[-1]["children"]
            chain.append(only)
        listed = (await pi.data({"id": "4", "type": "get_entries"}))["entries"]
        assert [node["entry"]["id"] for node in chain] == [e["id"] for e in listed]
        assert data["leafId"] == chain[-1]["entry"]["id"] and "label" not in root


def test_a_long_session_tree_is_not_too_deep_to_send() -> None:
    """A chain of thousands of entries: deeper than a recursive JSON encoder goes (msgspec gives up
    at a few hundred levels), so the tree is encoded one node at a time."""
    entries = SessionEntries()
    for number in range(3000):
        entries.add_message(assistant(TextContent(text=f"answer {number}")))
    raw = tree(entries)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # Python's own decoder recurses too; a JavaScript client does not
    try:
        data = json.loads(bytes(raw))
    finally:
        sys.setrecursionlimit(limit)
    depth, node = 1, data["tree"][0]
    while node["children"]:
        depth, node = depth + 1, node["children"][0]
    assert depth == 3000 and node["entry"]["message"]["content"][0]["text"] == "answer 2999"
    assert data["leafId"] == node["entry"]["id"] == entries.leaf


@pytest.mark.parametrize("asked", [False, True])
async def test_the_partial_message_goes_with_each_update_only_when_asked(workspace: Path, asked: bool) -> None:
    config = session_config(workspace, script(reply("^hello", [{"text": "one two three four", "chunk": 4}])))

    def daemon(stdin: int, stdout: int) -> PiDaemon:
        return PiDaemon(config, stdin_fd=stdin, stdout_fd=stdout, partial_messages=asked)

    async with serve_over_pipes(daemon) as peer:
        await answered(Pi(peer), "1", "hello")
        updates = [line for line in peer.lines if line["type"] == "message_update"]
        final = next(line for line in reversed(peer.lines) if line["type"] == "message_end")["message"]
    assert len(updates) > 3
    if not asked:  # newer Pi's shape: the deltas alone
        assert not any("message" in u or "partial" in u["assistantMessageEvent"] for u in updates)
        return
    texts = []
    for update in updates:
        partial = update["assistantMessageEvent"]["partial"]
        assert update["message"] == partial and partial["role"] == "assistant"
        texts.append("".join(block.get("text", "") for block in partial["content"]))
    assert texts == sorted(texts, key=len) and all(final["content"][0]["text"].startswith(t) for t in texts)
    assert texts[-1] == "one two three four"


async def test_abort_retry_cancels_the_wait_for_the_next_attempt(workspace: Path) -> None:
    failing = script(reply("^hi", [{"error": "503 Service Unavailable: busy"}]))
    async with pi_mode(session_config(workspace, failing, retry=RetryConfig(base_ms=60_000))) as pi:
        await pi.data({"id": "1", "type": "prompt", "message": "hi"})
        started = await pi.event("auto_retry_start")
        assert (started["attempt"], started["delayMs"]) == (1, 60_000)
        await pi.data({"id": "2", "type": "abort_retry"})
        await pi.event("agent_settled")
        ended = await pi.event("auto_retry_end")
        assert ended == {"type": "auto_retry_end", "success": False, "attempt": 1, "finalError": "Retry cancelled"}
        assert pi.types().count("agent_start") == 1  # no second attempt
        # The failed reply left the context; the session file keeps it.
        state = await pi.data({"id": "3", "type": "get_state"})
        messages = (await pi.data({"id": "4", "type": "get_messages"}))["messages"]
        assert state["isStreaming"] is False and [m["role"] for m in messages][-1] == "user"
