"""A session file written by real Pi 1.6.0 (session v3 with its persisted system messages) loads
here, continues (appended in Pi's own entry format), compacts, forks, and still loads in Pi
afterwards; one written here goes to Pi, which continues, compacts and forks it, and comes back
(protocol/PROTOCOL.md, "Pi's own RPC mode")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import daemon_env
from .pi_conversations import PI_RPC, Json, Step, answer, converse, pi16_rpc
from .pi_parity import TRANSCRIPTS, agent_dir_for, loopback_server, turn

pytestmark = pytest.mark.e2e

PI_LAST_ENTRY = "3676d356"  # the newest entry of the recorded file


def copy_pi_session(folder: Path, workspace: Path, recorded: str = "pi_session.jsonl") -> Path:
    """The recorded file, its header naming `workspace` (Pi refuses a session whose folder is gone)."""
    header, *entries = (TRANSCRIPTS / recorded).read_text().splitlines()
    session = folder / recorded
    session.write_text("\n".join([json.dumps(json.loads(header) | {"cwd": str(workspace)}), *entries]) + "\n")
    return session


def test_a_pi_session_loads_continues_forks_and_still_loads_in_pi(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = copy_pi_session(tmp_path, workspace)
    with loopback_server([turn("Fixed it for you.")]) as server:
        agent_dir = agent_dir_for(tmp_path, server, {})
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir)}
        argv = [
            *PI_RPC,
            "--session",
            str(session),
        ]
        lines = converse(
            argv,
            [
                {"id": "1", "type": "get_messages"},
                {"id": "2", "type": "prompt", "message": "then fix it"},
                {"id": "3", "type": "get_fork_messages"},
                {"id": "4", "type": "get_state"},
            ],
            env,
            workspace,
        )
        [request] = server.requests
    loaded = answer(lines, "1")["messages"]
    # Pi's persisted system message (its prompt and tools) first, as Pi lists it.
    assert [m["role"] for m in loaded] == ["system", "user", "assistant", "toolResult", "assistant"]
    # The model saw the whole loaded conversation, then the new prompt.
    sent = [m["role"] for m in request.json["messages"] if m["role"] != "system"]
    assert sent == ["user", "assistant", "tool", "assistant", "user"]
    assert [m["text"] for m in answer(lines, "3")["messages"]] == ["read the readme", "then fix it"]
    assert answer(lines, "4")["sessionFile"] == str(session)

    entries = [json.loads(line) for line in session.read_text().splitlines()]
    appended = entries[8:]
    # The messages, each entry chained to the one before, from Pi's last: first a system message
    # declaring what changed, only what pi-rpc does not say as Pi did (the workspace the file was
    # recorded in; Pi's docs, which pi-rpc has none of: spec 15.12).
    assert [e["type"] for e in appended] == ["message", "message", "message"]
    assert [e["message"]["role"] for e in appended] == ["system", "user", "assistant"]
    assert appended[0]["message"]["sections"] == {"docs": None, "cwd": f"<cwd>\n{workspace}\n</cwd>"}
    assert [e["parentId"] for e in appended] == [PI_LAST_ENTRY, *(e["id"] for e in appended[:-1])]

    with loopback_server([]) as server:
        agent_dir = agent_dir_for(tmp_path / "pi", server, {})
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir)}
        pi = [
            *pi16_rpc(),
            "--session",
            str(session),
        ]
        in_pi = answer(converse(pi, [{"id": "1", "type": "get_messages"}], env, workspace), "1")["messages"]
    assert roles(in_pi) == ["user", "assistant", "toolResult", "assistant", "user", "assistant"]
    assert in_pi[-1]["content"][0]["text"] == "Fixed it for you."


def test_forking_a_pi_session_starts_a_new_file_with_what_came_before(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = copy_pi_session(tmp_path, workspace)
    original = session.read_text()
    with loopback_server([]) as server:
        agent_dir = agent_dir_for(tmp_path, server, {})
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir)}
        argv = [
            *PI_RPC,
            "--session",
            str(session),
            "--session-dir",
            str(tmp_path / "sessions"),
        ]
        lines = converse(
            argv,
            [{"id": "1", "type": "clone"}, {"id": "2", "type": "get_state"}, {"id": "3", "type": "get_messages"}],
            env,
            workspace,
        )
    assert answer(lines, "1") == {"cancelled": False}
    state = answer(lines, "2")
    assert state["sessionFile"] != str(session) and Path(state["sessionFile"]).is_file()
    assert [m["role"] for m in answer(lines, "3")["messages"]] == [
        "system",
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]
    assert session.read_text() == original  # the Pi file is untouched


def said(messages: list[Json]) -> list[tuple[str, str]]:
    """Each message's role and text (a tool call by its name, a compaction by its summary), to
    compare across programs."""
    return [
        (
            m["role"],
            m["summary"]
            if "summary" in m
            else " ".join(part.get("text", part.get("name", "")) for part in m["content"]),
        )
        for m in messages
    ]


def roles(messages: list[Json]) -> list[str]:
    """The messages' roles, system messages left out (each program declares its own prompt)."""
    return [m["role"] for m in messages if m["role"] != "system"]


