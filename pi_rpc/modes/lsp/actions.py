"""Code actions: what Pi offers on a range, and the prompt each one sends.

An action's prompt is written when the editor asks for actions (the code and the diagnostics as
they are then) and travels back in the command's arguments, so executing one needs no state.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import msgspec
from lsprotocol import types as lsp

from pi_rpc.ai import Wire
from pi_rpc.modes.lsp.documents import lsp_lines
from pi_rpc.modes.lsp.options import UserAction

RUN_ACTION = "pi.runAction"


class ActionArgs(Wire):
    """The argument of `pi.runAction`: a title for the progress and the prompt to run."""

    title: str
    prompt: str


class ActionContext(Wire):
    """What a prompt template can use."""

    code: str
    file: str
    language: str
    diagnostics: str
    range: str


FIX = """Fix the problems reported in {file} at lines {range}:
{diagnostics}

The code:
```{language}
{code}
```
Change the file so that these problems are gone; keep the rest as it is."""

FIX_WITHOUT_DIAGNOSTICS = """Find and fix what is wrong in {file} at lines {range}:
```{language}
{code}
```
Change the file; keep the rest as it is."""

EXPLAIN = """Explain this code from {file} (lines {range}): what it does, how, and anything surprising.
Do not change any file.
```{language}
{code}
```"""

REFACTOR = """Refactor this code from {file} (lines {range}) so that it is clearer and simpler, with the same
behaviour. Change the file.
```{language}
{code}
```"""

WRITE_TESTS = """Write tests for this code from {file} (lines {range}). Put them where this project keeps its
tests, in its test framework, and run them.
```{language}
{code}
```"""


def action_context(
    text: str, path: str, cwd: str, language: str, selection: lsp.Range, diagnostics: Sequence[lsp.Diagnostic]
) -> ActionContext:
    """The whole lines the selection touches, and the diagnostics as one line each."""
    lines = lsp_lines(text)
    first = selection.start.line
    last = selection.end.line
    if last > first and selection.end.character == 0:
        last -= 1  # a selection that ends at a line start does not include that line
    code = "".join(lines[first : last + 1]).rstrip("\r\n")
    relative = os.path.relpath(path, cwd)
    shown = path if relative.startswith("..") else relative
    messages = "\n".join(_diagnostic_line(d) for d in diagnostics)
    span = str(first + 1) if first == last else f"{first + 1}-{last + 1}"
    return ActionContext(code=code, file=shown, language=language, diagnostics=messages, range=span)


def _diagnostic_line(diagnostic: lsp.Diagnostic) -> str:
    source = f" ({diagnostic.source})" if diagnostic.source else ""
    return f"- line {diagnostic.range.start.line + 1}: {diagnostic.message}{source}"


def render(template: str, context: ActionContext) -> str:
    """The template with its {names} filled in; unknown names and other braces stay as written."""
    out = template
    for name in ActionContext.__struct_fields__:
        out = out.replace("{" + name + "}", str(getattr(context, name)))
    return out


def code_actions(
    context: ActionContext, diagnostics: Sequence[lsp.Diagnostic], user_actions: Sequence[UserAction]
) -> list[lsp.CodeAction]:
    fix = FIX if diagnostics else FIX_WITHOUT_DIAGNOSTICS
    offered = [
        ("Fix with Pi", lsp.CodeActionKind.QuickFix, fix),
        ("Explain with Pi", lsp.CodeActionKind.Empty, EXPLAIN),
        ("Refactor with Pi", lsp.CodeActionKind.RefactorRewrite, REFACTOR),
        ("Write tests with Pi", lsp.CodeActionKind.Empty, WRITE_TESTS),
        *((action.title, lsp.CodeActionKind.Empty, action.prompt) for action in user_actions),
    ]
    actions = []
    for title, kind, template in offered:
        args = ActionArgs(title=title, prompt=render(template, context))
        command = lsp.Command(title=title, command=RUN_ACTION, arguments=[msgspec.to_builtins(args)])
        actions.append(
            lsp.CodeAction(
                title=title,
                kind=kind,
                command=command,
                diagnostics=list(diagnostics) if kind == lsp.CodeActionKind.QuickFix and diagnostics else None,
            )
        )
    return actions
