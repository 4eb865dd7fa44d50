"""A session's history: its transcript's entries, the file they are kept in, its id and name.

`AgentSession` owns one `SessionHistory` and passes its public methods through; the history holds
the agent only to replace its messages when another transcript is loaded, branched or started.
Aborting a run first is the session's part: nothing here awaits.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from pi_rpc.agent.agent import Agent
from pi_rpc.agent.types import AgentEvent, MessageEnd
from pi_rpc.ai.types import Message
from pi_rpc.session.config import SessionConfig
from pi_rpc.session.entries import Entry, SessionEntries, SessionEntry
from pi_rpc.session.export_html import session_html
from pi_rpc.session.store import (
    SessionFile,
    SessionSummary,
    find_session,
    find_session_anywhere,
    list_sessions,
    open_session,
)


class SessionNotFoundError(LookupError):
    pass


class SessionHistory:
    def __init__(self, agent: Agent, config: SessionConfig) -> None:
        self._agent = agent
        self._config = config
        self.session_id = uuid.uuid4().hex
        self.session_name: str | None = None
        self.entries = SessionEntries()
        self._file: SessionFile | None = None
        # What the user's commands printed while a run streamed: joins the transcript before the
        # next prompt, so tool calls and their results stay adjacent (Pi defers them the same way).
        self.pending_bash: list[Message] = []
        agent.subscribe(self._persist)

    # --- the file -------------------------------------------------------------------------------

    def _persist(self, event: AgentEvent) -> None:
        if isinstance(event, MessageEnd):
            self.keep(self.entries.add_message(event.message), event.message)

    def keep(self, entry: Entry, message: Message | None = None) -> None:
        """Write a new entry (holding `message`, when given) to the session's file, when the
        session keeps one."""
        if not self._config.persist:
            return
        if self._file is None:  # created on the first entry: an unused daemon leaves no file
            self._file = SessionFile.create(self._config.cwd, self.session_id, self._config.session_root)
        self._file.write_entry(entry, message)

    def save(self) -> None:
        """Write the session's file now, before any message: a session a client made and has
        not prompted yet can then be listed and loaded (ACP `session/new`)."""
        if self._config.persist and self._file is None:
            self._file = SessionFile.create(self._config.cwd, self.session_id, self._config.session_root)

    @property
    def session_file(self) -> str | None:
        return str(self._file.path) if self._file is not None else None

    def flush_pending_bash(self) -> None:
        """The user's commands run while a run streamed join the transcript (a run starts, or settles)."""
        for message in self.pending_bash:
            self._agent.messages.append(message)
            self._persist(MessageEnd(message=message))
        self.pending_bash.clear()

    # --- other transcripts ----------------------------------------------------------------------

    def list_sessions(self) -> list[SessionSummary]:
        return list_sessions(self._config.cwd, self._config.session_root)

    def load(self, session_id: str) -> None:
        """Continue a stored session, of this workspace or, failing that, of any other (an editor
        that lists every session loads each with its own cwd, or with the one it has open)."""
        root = self._config.session_root
        path = find_session(self._config.cwd, session_id, root) or find_session_anywhere(session_id, root)
        if path is None:
            raise SessionNotFoundError(f"Session not found: {session_id}")
        try:
            header, entries, file = open_session(path)
        except (OSError, ValueError, IndexError) as exc:
            raise SessionNotFoundError(f"Session {session_id} cannot be read: {exc}") from exc
        self._replace(entries, header.id, file)

    def resume(self, path: Path) -> None:
        """Continue the session stored at `path`."""
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
        self._branch(self.entries.branched(self.entries.entries[entry_id].get("parentId")))
        return text

    def clone(self) -> None:
        """Continue as a new session of the whole current branch."""
        self._branch(self.entries.branched(self.entries.leaf))

    def _branch(self, entries: SessionEntries) -> None:
        """Continue as a new session of `entries`, written to a new file with their ids."""
        session_id = uuid.uuid4().hex
        new_file = None
        if self._config.persist and entries.entries:
            new_file = SessionFile.create(self._config.cwd, session_id, self._config.session_root)
            for entry in entries.branch():
                new_file.write_entry(entry, entries.message_kept(entry))
        self._replace(entries, session_id, new_file)

    def start_new(self) -> None:
        """An empty transcript under a new id; its file is made with its first entry."""
        self._replace(SessionEntries(), uuid.uuid4().hex, None)

    def _replace(self, entries: SessionEntries, session_id: str, file: SessionFile | None) -> None:
        self._agent.clear_queues()
        self.pending_bash.clear()
        self.entries = entries
        self._agent.messages[:] = entries.context()
        self.session_id = session_id
        self.session_name = entries.name()  # a loaded session's, or a branch's, as its entries say
        self._file = file

    # --- reading it -----------------------------------------------------------------------------

    def fork_points(self) -> list[tuple[str, str]]:
        """(entry id, text) of every user message, the places a session can be forked at. The id
        is the message's entry id in the session file: it survives compactions and reloads."""
        return self.entries.fork_points()

    def after(self, since: str | None = None, limit: int | None = None) -> tuple[list[SessionEntry], str | None]:
        """The current branch's entries after `since` (all when None) and the leaf's id: a
        client's durable cursor. Raises `EntryNotOnBranchError` for a `since` not on the branch."""
        return self.entries.after(since, limit), self.entries.leaf

    def export_html(self, output_path: str | None = None) -> str:
        """Write the conversation as an HTML page (Pi's `export_html`); returns its absolute path.
        Default: `pi-session-{id}.html` in the workspace."""
        path = Path(self._config.cwd, output_path or f"pi-session-{self.session_id}.html").resolve()
        title = self.session_name or f"pi-rpc session {self.session_id}"
        path.write_text(session_html(title, self._agent.messages), encoding="utf-8")
        return str(path)

    def set_name(self, name: str) -> str:
        name = name.strip()
        if not name:
            raise ValueError("Session name cannot be empty")
        # Pi's `session_info` entry: the name outlives a reload, and Pi shows it too.
        self.keep(self.entries.add_session_info(name))
        self.session_name = name
        return name