def fork_the_pi_session(argv: list[str], session: Path, folder: Path, workspace: Path) -> list[Json]:
    """Continue the recorded session with one prompt, then fork at that prompt (Pi's `fork` with an
    entryId from `get_fork_messages`)."""

    def fork_at_the_new_prompt(lines: list[Json]) -> Json:
        points = answer(lines, "points")["messages"]
        return {"id": "fork", "type": "fork", "entryId": points[-1]["entryId"]}

    steps: list[Step] = [
        {"id": "loaded", "type": "get_messages"},
        {"id": "prompt", "type": "prompt", "message": "then fix it"},
        {"id": "points", "type": "get_fork_messages"},
        fork_at_the_new_prompt,
        {"id": "state", "type": "get_state"},
        {"id": "messages", "type": "get_messages"},
    ]
    with loopback_server([turn("Fixed it for you.")]) as server:
        env = daemon_env(folder / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir_for(folder, server, {}))}
        return converse(
            [*argv, "--session", str(session), "--session-dir", str(folder / "sessions")], steps, env, workspace
        )


def test_forking_a_pi_session_at_an_entry_keeps_what_came_before_and_pi_loads_the_fork(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = copy_pi_session(tmp_path, workspace)
    lines = fork_the_pi_session(PI_RPC, session, tmp_path / "pi-rpc", workspace)
    assert [m["text"] for m in answer(lines, "points")["messages"]] == ["read the readme", "then fix it"]
    assert answer(lines, "fork") == {"text": "then fix it", "cancelled": False}  # for the client to edit
    forked = Path(answer(lines, "state")["sessionFile"])
    assert forked != session and forked.is_file()
    # The fork holds what came before the prompt forked at: the conversation Pi recorded.
    loaded, ours = answer(lines, "loaded")["messages"], answer(lines, "messages")["messages"]
    assert roles(ours) == ["user", "assistant", "toolResult", "assistant"]
    # and the system message that declared pi-rpc's prompt sections before that prompt, as Pi
    # keeps the one it declares (below).
    assert said(ours) == [*said(loaded), ("system", "")]

    with loopback_server([]) as server:
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir_for(tmp_path / "pi", server, {}))}
        in_pi = answer(
            converse([*pi16_rpc(), "--session", str(forked)], [{"id": "1", "type": "get_messages"}], env, workspace),
            "1",
        )
    assert said(in_pi["messages"]) == said(ours)
    # And real Pi, forking its own copy of the file the same way, keeps the same.
    (tmp_path / "pi-copy").mkdir()
    pis_copy = copy_pi_session(tmp_path / "pi-copy", workspace)
    pis = fork_the_pi_session(pi16_rpc(), pis_copy, tmp_path / "pi-fork", workspace)
    assert answer(pis, "fork") == answer(lines, "fork")
    # Pi's prompt found the workspace moved (the file's system message names the recording's cwd):
    # it declared the new cwd in a system message of its own before the prompt, which the fork
    # keeps, as pi-rpc's fork keeps the one it declared.
    assert said(answer(pis, "messages")["messages"]) == said(ours)


