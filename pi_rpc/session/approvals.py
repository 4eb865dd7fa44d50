"""Approvals: which tool calls run at once, which wait for the user, and which are refused.

The gate is the session's `before_tool_call` hook, so it sees every call after validation and before
anything runs, once, for every front end. In order:

1. a `deny` rule that matches refuses the call (deny wins over everything);
2. an `allow` rule that matches (from settings, or added by "allow always") lets it run;
3. the policy decides: `auto` runs everything (Pi's behaviour); `readOnly` refuses mutating tools;
   `acceptEdits` runs edits and writes inside the workspace and asks for the rest of what `ask`
   asks; `ask` asks for every mutating tool (bash, edit, write, any tool marked mutating) and for
   reads of paths outside the workspace.

Asking means calling the front end's `Approver` with an `ApprovalRequest` (what the call will do,
with the diff for edits and writes computed before anything is written) and waiting for its
`ApprovalDecision`. An abort cancels the wait like any other part of the run (the call gets the
aborted result); an optional timeout rejects. With no approver (a client that did not declare the
capability) a call that would need asking is refused with a message that says why.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import anyio
from msgspec import UNSET, UnsetType

from pi_rpc.agent import (
    ApprovalOutcome,
    ApprovalRequest,
    BeforeToolCall,
    BlockCall,
    ToolCallContext,
    ToolError,
    ToolPreview,
)
from pi_rpc.ai import Wire
from pi_rpc.tools import EditorRequestError, ToolDefinition, resolve_to_cwd

_log = logging.getLogger(__name__)

ApprovalPolicy = Literal["ask", "acceptEdits", "auto", "readOnly"]
APPROVAL_POLICIES: tuple[ApprovalPolicy, ...] = ("ask", "acceptEdits", "auto", "readOnly")

FILE_EDITING_TOOLS = frozenset({"edit", "write"})
SHELL_TOOLS = frozenset({"bash", "powershell"})
# The argument that names the path a tool works on, for workspace checks and path rules.
_PATH_ARGUMENT = "path"


class ApprovalDecision(Wire, kw_only=True):
    outcome: Literal["allow", "allowAlways", "reject"]
    # With reject: why, for the model to read in the tool result.
    reason: str | UnsetType = UNSET
    # With allowAlways: the rule to add (default: the request's suggestedRule).
    rule: str | UnsetType = UNSET
    # With allowAlways: also keep the rule in the workspace's settings file.
    save: bool = False


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]


class RuleError(ValueError):
    pass


_RULE = re.compile(r"^(?P<tool>[A-Za-z0-9_.-]+)(?:\((?P<spec>.*)\))?$", re.DOTALL)
# A prefix rule never approves a chained or redirected command: `npm test && rm -rf ~` is not `npm test`.
_SHELL_CONTROL = re.compile(r"[;&|<>`\n]|\$\(")


@dataclass(frozen=True)
class PermissionRule:
    """`tool`, `tool(spec)`. For shell tools the spec is a command, or `prefix:*` for every
    command that starts with that prefix; for other tools a glob over the path argument, relative
    to the workspace (`*` within a folder, `**` across folders)."""

    text: str
    tool: str
    spec: str | None

    @classmethod
    def parse(cls, text: str) -> PermissionRule:
        match = _RULE.match(text.strip())
        if match is None:
            raise RuleError(f"Invalid permission rule {text!r}: expected tool or tool(pattern)")
        spec = match.group("spec")
        return cls(text=text.strip(), tool=match.group("tool"), spec=spec if spec not in (None, "", "*") else None)

    def matches(self, tool: str, args: Any, cwd: str, *, for_deny: bool = False) -> bool:
        if tool != self.tool:
            return False
        if self.spec is None:
            return True
        if tool in SHELL_TOOLS:
            command = _argument(args, "command")
            if command is None:
                return False
            # A deny rule matches any part of a chain; an allow rule only a plain command.
            commands = _SHELL_CONTROL.split(command) if for_deny else [command]
            if not for_deny and _SHELL_CONTROL.search(command):
                return False
            return any(_command_matches(self.spec, part.strip()) for part in commands)
        path = _argument(args, _PATH_ARGUMENT)
        if path is None:
            return False
        absolute = resolve_to_cwd(path, cwd)
        relative = os.path.relpath(absolute, cwd) if _inside(absolute, cwd) else absolute
        return _glob(self.spec).fullmatch(relative) is not None or _glob(self.spec).fullmatch(absolute) is not None


def _argument(args: Any, name: str) -> str | None:
    value = args.get(name) if isinstance(args, dict) else getattr(args, name, None)
    return value if isinstance(value, str) else None


def _command_matches(spec: str, command: str) -> bool:
    if spec.endswith(":*"):
        prefix = spec[:-2].strip()
        return command == prefix or command.startswith(prefix + " ")
    return command == spec.strip()


def _glob(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def _inside(path: str, root: str) -> bool:
    real_path, real_root = os.path.realpath(path), os.path.realpath(root)
    return real_path == real_root or real_path.startswith(real_root.rstrip(os.sep) + os.sep)


def parse_rules(texts: Iterable[str]) -> list[PermissionRule]:
    return [PermissionRule.parse(text) for text in texts]


def suggested_rule(tool: str, args: Any) -> str:
    """What "allow always" covers by default: a shell command's first two words, else the tool."""
    if tool in SHELL_TOOLS:
        command = (_argument(args, "command") or "").strip()
        if command and not _SHELL_CONTROL.search(command):
            words = command.split()
            return f"{tool}({' '.join(words[:2])}:*)"
    return tool


@dataclass
class ApprovalRules:
    allow: list[PermissionRule] = field(default_factory=list)
    deny: list[PermissionRule] = field(default_factory=list)


