"""Approvals: which tool calls run at once, which wait for the user, and which are refused.

The gate is the session's `before_tool_call` hook, so it sees every call after validation and before
anything runs, once, for every front end. In order:

1. a `deny` rule that matches refuses the call (deny wins over everything);
2. the policy decides: `auto` runs everything (Pi's behaviour); `readOnly` refuses mutating tools
   and asks for reads outside the workspace; `acceptEdits` runs edits and writes inside the
   workspace and asks for the rest of what `ask` asks; `ask` asks for every mutating tool (bash,
   edit, write, any tool marked mutating) and for reads of paths outside the workspace;
3. a change to one of the agent's own control files (`protected_path`: `.pi/`, `AGENTS.md`,
   `.git/hooks/`, the user's config folder, ...) is asked under every policy but `auto`;
4. where the policy would ask, an `allow` rule that matches (from settings, or added by "allow
   always") lets the call run without asking. A rule never turns a refusal into a run.

Rules match what the call will do, not its text: a shell command as bash parses it
(pi_rpc/session/approvals/shell_commands.py), a path as it resolves (symlinks followed; an allow rule must
match both the written and the real path, a deny rule either).

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
import shlex
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Literal

import anyio
import msgspec
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
from pi_rpc.ai import Wire, agent_config_paths
from pi_rpc.session.approvals.hunk_choice import select_hunks
from pi_rpc.tools import EditorRequestError, ToolDefinition, real_path, resolve_to_cwd

# How shell commands read as rules (session/approvals/shell_commands.py) is imported by the first
# shell call or rule that needs it, not by the session's start.

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
    # With allow or allowAlways, for a request whose preview has hunks: the indices of the hunks to
    # apply (the rest are rejected; none kept rejects the call). Absent: the whole change.
    hunks: list[int] | UnsetType = UNSET


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]


class RuleError(ValueError):
    pass


_RULE = re.compile(r"^(?P<tool>[A-Za-z0-9_.-]+)(?:\((?P<spec>.*)\))?$", re.DOTALL)


class PermissionRule(msgspec.Struct, frozen=True):
    """`tool`, `tool(spec)`. For shell tools the spec is a command, or `prefix:*` for every
    command that starts with those words; for other tools a glob over the path argument, relative
    to the workspace (`*` within a folder, `**` across folders), or absolute."""

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
            return self._denies(tool, command) if for_deny else self._allows(tool, command)
        path = _argument(args, _PATH_ARGUMENT)
        if path is None:
            return False
        written = resolve_to_cwd(path, cwd)
        real = real_path(written)
        forms = (
            _glob_matches(self.spec, written, cwd),
            _glob_matches(self.spec, real, real_path(cwd)),
        )
        # A symlink never widens an allow rule (both must match) nor hides from a deny rule (either).
        return any(forms) if for_deny else all(forms)

    def _command(self) -> tuple[str, bool]:
        assert self.spec is not None
        prefix = self.spec.endswith(":*")
        return (self.spec[:-2] if prefix else self.spec).strip(), prefix

    def _allows(self, tool: str, command: str) -> bool:
        """Only one simple command of literal words, with no option that runs other code, is covered."""
        from pi_rpc.session.approvals.shell_commands import code_running_option, literal_words, shell_literal_words

        words = shell_literal_words(tool, command)
        spec, prefix = self._command()
        wanted = literal_words(spec)
        if words is None or wanted is None or code_running_option(words) is not None:
            return False
        return words[: len(wanted)] == wanted if prefix else words == wanted

    def _denies(self, tool: str, command: str) -> bool:
        """Any command anywhere in the text, in normal form; a text that fails to parse is matched
        by its words, so a deny rule errs on refusing."""
        from pi_rpc.session.approvals.shell_commands import (
            command_words,
            deny_covers,
            literal_words,
            normal_form,
            words_in_unparsed,
        )

        spec, prefix = self._command()
        wanted = literal_words(spec) or tuple(spec.split())
        if not wanted:
            return False
        rule = normal_form(wanted)
        commands, failed = command_words(command)
        if any(deny_covers(rule, normal_form(words), prefix=prefix) for words in commands):
            return True
        # PowerShell is parsed as bash would read it: its words are matched by name as well.
        return (failed or tool == "powershell") and rule.program in words_in_unparsed(command)


def _argument(args: Any, name: str) -> str | None:
    value = args.get(name) if isinstance(args, dict) else getattr(args, name, None)
    return value if isinstance(value, str) else None


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


def _glob_matches(pattern: str, absolute: str, root: str) -> bool:
    """The pattern against the path relative to `root` (when inside it) or against the absolute path."""
    compiled = _glob(pattern)
    if compiled.fullmatch(absolute) is not None:
        return True
    return _lexically_inside(absolute, root) and compiled.fullmatch(os.path.relpath(absolute, root)) is not None


def _lexically_inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _inside(path: str, root: str) -> bool:
    return _lexically_inside(real_path(path), real_path(root))


# The agent's own control files, relative to the workspace (any folder of it): what the model may
# not change without asking, since changing them changes what it may do next (its settings and
# rules, its instructions, the commands git and the editor run, what `npm` runs its scripts with).
_PROTECTED_NAMES = frozenset({"agents.md", "claude.md", ".npmrc", ".yarnrc", ".yarnrc.yml"})
_PROTECTED_FOLDERS = frozenset({".pi"})
_PROTECTED_PAIRS = frozenset({(".git", "config"), (".vscode", "settings.json")})


def protected_path(path: str, workspace: str, config_folders: Iterable[str] = ()) -> bool:
    """Whether `path` (absolute, real or written) is one of the agent's control files: `.pi/**`,
    `AGENTS.md` / `CLAUDE.md` in any folder, `.git/hooks/**`, `.git/config`, `.vscode/settings.json`,
    `.npmrc` / `.yarnrc*`, or anything in the user's config folders. Names compare case-folded
    (macOS and Windows file systems do)."""
    if any(_lexically_inside(path, folder) for folder in config_folders):
        return True
    if not _lexically_inside(path, workspace) or path == workspace:
        return False
    parts = [part.casefold() for part in os.path.relpath(path, workspace).split(os.sep)]
    if parts[-1] in _PROTECTED_NAMES or _PROTECTED_FOLDERS & set(parts[:-1]) or parts[-1] in _PROTECTED_FOLDERS:
        return True
    if any(pair in _PROTECTED_PAIRS for pair in zip(parts, parts[1:], strict=False)):
        return True
    return any(part == ".git" and following == "hooks" for part, following in zip(parts, parts[1:], strict=False))


def user_config_folders() -> list[str]:
    """The user's pi-rpc and Pi config folders (`~/.config/pi-rpc`, `$PI_CODING_AGENT_DIR` or
    `~/.pi/agent`), as real paths."""
    return [real_path(str(path.parent)) for path in agent_config_paths("settings.json")]


def parse_rules(texts: Iterable[str]) -> list[PermissionRule]:
    return [PermissionRule.parse(text) for text in texts]


def suggested_rule(tool: str, args: Any) -> str:
    """What "allow always" covers by default: a literal shell command's first two words, else
    nothing (an empty string) for a shell tool, since the tool alone would allow every command;
    the tool for other tools."""
    if tool in SHELL_TOOLS:
        from pi_rpc.session.approvals.shell_commands import code_running_option, shell_literal_words

        words = shell_literal_words(tool, _argument(args, "command") or "")
        if words is None or code_running_option(words) is not None:
            return ""
        return f"{tool}({' '.join(shlex.quote(word) for word in words[:2])}:*)"
    return tool


class ApprovalRules(msgspec.Struct):
    allow: list[PermissionRule] = msgspec.field(default_factory=list)
    deny: list[PermissionRule] = msgspec.field(default_factory=list)


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
        config_folders: Callable[[], Iterable[str]] = user_config_folders,
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
        self._config_folders = config_folders
        self.pending: dict[str, ApprovalRequest] = {}

    def _needs_asking(self, definition: ToolDefinition | None, tool: str, args: Any) -> bool | str:
        """What the policy says. False: run. True: ask. A string: refuse, with that reason."""
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
            return outside
        if policy == "acceptEdits" and tool in FILE_EDITING_TOOLS and not outside:
            return False
        return mutating or outside

    def _touches_protected(self, definition: ToolDefinition | None, tool: str, args: Any) -> bool:
        """Whether the call changes one of the agent's control files (`protected_path`): a mutating
        path tool's path, written or real, or a literal shell command's word that names one."""
        cwd = self._cwd()
        workspace, folders = real_path(cwd), list(self._config_folders())
        if tool in SHELL_TOOLS:
            from pi_rpc.session.approvals.shell_commands import shell_literal_words

            words = shell_literal_words(tool, _argument(args, "command") or "") or ()
            candidates = [part for word in words[1:] for part in {word, word.split("=", 1)[-1]} if part]
        elif definition is not None and definition.mutating:
            candidates = [path] if (path := _argument(args, _PATH_ARGUMENT)) is not None else []
        else:
            return False
        for candidate in candidates:
            written = resolve_to_cwd(candidate, cwd)
            if protected_path(written, cwd, folders) or protected_path(real_path(written), workspace, folders):
                return True
        return False

    async def check(self, call: BeforeToolCall) -> BlockCall | None:
        tool, args, cwd = call.tool_call.name, call.args, self._cwd()
        for rule in self.rules.deny:
            if rule.matches(tool, args, cwd, for_deny=True):
                return BlockCall(reason=f"Tool {tool} was not run: denied by the permission rule {rule.text}.")
        definition = self._definitions(tool)
        verdict = self._needs_asking(definition, tool, args)
        if isinstance(verdict, str):
            return BlockCall(reason=verdict)  # a refusal of the policy: no rule turns it into a run
        if self.policy != "auto" and self._touches_protected(definition, tool, args):
            verdict = True  # asked whatever the allow rules say
        elif verdict is True and any(rule.matches(tool, args, cwd) for rule in self.rules.allow):
            return None
        if verdict is False:
            return None
        if self.approver is None:
            return BlockCall(
                reason=f"Tool {tool} was not run: approval policy {self.policy} needs the user's "
                "approval, and this client cannot ask for it."
            )
        request = await self._request(call, definition)
        if request is None:
            return None  # the call would fail before changing anything: let it fail with its own error
        return await self._ask(request, call)

    async def _request(self, call: BeforeToolCall, definition: ToolDefinition | None) -> ApprovalRequest | None:
        tool, args = call.tool_call.name, call.args
        path = _argument(args, _PATH_ARGUMENT)
        preview = ToolPreview(
            title=f"{definition.label if definition else tool} {path or ''}".strip(),
            path=resolve_to_cwd(path, self._cwd()) if path is not None else UNSET,
        )
        if definition is not None and definition.preview is not None:
            try:
                preview = await definition.preview(args, msgspec.structs.replace(self._context(), id=call.tool_call.id))
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

    async def _ask(self, request: ApprovalRequest, call: BeforeToolCall) -> BlockCall | None:
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
            return self._apply(request, decision, call)
        finally:
            del self.pending[call_id]
            self.on_resolved(call_id, outcome)

    def _apply(self, request: ApprovalRequest, decision: ApprovalDecision, call: BeforeToolCall) -> BlockCall | None:
        if decision.outcome != "reject" and decision.hunks is not UNSET:
            refusal = select_hunks(request, decision.hunks, decision.reason or None, call)
            if refusal is not None:
                return refusal
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
    "protected_path",
    "suggested_rule",
    "user_config_folders",
]