def test_a_session_started_here_loads_in_pi(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sessions = tmp_path / "sessions"
    with loopback_server([turn("Hello from pi-rpc.")]) as server:
        agent_dir = agent_dir_for(tmp_path, server, {})
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir)}
        argv = [
            *PI_RPC,
            "--session-dir",
            str(sessions),
        ]
        named = {"id": "2", "type": "set_session_name", "name": "from pi-rpc"}
        converse(argv, [{"id": "1", "type": "prompt", "message": "hi"}, named], env, workspace)
        [session] = sessions.rglob("*.jsonl")
        # Our next daemon reads the name back from the file (Pi's `session_info` entry).
        state = answer(
            converse([*argv, "--session", str(session)], [{"id": "1", "type": "get_state"}], env, workspace), "1"
        )
    assert state["sessionName"] == "from pi-rpc"
    header = json.loads(session.read_text().splitlines()[0])
    assert header["type"] == "session" and header["version"] == 3 and header["cwd"] == str(workspace)
    with loopback_server([]) as server:
        agent_dir = agent_dir_for(tmp_path / "pi", server, {})
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir)}
        pi = [
            *pi16_rpc(),
            "--session",
            str(session),
        ]
        lines = converse(pi, [{"id": "1", "type": "get_messages"}, {"id": "2", "type": "get_state"}], env, workspace)
    in_pi = answer(lines, "1")["messages"]
    assert roles(in_pi) == ["user", "assistant"]
    assert in_pi[-1]["content"][0]["text"] == "Hello from pi-rpc."
    assert answer(lines, "2")["sessionName"] == "from pi-rpc"  # Pi reads our name entry as its own


