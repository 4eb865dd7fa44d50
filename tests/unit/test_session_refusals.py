"""The session's refusals (pi_rpc/session/refusals.py): one family, whose every kind each front end
maps in its one table, and nothing else taken for a refusal."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from pi_rpc.agent.agent import AgentBusyError
from pi_rpc.ai.http import ProviderError
from pi_rpc.modes.acp import errors as acp_errors
from pi_rpc.modes.jsonrpc import errors as jsonrpc_errors
from pi_rpc.modes.lsp import runs as lsp_runs
from pi_rpc.modes.pi import session_commands
from pi_rpc.modes.pi.entries import UnknownEntryError
from pi_rpc.session import refusals
from pi_rpc.session.compaction.planning import CompactionError
from pi_rpc.session.configuration.settings import SettingsError
from pi_rpc.session.refusals import (
    SESSION_REFUSALS,
    CompactionRefused,
    InvalidArgument,
    NoModelConfigured,
    PromptWhileRunning,
    SessionBusy,
    SessionRefusal,
    UnknownModel,
    UnknownSessionOrEntry,
    refusal_kind,
)
from pi_rpc.session.session import ModelNotFoundError, NoModelError, SessionNotFoundError
from pi_rpc.session.storage.entries import EntryNotOnBranchError
from pi_rpc.session.storage.history import NothingToCloneError, OtherWorkspaceSessionError
from pi_rpc.session.user_bash import BashBusyError, UserBashError
from pi_rpc.tools import EditorRequestError

FRONT_END_TABLES: dict[str, Mapping[type[SessionRefusal], object]] = {
    "jsonrpc": jsonrpc_errors.SESSION_ERRORS,
    "acp": acp_errors.SESSION_ERRORS,
    "pi": session_commands.REFUSAL_TEXT,
    "lsp": lsp_runs.REFUSAL_TEXT,
}


def kinds() -> set[type[SessionRefusal]]:
    """Every kind: a direct subclass of the family, which only refusals.py may define (the test of
    the guard below tries another, which lingers among the subclasses until collected)."""
    return {kind for kind in SessionRefusal.__subclasses__() if kind.__module__ == refusals.__name__}


@pytest.mark.parametrize("front_end", sorted(FRONT_END_TABLES))
def test_every_front_end_maps_every_kind_of_refusal_in_its_table(front_end: str) -> None:
    table = FRONT_END_TABLES[front_end]
    missing = sorted(kind.__name__ for kind in kinds() - table.keys())
    assert missing == [], f"{front_end} does not say how it answers {', '.join(missing)}"
    assert table.keys() <= kinds(), "a table maps kinds: not the family itself, nor one refusal of a kind"


def test_a_new_kind_of_refusal_can_only_be_added_beside_the_others() -> None:
    with pytest.raises(TypeError, match="subclass a kind of refusal"):

        class Stray(SessionRefusal):
            pass

    class StaleModelError(UnknownModel):  # a refusal of a kind may be raised from anywhere
        pass

    assert refusal_kind(StaleModelError("gone")) is UnknownModel


@pytest.mark.parametrize(
    ("refusal", "kind"),
    [
        (AgentBusyError(), PromptWhileRunning),  # raised a layer below the family
        (BashBusyError("A bash command is already running"), SessionBusy),
        (CompactionError("Nothing to compact"), CompactionRefused),
        (NoModelError(), NoModelConfigured),
        (ModelNotFoundError("Model not found: x/y"), UnknownModel),
        (SessionNotFoundError("Session not found: s1"), UnknownSessionOrEntry),
        (OtherWorkspaceSessionError("Session s1 belongs to another workspace"), UnknownSessionOrEntry),
        (NothingToCloneError(), UnknownSessionOrEntry),
        (EntryNotOnBranchError("Entry e1 is not an entry of this session's current branch"), UnknownSessionOrEntry),
        (UnknownEntryError("Entry not found: e1"), UnknownSessionOrEntry),
        (InvalidArgument("Session name cannot be empty"), InvalidArgument),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else None,
)
def test_each_refusal_is_of_one_kind_and_caught_as_one(refusal: Exception, kind: type[SessionRefusal]) -> None:
    assert refusal_kind(refusal) is kind
    assert isinstance(refusal, SESSION_REFUSALS)


@pytest.mark.parametrize(
    "failure",
    [
        UserBashError("Working directory does not exist: /gone"),  # I/O: the shell could not start
        ProviderError("500 Internal Server Error"),
        EditorRequestError("the editor did not answer fs/read within 60 s"),
        SettingsError("settings.json, line 2: expected an object"),
        LookupError("a bug"),
        ValueError("a bug"),
        RuntimeError("a bug"),
        SessionRefusal("the family itself is no kind"),
    ],
    ids=lambda value: type(value).__name__,
)
def test_a_failure_that_is_no_refusal_gets_each_front_ends_generic_error(failure: Exception) -> None:
    assert refusal_kind(failure) is None
    assert jsonrpc_errors.session_error(failure) is None
    with pytest.raises(TypeError, match="is not a session refusal"):
        acp_errors.session_error(failure)
    assert session_commands.refusal_text(failure) == lsp_runs.refusal_text(failure) == str(failure)
