"""The checkpoints acceptance scenario, one builder for every front end (JSON-RPC, Pi mode, ACP,
LSP), each with the daemon as a subprocess over real pipes and the scripted model.

In a real git work tree (a commit, uncommitted and staged work of the user's, an ignored file) a
first run edits two files, writes one, creates one with bash and deletes one with bash; a second
run edits again. A `Front` is how one front end's client does what the scenario needs: send a
prompt and wait for its run to end, list the checkpoints, and rewind to before the n-th most
recent message, answering what the front end asks as the user would. What it returns is what its
user reads: the JSON-RPC result, or the report text an ACP or LSP editor shows.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

import acp
import anyio
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)
from lsprotocol import types as lsp
from pygls.uris import to_fs_path
from pytest_lsp import LanguageClient

from pi_rpc.demo.rpc_client import DaemonClient
from tests.e2e.acp_daemon import spawn_acp
from tests.e2e.conftest import daemon_env
from tests.lsp.editor import Editor, new_client

Json = dict[str, Any]
Tree = dict[str, tuple[int, bytes | None]]

FIRST, SECOND = "first run", "second run"
FIRST_RUN = {
    "a.txt": "modified",
    "tool.sh": "modified",
    "notes/new.md": "created",
    "made.txt": "created",
    "gone.txt": "deleted",
}
SECOND_RUN = {"a.txt": "modified", "b.txt": "modified"}


def _call(name: str, **arguments: Any) -> list[Json]:
    return [{"toolCall": {"name": name, "arguments": arguments}}]


def _edit(path: str, old: str, new: str) -> list[Json]:
    return _call("edit", path=path, edits=[{"oldText": old, "newText": new}])


SCRIPT: Json = {
    "replies": [
        {
            "match": f"^{FIRST}",
            "turns": [
                _edit("a.txt", "alpha", "ALPHA"),
                _edit("tool.sh", "echo one", "echo two"),
                _call("write", path="notes/new.md", content="# new\n"),
                _call("bash", command="printf 'made\\n' > made.txt"),
                _call("bash", command="rm gone.txt"),
                [{"text": "first done"}],
            ],
        },
        {
            "match": f"^{SECOND}",
            "turns": [_edit("a.txt", "ALPHA", "OMEGA"), _edit("b.txt", "beta", "BETA"), [{"text": "second done"}]],
        },
    ]
}


def git(workspace: Path, *args: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    return subprocess.run(["git", *args], cwd=workspace, env=env, check=True, capture_output=True).stdout


def make_workspace(root: Path, with_git: bool = True) -> Path:
    """A git work tree with the user's own state in it: a commit, an uncommitted change, a staged
    new file, an ignored file, an executable and a binary file (`with_git=False`: the same files
    in a plain folder, without the git state)."""
    workspace = root / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    (workspace / "gone.txt").write_bytes(b"to be deleted\r\n\x00binary")
    (workspace / "tool.sh").write_text("#!/bin/sh\necho one\n")
    (workspace / "tool.sh").chmod(0o755)
    (workspace / ".gitignore").write_text("*.log\n")
    (workspace / "build.log").write_text("ignored\n")
    if with_git:
        git(workspace, "init", "-q")
        git(workspace, "add", "-A")
        git(workspace, "commit", "-qm", "start")
        (workspace / "b.txt").write_text("beta\nuncommitted\n")
        (workspace / "staged.txt").write_text("mine\n")
        git(workspace, "add", "staged.txt")
    return workspace.resolve()  # the paths checkpoints report are real paths


def write_script(root: Path) -> Path:
    path = root / "rewind-script.json"
    path.write_text(json.dumps(SCRIPT))
    return path


def tree(workspace: Path) -> Tree:
    """Every file and folder below the workspace but .git: its mode and bytes (None: a folder)."""
    found: Tree = {}
    for folder, folders, files in os.walk(workspace):
        folders[:] = [f for f in folders if f != ".git"]
        for name in folders:
            path = Path(folder, name)
            found[str(path.relative_to(workspace)) + "/"] = (stat.S_IMODE(path.lstat().st_mode), None)
        for name in files:
            path = Path(folder, name)
            found[str(path.relative_to(workspace))] = (stat.S_IMODE(path.lstat().st_mode), path.read_bytes())
    return found


def git_view(workspace: Path) -> tuple[bytes, bytes, bytes]:
    """The user's index file (read first: `status` without optional locks never rewrites it),
    `git status --porcelain` and `git for-each-ref`."""
    index = (workspace / ".git" / "index").read_bytes()
    status = git(workspace, "--no-optional-locks", "status", "--porcelain", "--ignored")
    return index, status, git(workspace, "for-each-ref")


@dataclass
class Outcome:
    """What a rewind told its user: the files it restored, the ones it left alone as conflicts
    (each with the diff shown), all relative to the workspace."""

    restored: set[str]
    conflicts: dict[str, str]
    text: str = ""  # the report an editor shows, when the front end shows one


class Front(Protocol):
    # False where the listing a user sees names only a message's first files (an LSP choice)
    complete: bool

    async def prompt(self, text: str) -> None: ...

    async def checkpoints(self) -> list[tuple[str, dict[str, str]]]:
        """(message text, {path: change}) of each checkpoint, the most recent first."""
        ...

    async def rewind(self, number: int, force: bool = False) -> Outcome:
        """Rewind the files to before the `number`-th most recent message (1: the last)."""
        ...


def _relative(path: str, workspace: Path) -> str:
    return os.path.relpath(path, workspace)


def _outcome(result: Json, workspace: Path) -> Outcome:
    return Outcome(
        {_relative(p, workspace) for p in result["restored"]},
        {_relative(c["path"], workspace): c["diff"] for c in result["conflicts"]},
    )


def _listing(listed: list[Json], workspace: Path) -> list[tuple[str, dict[str, str]]]:
    return [(c["text"], {_relative(f["path"], workspace): f["change"] for f in c["files"]}) for c in listed]


def report_outcome(text: str) -> Outcome:
    """An ACP or LSP report (pi_rpc/modes/rewind_choices.py's words) as what it says."""
    restored: set[str] = set()
    conflicts: dict[str, str] = {}
    for section in text.split("\n\n"):
        lines = section.splitlines()
        if lines and lines[0] == "Restored:":
            restored = {line.removeprefix("- ") for line in lines[1:]}
        if len(lines) >= 2 and lines[0].endswith(":") and lines[1] == "```diff":
            conflicts[lines[0][:-1]] = "\n".join(lines[2:])
    return Outcome(restored, conflicts, text)


# --- JSON-RPC and Pi mode: the daemon's own protocols, over DaemonClient's reader thread ----------


class JsonRpcFront:
    complete = True

    def __init__(self, client: DaemonClient, workspace: Path) -> None:
        self.client, self.workspace = client, workspace

    async def prompt(self, text: str) -> None:
        result = await anyio.to_thread.run_sync(lambda: self.client.request("prompt", {"message": text}, 120))
        assert result["stopReason"] == "stop"

    async def checkpoints(self) -> list[tuple[str, dict[str, str]]]:
        listed = await anyio.to_thread.run_sync(lambda: self.client.request("session/checkpoints"))
        return _listing(listed["checkpoints"], self.workspace)

    async def rewind(self, number: int, force: bool = False) -> Outcome:
        listed = await anyio.to_thread.run_sync(lambda: self.client.request("session/checkpoints"))
        params = {"entryId": listed["checkpoints"][number - 1]["entryId"], "restore": "files", "force": force}
        result = await anyio.to_thread.run_sync(lambda: self.client.request("session/rewind", params))
        return _outcome(result, self.workspace)


class PiModeFront:
    complete = True

    def __init__(self, client: DaemonClient, workspace: Path) -> None:
        self.client, self.workspace = client, workspace
        self._ids = 0

    def _command(self, command: Json) -> Any:
        self._ids += 1
        command_id = f"c{self._ids}"
        start = len(self.client.messages)
        self.client.send({"id": command_id, **command})
        response = self.client.wait_for_message(
            lambda m: m.get("type") == "response" and m.get("id") == command_id, 120, start
        )
        assert response["success"] is True, response
        return response.get("data")

    async def prompt(self, text: str) -> None:
        def run() -> None:
            start = len(self.client.messages)
            self._command({"type": "prompt", "message": text})
            self.client.wait_for_message(lambda m: m.get("type") == "agent_settled", 120, start)

        await anyio.to_thread.run_sync(run)

    async def checkpoints(self) -> list[tuple[str, dict[str, str]]]:
        data = await anyio.to_thread.run_sync(lambda: self._command({"type": "get_checkpoints"}))
        return _listing(data["checkpoints"], self.workspace)

    async def rewind(self, number: int, force: bool = False) -> Outcome:
        def run() -> Json:
            listed = self._command({"type": "get_checkpoints"})["checkpoints"]
            entry_id = listed[number - 1]["entryId"]
            return cast(
                Json, self._command({"type": "rewind", "entryId": entry_id, "restore": "files", "force": force})
            )

        return _outcome(await anyio.to_thread.run_sync(run), self.workspace)


@contextlib.asynccontextmanager
async def daemon_front(mode: str, workspace: Path, home: Path, script: Path) -> AsyncIterator[Front]:
    argv = ["--cwd", str(workspace), "--script", str(script)]
    if mode == "pi":
        client = DaemonClient(["--mode", "pi", *argv], framing="jsonl", env=daemon_env(home))
        front: JsonRpcFront | PiModeFront = PiModeFront(client, workspace)
    else:
        client = DaemonClient(argv, env=daemon_env(home))
        await anyio.to_thread.run_sync(lambda: client.request("initialize", {"clientInfo": {"name": "test"}}))
        front = JsonRpcFront(client, workspace)
    try:
        yield front
    finally:
        code = await anyio.to_thread.run_sync(client.close)
        assert code == 0, client.stderr_lines[-20:]


# --- ACP: the SDK's client side, picking through session/request_permission ----------------------


@dataclass
class AcpEditor:
    """An ACP client that serves files (from disk, writing what it is sent, as an editor that
    saves), answers each permission request from `answers` (option ids), and records messages."""

    answers: list[str] = field(default_factory=list)
    received: list[Json] = field(default_factory=list)
    questions: list[Json] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    asked: anyio.Event = field(default_factory=anyio.Event)
    release: anyio.Event = field(default_factory=anyio.Event)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        pass

    def observe(self, event: Any) -> None:
        if event.direction is acp.connection.StreamDirection.INCOMING:
            self.received.append(event.message)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        detail = "".join(part.content.text for part in tool_call.content or [])  # the row's text
        self.questions.append({"title": tool_call.title, "options": [o.name for o in options], "detail": detail})
        self.asked.set()
        answer = self.answers.pop(0)
        if answer == "hold":  # a dialog left open until the turn is cancelled
            await self.release.wait()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> ReadTextFileResponse:
        return ReadTextFileResponse(content=await anyio.Path(path).read_text())

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.writes.append(path)
        await anyio.Path(path).write_text(content)
        return WriteTextFileResponse()

    def messages_text(self) -> str:
        """The agent's message chunks since the last call, joined: what the user reads."""
        chunks = [
            m["params"]["update"]["content"]["text"]
            for m in self.received
            if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        ]
        self.received.clear()
        return "".join(chunks)


class AcpFront:
    complete = True

    def __init__(self, conn: Any, session_id: str, editor: AcpEditor, workspace: Path) -> None:
        self.conn, self.session_id, self.editor, self.workspace = conn, session_id, editor, workspace

    async def prompt(self, text: str) -> None:
        response = await self.conn.prompt(session_id=self.session_id, prompt=[acp.text_block(text)])
        assert response.stop_reason == "end_turn"

    async def say(self, text: str) -> str:
        """Send `text` as a prompt; the agent's answer."""
        self.editor.messages_text()
        await self.prompt(text)
        return self.editor.messages_text()

    async def checkpoints(self) -> list[tuple[str, dict[str, str]]]:
        """The numbered listing `/rewind` prints when its argument is not one it takes."""
        text = await self.say("/rewind list")
        listed: list[tuple[str, dict[str, str]]] = []
        for line in text.splitlines():
            if line[:1].isdigit():
                listed.append((line.split("“", 1)[1].rsplit("”", 1)[0], {}))
            elif line.startswith("   - ") and not line.startswith("   - not captured"):
                path, _, change = line.removeprefix("   - ").rpartition(" (")
                listed[-1][1][path] = change.rstrip(")")
        return listed

    async def rewind(self, number: int, force: bool = False) -> Outcome:
        # The picks a user makes: the message, "Files only", then keep or overwrite conflicts.
        self.editor.answers = [str(number - 1), "0", "1" if force else "0"]
        return report_outcome(await self.say("/rewind"))


@contextlib.asynccontextmanager
async def acp_front(workspace: Path, home: Path, script: Path) -> AsyncIterator[AcpFront]:
    editor = AcpEditor()
    argv = ["-m", "pi_rpc", "--mode", "acp", "--cwd", str(workspace), "--script", str(script)]
    async with spawn_acp(editor, argv, home) as (conn, process):
        files = FileSystemCapabilities(read_text_file=True, write_text_file=True)
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=ClientCapabilities(fs=files))
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="auto")
        yield AcpFront(conn, session.session_id, editor, workspace)
    assert process.returncode == 0