def test_with_pi_coding_agent_dir_pi_and_pi_rpc_continue_each_others_sessions(tmp_path: Path) -> None:
    """No --session-dir: both keep sessions in Pi's folder under the agent folder, in Pi's layout;
    a user's bash command stays Pi's `bashExecution` message on both sides."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    pi_rpc = PI_RPC
    with loopback_server([turn("Hello from pi-rpc."), turn("Hello from Pi."), turn("Hello again.")]) as server:
        agent_dir = agent_dir_for(tmp_path, server, {})
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir)}
        env.pop("PI_RPC_SESSION_DIR", None)
        bash = {"id": "1", "type": "bash", "command": "echo from-the-user"}
        converse(pi_rpc, [bash, {"id": "2", "type": "prompt", "message": "hi"}], env, workspace)
        [session] = (agent_dir / "sessions").rglob("*.jsonl")
        assert session.parent.name == "--" + str(workspace).lstrip("/").replace("/", "-") + "--"
        pi = [*pi16_rpc(), "-c"]
        commands = [{"id": "1", "type": "get_messages"}, {"id": "2", "type": "prompt", "message": "and you?"}]
        in_pi = answer(converse(pi, commands, env, workspace), "1")["messages"]
        back = answer(converse([*pi_rpc, "-c"], [{"id": "1", "type": "get_messages"}], env, workspace), "1")
        requests = server.requests
    assert roles(in_pi) == ["bashExecution", "user", "assistant"]
    assert in_pi[0]["command"] == "echo from-the-user" and in_pi[0]["output"] == "from-the-user\n"
    # Pi sent our command to its model as it sends its own: user text.
    pi_sent = [m for m in requests[1].json["messages"] if m["role"] == "user"]
    assert "Ran `echo from-the-user`" in json.dumps(pi_sent[0])
    roles_back = [m["role"] for m in back["messages"] if m["role"] != "system"]  # our tool declarations
    assert roles_back == ["bashExecution", "user", "assistant", "user", "assistant"]
    assert back["messages"][-1]["content"][0]["text"] == "Hello from Pi."
    assert list((agent_dir / "sessions").rglob("*.jsonl")) == [session]


def test_a_session_compacted_here_loads_in_pi_from_its_summary(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sessions = tmp_path / "sessions"
    replies = [turn("answer one"), turn("answer two"), turn("THE SUMMARY")]
    with loopback_server(replies) as server:
        agent_dir = agent_dir_for(tmp_path, server, {"compaction": {"keepRecentTokens": 1000}})
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir)}
        argv = PI_RPC
        commands = [
            {"id": "1", "type": "prompt", "message": "one"},
            {"id": "2", "type": "prompt", "message": "two " + "x" * 4000},
            {"id": "3", "type": "compact"},
            {"id": "4", "type": "get_fork_messages"},
        ]
        lines = converse([*argv, "--session-dir", str(sessions)], commands, env, workspace)
    compacted = answer(lines, "3")
    [session] = sessions.rglob("*.jsonl")
    entries = [json.loads(line) for line in session.read_text().splitlines()[1:]]
    [compaction] = [e for e in entries if e["type"] == "compaction"]
    kept = next(e for e in entries if e["id"] == compaction["firstKeptEntryId"])
    assert kept["message"]["content"][0]["text"].startswith("two ") and compaction["parentId"] == entries[-2]["id"]
    assert compacted["firstKeptEntryId"] == kept["id"] and compaction["summary"] == "THE SUMMARY"
    assert compaction["details"] == compacted["details"] == {"readFiles": [], "modifiedFiles": []}  # Pi's shape
    ours = answer(lines, "4")["messages"]
    with loopback_server([]) as server:
        agent_dir = agent_dir_for(tmp_path / "pi", server, {})
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir)}
        pi = pi16_rpc()
        commands = [{"id": "1", "type": "get_messages"}, {"id": "2", "type": "get_fork_messages"}]
        lines = converse([*pi, "--session", str(session)], commands, env, workspace)
    # Pi reads the compaction as we wrote it: the system message it kept, the summary, then the kept turn.
    in_pi = answer(lines, "1")["messages"]
    assert [m["role"] for m in in_pi] == ["system", "compactionSummary", "user", "assistant"]
    assert [tool["name"] for tool in in_pi[0]["toolsAdded"]] == ["read", "bash", "edit", "write"]
    assert in_pi[1]["summary"] == "THE SUMMARY" and in_pi[2]["content"][0]["text"].startswith("two ")
    assert in_pi[0]["sections"] == compaction["systemMessage"]["sections"]
    # Pi names the fork points by the same entry ids.
    assert answer(lines, "2")["messages"] == ours


def test_a_session_pi_compacted_loads_continues_and_compacts_again_here_and_still_loads_in_pi(tmp_path: Path) -> None:
    """Pi's compaction entry (its summary with the file lists, `details: {readFiles, modifiedFiles}`)
    is the context here as in Pi: the model reads Pi's summary in Pi's words, and the next
    compaction updates it and carries the file lists over (spec 16.1, 16.2, 16.6)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = copy_pi_session(tmp_path, workspace, "pi_compacted_session.jsonl")
    [pi_compaction] = [e for e in map(json.loads, session.read_text().splitlines()[1:]) if e["type"] == "compaction"]
    pi_summary = pi_compaction["summary"]
    assert pi_summary.endswith("<read-files>\nREADME.md\n</read-files>")
    with loopback_server([turn("answer three"), turn("NEW SUMMARY")]) as server:
        agent_dir = agent_dir_for(tmp_path, server, {"compaction": {"keepRecentTokens": 400}})
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir)}
        commands = [
            {"id": "1", "type": "get_messages"},
            {"id": "2", "type": "prompt", "message": "three " + "z" * 2000},
            {"id": "3", "type": "compact"},
        ]
        lines = converse([*PI_RPC, "--session", str(session)], commands, env, workspace)
        prompted, summarising = server.requests
    loaded = answer(lines, "1")["messages"]
    # Pi's compacted context: the system message its compaction kept, then its summary.
    assert [m["role"] for m in loaded] == ["system", "compactionSummary", "user", "assistant"]
    assert loaded[0] == pi_compaction["systemMessage"]
    assert loaded[1]["summary"] == pi_summary and loaded[1]["tokensBefore"] == pi_compaction["tokensBefore"]
    # The model read Pi's summary exactly as Pi's own model would have.
    wrapped = (
        "The conversation history before this point was compacted into the following summary:"
        f"\n\n<summary>\n{pi_summary}\n</summary>"
    )
    # The same text; sent as one string where Pi sends a one-part list (every OpenAI-compatible
    # server takes the string, not every one the list: docs/CONFIGURATION.md, local servers).
    assert prompted.json["messages"][1] == {"role": "user", "content": wrapped}
    asked = summarising.json["messages"][-1]
    asked_text = asked["content"] if isinstance(asked["content"], str) else asked["content"][0]["text"]
    assert f"<previous-summary>\n{pi_summary}\n</previous-summary>" in asked_text
    result = answer(lines, "3")
    assert result["details"] == {"readFiles": ["README.md"], "modifiedFiles": []}  # carried over from Pi's
    assert result["summary"] == "NEW SUMMARY\n\n<read-files>\nREADME.md\n</read-files>"
    with loopback_server([]) as server:
        agent_dir = agent_dir_for(tmp_path / "pi", server, {})
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir)}
        in_pi = answer(
            converse([*pi16_rpc(), "--session", str(session)], [{"id": "1", "type": "get_messages"}], env, workspace),
            "1",
        )
    assert [m["role"] for m in in_pi["messages"]] == ["system", "compactionSummary", "user", "assistant"]
    assert in_pi["messages"][1]["summary"] == result["summary"]
    assert in_pi["messages"][2]["content"][0]["text"].startswith("three ")


