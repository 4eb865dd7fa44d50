"""A session's history: its transcript's entries, the file they are kept in, its id and name.

`AgentSession` owns one `SessionHistory` and passes its public methods through; the history holds
the agent only to replace its messages when another transcript is loaded, branched or started.
Aborting a run first is the session's part: nothing here awaits.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from pi_rpc.agent import Agent, AgentEvent, EntryAppended, MessageEnd
from pi_rpc.ai import Message
from pi_rpc.session.configuration.config import SessionConfig
from pi_rpc.session.refusals import InvalidArgument, UnknownSessionOrEntry
from pi_rpc.session.storage.entries import SessionEntries, SessionEntry
from pi_rpc.session.storage.entry_kinds import Entry
from pi_rpc.session.storage.session_ids import new_session_id
from pi_rpc.session.storage.store import (
    SessionFile,
    SessionSummary,
    find_session,
    find_session_anywhere,
    list_sessions,
    new_session_path,
    open_session,
    other_workspace,
    other_workspace_message,
    read_header,
)


class SessionNotFoundError(UnknownSessionOrEntry, LookupError):
    pass


class OtherWorkspaceSessionError(SessionNotFoundError):
    """A session of another workspace: sessions stay with their workspace (docs/SECURITY.md)."""


class NothingToCloneError(SessionNotFoundError):
    """`clone` of a session whose branch holds no message yet."""

    def __init__(self) -> None:
        super().__init__("Cannot clone session: no current entry selected")


class SessionHistory:
    def __init__(self, agent: Agent, config: SessionConfig) -> None:
        self._agent = agent
        self._config = config
        self.session_id = new_session_id()
        self.session_name: str | None = None
        self.entries = SessionEntries()
        self._file: SessionFile | None = None
        # What the file is made with when the first message comes: the session it came from (Pi's
        # `parentSession`), a path the command line named, and the settings entries made before.
        self._parent_session: str | None = None
        self._path: Path | None = None
        self._planned: Path | None = None  # the name `session_path` reported before the file existed
        self._unwritten: list[Entry] = []
        # What the user's commands printed while a run streamed: joins the transcript before the
        # next prompt, so tool calls and their results stay adjacent (Pi defers them the same way).
        self.pending_bash: list[Message] = []
        agent.subscribe(self._persist)

    # --- the file -------------------------------------------------------------------------------

    def _persist(self, event: AgentEvent) -> None:
        if isinstance(event, MessageEnd):
            self.keep(self.entries.add_message(event.message))

    def keep(self, entry: Entry) -> None:
        """Write a new entry to the session's file, when the session keeps one."""
        if not self._config.persistence.persist:
            return
        self._open_file().write_entry(entry)

    def omit_from_context(self, message: Message) -> None:
        """`message` (a failed reply that auto-retry replaces) leaves the model's context: the
        file keeps it and says so with a `context_edit` entry, which clients are told of
        (`entry_appended`), as Pi 1.6.0 does; a reload leaves it out too."""
        target = self.entries.entry_id_of(message)
        if target is None:
            return
        entry = self.entries.add_context_edit(target)
        self.keep(entry)
        self._agent.emit(EntryAppended(entry=msgspec.to_builtins(entry)))

    # --- a tool's own entries (agent.CustomEntries: codemode's store) ------------------------------

    def branch_data(self, custom_type: str) -> list[Any]:
        return self.entries.custom_data(custom_type)

    def append(self, custom_type: str, data: Any) -> None:
        """A tool's state as a `custom` entry, written and told to clients (`entry_appended`), as
        Pi 1.6.0 appends an extension's entry."""
        entry = self.entries.add_custom(custom_type, data)
        self.keep(entry)
        self._agent.emit(EntryAppended(entry=msgspec.to_builtins(entry)))

    def keep_setting(self, entry: Entry) -> None:
        """A settings entry (model, thinking level): written at once to a file that exists, else
        with the first message, so that a session nobody prompted leaves no file."""
        if self._file is None:
            self._unwritten.append(entry)
        else:
            self.keep(entry)

    def _open_file(self) -> SessionFile:
        if self._file is None:  # created on the first entry: an unused daemon leaves no file
            self._file = SessionFile.create(
                self._config.cwd,
                self.session_id,
                self._config.persistence.root,
                parent_session=self._parent_session,
                path=self._path,
                planned=self._planned_path(),
            )
            for entry in self._unwritten:
                self._file.write_entry(entry)
            self._unwritten.clear()
        return self._file

    def save(self) -> None:
        """Write the session's file now, before any message: a session a client made and has
        not prompted yet can then be listed and loaded (ACP `session/new`)."""
        if self._config.persistence.persist:
            self._open_file()

    @property
    def session_file(self) -> str | None:
        return str(self._file.path) if self._file is not None else None

    def session_path(self) -> str | None:
        """The file the session is kept in, or will be once its first message comes (Pi 1.6.0's
        `get_state.sessionFile` names it before it exists); None when the session keeps none.
        The path is fixed here, so the file is made where this said."""
        if self._file is not None or not self._config.persistence.persist:
            return self.session_file
        if self._path is not None:
            return str(self._path)
        if self._planned_path() is None:
            self._planned = new_session_path(self._config.cwd, self.session_id, self._config.persistence.root)
        return str(self._planned)

    def _planned_path(self) -> Path | None:
        """The name reported before the file existed, while it still names this session's id
        (the command line's `--session-id` may come after)."""
        planned = self._planned
        return planned if planned is not None and planned.name.endswith(f"_{self.session_id}.jsonl") else None

    def flush_pending_bash(self) -> None:
        """The user's commands run while a run streamed join the transcript (a run starts, or settles)."""
        for message in self.pending_bash:
            self._agent.messages.append(message)
            self._persist(MessageEnd(message=message))
        self.pending_bash.clear()

    # --- other transcripts ----------------------------------------------------------------------

    def list_sessions(self) -> list[SessionSummary]:
        return list_sessions(self._config.cwd, self._config.persistence.root)

    def load(self, session_id: str) -> None:
        """Continue a stored session of this workspace; one of another workspace is refused (an
        editor opens it with that workspace's cwd), named so the user knows where it is."""
        root = self._config.persistence.root
        path = find_session(self._config.cwd, session_id, root)
        if path is None:
            elsewhere = find_session_anywhere(session_id, root)
            other = other_workspace(elsewhere, self._config.cwd) if elsewhere is not None else None
            if other is not None:
                raise OtherWorkspaceSessionError(other_workspace_message(session_id, other))
            raise SessionNotFoundError(f"Session not found: {session_id}")
        try:
            header, entries, file = open_session(path)
        except (OSError, ValueError, IndexError) as exc:
            raise SessionNotFoundError(f"Session {session_id} cannot be read: {exc}") from exc
        self._replace(entries, header.id, file)

    def resume(self, path: Path) -> None:
        """Continue the session stored at `path`, when it is this workspace's."""
        other = other_workspace(path, self._config.cwd)
        if other is not None:
            raise OtherWorkspaceSessionError(other_workspace_message(str(path), other))
        try:
            header, entries, file = open_session(path)
        except (OSError, ValueError, IndexError) as exc:
            raise SessionNotFoundError(f"Session {path} cannot be read: {exc}") from exc
        self._replace(entries, header.id, file)

    def fork(self, entry_id: str) -> str:
        """Continue as a new session of what came before the user message `entry_id`; returns that
        message's text."""
        text = self.entries.fork_text(entry_id)
        if text is None:
            raise SessionNotFoundError(f"Invalid entry ID for forking: {entry_id}")
        self._branch(self.entries.branched(self.entries.entries[entry_id].parent_id))
        return text

    def clone(self) -> None:
        """Continue as a new session of the whole current branch (which must hold a message)."""
        if not self.entries.has_messages():
            raise NothingToCloneError()
        self._branch(self.entries.branched(self.entries.leaf))

    def fork_file(self, source: Path) -> None:
        """Continue as a new session of this workspace holding every entry of the session file at
        `source`, whichever workspace it belongs to (Pi's `--fork`)."""
        try:
            _, entries, _ = open_session(source)
        except (OSError, ValueError, IndexError) as exc:
            raise SessionNotFoundError(f"Cannot fork: source session file is empty or invalid: {source}") from exc
        self._branch(entries, every_entry=True, parent=str(source))

    def _branch(self, entries: SessionEntries, *, every_entry: bool = False, parent: str | None = None) -> None:
        """Continue as a new session of `entries` (the branch, or every entry), written to a new
        file with their ids whose header names the session it came from."""
        session_id = new_session_id()
        parent = parent if parent is not None else self.session_file
        new_file = None
        if self._config.persistence.persist and entries.entries:
            new_file = SessionFile.create(
                self._config.cwd, session_id, self._config.persistence.root, parent_session=parent
            )
            for entry in entries.entries.values() if every_entry else entries.branch():
                new_file.write_entry(entry, entries.line_of(entry))
        self._replace(entries, session_id, new_file, parent=parent)

    def start_new(self, parent_session: str | None = None) -> None:
        """An empty transcript under a new id; its file is made with its first entry."""
        self._replace(SessionEntries(), new_session_id(), None, parent=parent_session)

    def start_at(self, path: Path) -> None:
        """An empty transcript to be kept at `path`, a file that does not exist yet (Pi's
        `--session` of a new file): made there with its first entry."""
        self.start_new()
        self._path = path

    def _replace(
        self, entries: SessionEntries, session_id: str, file: SessionFile | None, parent: str | None = None
    ) -> None:
        self._agent.clear_queues()
        self.pending_bash.clear()
        self.entries = entries
        self._agent.messages[:] = entries.context()
        self.session_id = session_id
        self.session_name = entries.name()  # a loaded session's, or a branch's, as its entries say
        self._file = file
        self._parent_session = parent
        self._path = None
        self._planned = None
        self._unwritten.clear()

    # --- reading it -----------------------------------------------------------------------------

    def fork_points(self) -> list[tuple[str, str]]:
        """(entry id, text) of every user message, the places a session can be forked at. The id
        is the message's entry id in the session file: it survives compactions and reloads."""
        return self.entries.fork_points()

    def after(self, since: str | None = None, limit: int | None = None) -> tuple[list[SessionEntry], str | None]:
        """The current branch's entries after `since` (all when None) and the leaf's id: a
        client's durable cursor. Raises `EntryNotOnBranchError` for a `since` not on the branch."""
        return self.entries.after(since, limit), self.entries.leaf

    def export_html(
        self, output_path: str | None = None, system_prompt: str | None = None, tools: Sequence[tuple[str, str]] = ()
    ) -> str:
        """Write the session as an HTML page (Pi's `export_html`): every entry of the branch, what
        compactions summarised too, after the system prompt and the (name, description) of each
        active tool. Returns its absolute path; default `pi-session-{id}.html` in the workspace."""
        path = Path(self._config.cwd, output_path or f"pi-session-{self.session_id}.html").resolve()
        title = self.session_name or f"pi-rpc session {self.session_id}"
        header = read_header(self._file.path) if self._file is not None else None
        # Imported here: the page's writer and `html` are for this command alone, not every daemon.
        from pi_rpc.session.storage.export_html import session_html

        page = session_html(
            title,
            self.entries,
            session_id=self.session_id,
            started=header.timestamp if header is not None else None,
            system_prompt=system_prompt,
            tools=tools,
        )
        path.write_text(page, encoding="utf-8")
        return str(path)

    def command_line_identity(self, session_id: str | None, name: str | None) -> None:
        """The id (a new session's) and name the command line gave (Pi's `--session-id`, `--name`)."""
        if session_id is not None:
            self.session_id = session_id
        if name is not None:
            self.set_name(name)

    def set_name(self, name: str) -> str:
        name = name.strip()
        if not name:
            raise InvalidArgument("Session name cannot be empty")
        # Pi's `session_info` entry: the name outlives a reload, and Pi shows it too.
        self.keep(self.entries.add_session_info(name))
        self.session_name = name
        return name