# --- LSP: pytest-lsp's client, picking through window/showMessageRequest -------------------------


# How the LSP server's message about a rewind begins (pi_rpc/modes/lsp/rewind.py).
REPORTS = ("Pi rewound", "Rewound")


class LspFront:
    complete = False

    def __init__(self, client: LanguageClient, workspace: Path, editor: Editor) -> None:
        self.client, self.workspace, self.editor = client, workspace, editor
        self._until = editor.until
        self.answers: list[str] = []  # action titles, or a prefix of one
        self.questions: list[lsp.ShowMessageRequestParams] = []

        @client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)  # type: ignore[untyped-decorator]
        def ask(params: lsp.ShowMessageRequestParams) -> lsp.MessageActionItem | None:
            self.questions.append(params)
            wanted = self.answers.pop(0)
            titles = [a.title for a in params.actions or []]
            return next((lsp.MessageActionItem(title=t) for t in titles if t.startswith(wanted)), None)

    def _ends(self) -> int:
        return sum(isinstance(p, lsp.WorkDoneProgressEnd) for r in self.client.progress_reports.values() for p in r)

    async def execute(self, command: str, *arguments: Any) -> Any:
        params = lsp.ExecuteCommandParams(command=command, arguments=list(arguments))
        return await self.client.workspace_execute_command_async(params)

    async def prompt(self, text: str) -> None:
        """The run, until the user has its answer: the progress ends, then the answer's document
        is shown (after the end, so a rewind asked at the end alone could see it arrive)."""
        ends, documents = self._ends(), len(self.client.shown_documents)
        await self.execute("pi.prompt", text)
        await self._until(lambda: self._ends() > ends and len(self.client.shown_documents) > documents)

    async def checkpoints(self) -> list[tuple[str, dict[str, str]]]:
        """The choices the first question offers (then dismissed): each message and its files."""
        asked = len(self.questions)
        self.answers = ["(none)"]
        await self.execute("pi.rewind")
        await self._until(lambda: len(self.questions) > asked)
        listed = []
        for action in self.questions[-1].actions or []:
            text, _, files = action.title.partition("”: ")
            # a choice names its first files only ("+2 more"): the test compares what it names
            changes = dict(part.rsplit(" (", 1) for part in files.split(", ") if not part.startswith("+"))
            listed.append((text.split("“", 1)[1], {path: change.rstrip(")") for path, change in changes.items()}))
        return listed

    async def rewind(self, number: int, force: bool = False) -> Outcome:
        shown = len(self.client.messages), len(self.client.shown_documents)
        self.answers = [f"{number}. ", "Files only", "Restore anyway" if force else "Keep my changes"]
        await self.execute("pi.rewind")
        report = await self._until(
            lambda: next((m.message for m in self.client.messages[shown[0] :] if m.message.startswith(REPORTS)), None)
        )
        # conflicts: the report with their diffs is a document the editor opens (told by its heading)
        for document in self.client.shown_documents[shown[1] :]:
            heading, _, body = lsp_path(document.uri).read_text().partition("\n\n")
            if heading == "# Rewind conflicts":
                return report_outcome(body)
        return report_outcome(report)