def test_a_session_written_here_is_compacted_and_forked_by_pi_and_both_files_load_here_as_in_pi(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sessions = tmp_path / "sessions"
    settings = {"compaction": {"keepRecentTokens": 400}}
    with loopback_server([turn("answer one"), turn("answer two")]) as server:
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir_for(tmp_path, server, settings))}
        prompts = [
            {"id": str(n), "type": "prompt", "message": f"{word} " + "x" * 2000} for n, word in ((1, "one"), (2, "two"))
        ]
        converse([*PI_RPC, "--session-dir", str(sessions)], prompts, env, workspace)
    [session] = sessions.rglob("*.jsonl")

    def fork_at_four(lines: list[Json]) -> Json:
        [four] = [point for point in answer(lines, "points")["messages"] if point["text"] == "four"]
        return {"id": "fork", "type": "fork", "entryId": four["entryId"]}

    # Pi continues our file, compacts it, prompts again and forks at that prompt: the fork keeps the compaction.
    steps: list[Step] = [
        {"id": "three", "type": "prompt", "message": "three " + "z" * 2000},
        {"id": "compact", "type": "compact"},
        {"id": "four", "type": "prompt", "message": "four"},
        {"id": "compacted", "type": "get_messages"},
        {"id": "points", "type": "get_fork_messages"},
        fork_at_four,
        {"id": "state", "type": "get_state"},
        {"id": "forked", "type": "get_messages"},
    ]
    replies = [turn("answer three"), turn("PI SUMMARY"), turn("answer four")]
    with loopback_server(replies) as server:
        env = daemon_env(tmp_path / "home") | {
            "PI_CODING_AGENT_DIR": str(agent_dir_for(tmp_path / "pi", server, settings))
        }
        pis = converse([*pi16_rpc(), "--session", str(session), "--session-dir", str(sessions)], steps, env, workspace)
    assert answer(pis, "compact")["summary"].startswith("PI SUMMARY")
    assert answer(pis, "fork") == {"text": "four", "cancelled": False}
    fork = Path(answer(pis, "state")["sessionFile"])
    assert fork != session and fork.is_file()
    compacted, forked = answer(pis, "compacted")["messages"], answer(pis, "forked")["messages"]
    assert [m["role"] for m in compacted if m["role"] != "system"] == [
        "compactionSummary",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert said(forked) == said(compacted)[: len(said(forked))] and forked[-1]["role"] == "assistant"

    # Both of Pi's files load here as Pi loaded them, the summary first; the fork continues here.
    with loopback_server([turn("answer five")]) as server:
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir_for(tmp_path, server, settings))}
        ours = answer(
            converse([*PI_RPC, "--session", str(session)], [{"id": "1", "type": "get_messages"}], env, workspace), "1"
        )
        continued = converse(
            [*PI_RPC, "--session", str(fork)],
            [{"id": "1", "type": "get_messages"}, {"id": "2", "type": "prompt", "message": "five"}],
            env,
            workspace,
        )
    # Pi keeps its system message in the compaction entry (`systemMessage`): both start the compacted
    # context with it, then the summary.
    assert said(ours["messages"]) == said(compacted)
    compaction_summary = next(m for m in ours["messages"] if m["role"] == "compactionSummary")
    assert compaction_summary["summary"].startswith("PI SUMMARY")
    assert said(answer(continued, "1")["messages"]) == said(forked)
    with loopback_server([]) as server:
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir_for(tmp_path / "pi", server, {}))}
        back = answer(
            converse([*pi16_rpc(), "--session", str(fork)], [{"id": "1", "type": "get_messages"}], env, workspace), "1"
        )
    # The prompt continued here, back in Pi, after the system message that took Pi's `docs` section
    # away (pi-rpc has no installed Pi docs to name: spec 15.12).
    assert said(back["messages"]) == [*said(forked), ("system", ""), ("user", "five"), ("assistant", "answer five")]


