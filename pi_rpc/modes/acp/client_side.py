"""What one ACP session asks of the editor: permission for a tool call, and its files.

An `AcpSessionClient` is the session's approver and its `EditorFiles`, over the SDK's agent-side
connection. Files go through the editor only as far as it advertised (`fs.readTextFile`,
`fs.writeTextFile`); the other direction keeps using the disk. ACP has no capability for
permissions (every client must answer `session/request_permission`), so a client that answers
"method not found" is taken at its word: `on_cannot_ask` decides, once, as for a client that
cannot ask.

A file request gets the editor's `files` deadline (modes/editor_requests.py); an answer that was
too large to read, or that does not fit ACP's schema, fails it with the reason. A permission
request has no deadline of its own: the turn's cancel ends it (the SDK forgets the request, so a
late answer is dropped), and so does `permissions.timeoutSeconds` when set.
"""

from __future__ import annotations

from collections.abc import Callable

from acp import RequestError
from acp.schema import FileSystemCapabilities

from pi_rpc.agent import ApprovalRequest
from pi_rpc.modes.acp.connection import ClientConnection
from pi_rpc.modes.acp.errors import METHOD_NOT_FOUND
from pi_rpc.modes.acp.permissions import permission_decision, permission_options, permission_tool_call
from pi_rpc.modes.editor_requests import DEFAULT_DEADLINES, ClientRequestError, EditorDeadlines, within
from pi_rpc.session import ApprovalDecision
from pi_rpc.tools import local_read_operations, local_write_operations

READ_TEXT_FILE, WRITE_TEXT_FILE = "fs/read_text_file", "fs/write_text_file"


class AcpSessionClient:
    def __init__(
        self,
        conn: ClientConnection,
        session_id: str,
        fs: FileSystemCapabilities | None,
        on_cannot_ask: Callable[[], ApprovalDecision],
        deadlines: EditorDeadlines = DEFAULT_DEADLINES,
    ) -> None:
        self._conn = conn
        self._deadlines = deadlines
        self._session_id = session_id
        self._read_from_editor = bool(fs and fs.read_text_file)
        self._write_to_editor = bool(fs and fs.write_text_file)
        self._on_cannot_ask = on_cannot_ask
        self._disk_read = local_read_operations().read_file
        self._disk_write = local_write_operations().write_file

    @property
    def serves_files(self) -> bool:
        return self._read_from_editor or self._write_to_editor

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        try:
            response = await self._conn.request_permission(
                session_id=self._session_id,
                tool_call=permission_tool_call(request),
                options=permission_options(request),
            )
        except RequestError as exc:
            if exc.code == METHOD_NOT_FOUND:
                return self._on_cannot_ask()
            raise ClientRequestError(f"The client failed session/request_permission: {exc}") from exc
        return permission_decision(response.outcome)

    async def read_text_file(self, path: str) -> str:
        if not self._read_from_editor:
            # surrogateescape: the router encodes it back the same way, so the bytes round-trip.
            return (await self._disk_read(path)).decode("utf-8", errors="surrogateescape")
        try:
            response = await within(
                self._deadlines.files,
                READ_TEXT_FILE,
                self._conn.read_text_file(session_id=self._session_id, path=path),
            )
        except (RequestError, ValueError) as exc:
            raise _failed(READ_TEXT_FILE, exc) from exc
        content: str = response.content
        return content

    async def write_text_file(self, path: str, content: str) -> None:
        if not self._write_to_editor:
            await self._disk_write(path, content)
            return
        try:
            await within(
                self._deadlines.files,
                WRITE_TEXT_FILE,
                self._conn.write_text_file(session_id=self._session_id, path=path, content=content),
            )
        except (RequestError, ValueError) as exc:
            raise _failed(WRITE_TEXT_FILE, exc) from exc


def _failed(method: str, exc: RequestError | ValueError) -> ClientRequestError:
    if not isinstance(exc, RequestError):  # pydantic's ValidationError: the result has the wrong shape
        first = " ".join(str(exc).splitlines()[:3])
        return ClientRequestError(f"the editor's answer to {method} does not fit ACP's schema: {first}")
    if isinstance(exc.data, dict) and exc.data.get("unread"):  # too large or not JSON: the transport says why
        return ClientRequestError(str(exc))
    return ClientRequestError(f"The client failed {method}: {exc}")


__all__ = ["AcpSessionClient"]