def lsp_path(uri: str) -> Path:
    path = to_fs_path(uri)
    assert path is not None
    return Path(path)


@contextlib.asynccontextmanager
async def lsp_front(workspace: Path, home: Path, script: Path) -> AsyncIterator[LspFront]:
    env = daemon_env(home) | {"PI_RPC_SESSION_DIR": str(home / "sessions")}
    client, editor = new_client()
    await client.start_io(
        sys.executable, "-m", "pi_rpc", "--mode", "lsp", "--cwd", str(workspace), "--script", str(script), env=env
    )
    try:
        capabilities = lsp.ClientCapabilities(
            window=lsp.WindowClientCapabilities(
                work_done_progress=True,
                show_document=lsp.ShowDocumentClientCapabilities(support=True),
                show_message=lsp.ShowMessageRequestClientCapabilities(),
            ),
            workspace=lsp.WorkspaceClientCapabilities(apply_edit=True),
        )
        await client.initialize_session(
            lsp.InitializeParams(
                capabilities=capabilities,
                root_uri=workspace.as_uri(),
                initialization_options={"approvalPolicy": "auto"},
            )
        )
        yield LspFront(client, workspace, editor)
    finally:
        try:
            with anyio.fail_after(30):  # a guard against a hang
                await client.shutdown_session()
        finally:
            with anyio.fail_after(30):
                await client.stop()  # type: ignore[no-untyped-call]


@contextlib.asynccontextmanager
async def open_front(name: str, workspace: Path, home: Path, script: Path) -> AsyncIterator[Front]:
    """The scenario's client for the front end `name`: jsonrpc, pi, acp or lsp."""
    opened: contextlib.AbstractAsyncContextManager[Front]
    if name == "acp":
        opened = acp_front(workspace, home, script)
    elif name == "lsp":
        opened = lsp_front(workspace, home, script)
    else:
        opened = daemon_front(name, workspace, home, script)
    async with opened as front:
        yield front