SaveRule = Callable[[str], None]


class ApprovalGate:
    """The policy of one session, its rules, and the approver that asks the user."""

    def __init__(
        self,
        cwd: Callable[[], str],
        definitions: Callable[[str], ToolDefinition | None],
        context: Callable[[], ToolCallContext],
        *,
        policy: ApprovalPolicy = "auto",
        rules: ApprovalRules | None = None,
        timeout: float | None = None,
        save_rule: SaveRule | None = None,
    ) -> None:
        self.policy: ApprovalPolicy = policy
        self.rules = rules or ApprovalRules()
        self.approver: Approver | None = None
        self.timeout = timeout
        self.on_request: Callable[[ApprovalRequest], None] = lambda request: None
        self.on_resolved: Callable[[str, ApprovalOutcome], None] = lambda call_id, outcome: None
        self._cwd = cwd
        self._definitions = definitions
        self._context = context
        self._save_rule = save_rule
        self.pending: dict[str, ApprovalRequest] = {}

    def _needs_asking(self, definition: ToolDefinition | None, tool: str, args: Any) -> bool | str:
        """False: run. True: ask. A string: refuse, with that reason."""
        policy = self.policy
        if policy == "auto":
            return False
        mutating = definition is not None and definition.mutating
        path = _argument(args, _PATH_ARGUMENT)
        outside = path is not None and not _inside(resolve_to_cwd(path, self._cwd()), self._cwd())
        if policy == "readOnly":
            if mutating:
                return (
                    f"Tool {tool} was not run: the session is read-only (approval policy readOnly), "
                    "so no tool may change files or run commands. Describe the change instead."
                )
            return False
        if policy == "acceptEdits" and tool in FILE_EDITING_TOOLS and not outside:
            return False
        return mutating or outside

    async def check(self, call: BeforeToolCall) -> BlockCall | None:
        tool, args, cwd = call.tool_call.name, call.args, self._cwd()
        for rule in self.rules.deny:
            if rule.matches(tool, args, cwd, for_deny=True):
                return BlockCall(reason=f"Tool {tool} was not run: denied by the permission rule {rule.text}.")
        if any(rule.matches(tool, args, cwd) for rule in self.rules.allow):
            return None
        definition = self._definitions(tool)
        verdict = self._needs_asking(definition, tool, args)
        if verdict is False:
            return None
        if isinstance(verdict, str):
            return BlockCall(reason=verdict)
        if self.approver is None:
            return BlockCall(
                reason=f"Tool {tool} was not run: approval policy {self.policy} needs the user's "
                "approval, and this client cannot ask for it."
            )
        request = await self._request(call, definition)
        if request is None:
            return None  # the call would fail before changing anything: let it fail with its own error
        return await self._ask(request)

    async def _request(self, call: BeforeToolCall, definition: ToolDefinition | None) -> ApprovalRequest | None:
        tool, args = call.tool_call.name, call.args
        path = _argument(args, _PATH_ARGUMENT)
        preview = ToolPreview(
            title=f"{definition.label if definition else tool} {path or ''}".strip(),
            path=resolve_to_cwd(path, self._cwd()) if path is not None else UNSET,
        )
        if definition is not None and definition.preview is not None:
            try:
                preview = await definition.preview(args, replace(self._context(), id=call.tool_call.id))
            except ToolError as exc:  # the tool fails the same way, before changing anything
                _log.debug("not asking about %s, it would fail: %s", tool, exc)
                return None
            except EditorRequestError as exc:  # the editor failed the read: ask all the same, without a diff
                _log.warning("preview of %s has no diff: %s", tool, exc)
            except Exception:  # an unexpected failure must never skip the question: ask without a diff
                _log.exception("preview of %s failed", tool)
        return ApprovalRequest(
            tool_call_id=call.tool_call.id,
            tool_name=tool,
            args=call.tool_call.arguments,
            cwd=self._cwd(),
            title=preview.title,
            preview=preview,
            suggested_rule=suggested_rule(tool, args),
        )

    async def _ask(self, request: ApprovalRequest) -> BlockCall | None:
        assert self.approver is not None
        call_id = request.tool_call_id
        self.pending[call_id] = request
        self.on_request(request)
        outcome: ApprovalOutcome = "cancelled"
        try:
            decision: ApprovalDecision | None = None
            with anyio.move_on_after(self.timeout if self.timeout is not None else float("inf")):
                decision = await self.approver(request)
            if decision is None:
                outcome = "timeout"
                return BlockCall(
                    reason=f"Tool {request.tool_name} was not run: no answer to the approval "
                    f"request within {self.timeout:g} s."
                )
            outcome = decision.outcome
            return self._apply(request, decision)
        finally:
            del self.pending[call_id]
            self.on_resolved(call_id, outcome)

    def _apply(self, request: ApprovalRequest, decision: ApprovalDecision) -> BlockCall | None:
        if decision.outcome == "reject":
            reason = f"The user rejected this {request.tool_name} call"
            if decision.reason:
                reason += f": {decision.reason}"
            return BlockCall(reason=reason)
        if decision.outcome == "allowAlways":
            text = decision.rule if decision.rule is not UNSET else request.suggested_rule
            try:
                self.rules.allow.append(PermissionRule.parse(text))
            except RuleError:
                _log.warning("allow-always rule %r is invalid; allowing this call only", text)
            else:
                if decision.save and self._save_rule is not None:
                    self._save_rule(text)
        return None


__all__ = [
    "APPROVAL_POLICIES",
    "ApprovalDecision",
    "ApprovalGate",
    "ApprovalPolicy",
    "ApprovalRequest",
    "ApprovalRules",
    "Approver",
    "PermissionRule",
    "RuleError",
    "parse_rules",
    "suggested_rule",
]