def test_codemode_store_values_kept_here_are_loaded_by_pi_and_back(tmp_path: Path) -> None:
    """A script's `store()` writes are a `codemode-store` entry of the session file, in Pi 1.6.0's
    shape: Pi continuing the session loads them, and what Pi stored loads here (spec 5.11)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sessions = tmp_path / "sessions"

    def scripted(code: str, then: str) -> list[Any]:
        return [turn(call=("c1", "codemode", {"code": code})), turn(then)]

    def tool_text(lines: list[Json]) -> str:
        [end] = [line for line in lines if line.get("type") == "tool_execution_end"]
        return " ".join(part.get("text", "") for part in end["result"]["content"])

    prompt = [{"id": "1", "type": "prompt", "message": "go"}]
    with loopback_server(scripted('store("n", 41); return "kept"', "stored")) as server:
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir_for(tmp_path, server, {}))}
        converse([*PI_RPC, "--session-dir", str(sessions), "--tools", "+codemode"], prompt, env, workspace)
    [session] = sessions.rglob("*.jsonl")
    with loopback_server(scripted('store("m", load("n") + 1); return load("n") + 1', "loaded")) as server:
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir_for(tmp_path / "pi", server, {}))}
        in_pi = converse([*pi16_rpc(), "--session", str(session), "--tools", "+codemode"], prompt, env, workspace)
    assert tool_text(in_pi).endswith("Output:\n 42"), tool_text(in_pi)
    with loopback_server(scripted('return load("m") + 1', "back")) as server:
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir_for(tmp_path, server, {}))}
        back = converse([*PI_RPC, "--session", str(session), "--tools", "+codemode"], prompt, env, workspace)
    assert tool_text(back).endswith("Output:\n 43"), tool_text(back)
