"""Pi's command line as pi-rpc reads it (pi_rpc/pi_args.py, pi_rpc/pi_flags.py) and Pi's model
names (pi_rpc/session/models/patterns.py): examples, what each flag is (honoured, warned about,
refused), and properties against Pi's own `parseArgs` and model resolver (tests/pi_client's npm
package, through pi_cli_oracle.mjs)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from pi_rpc.ai.models import DEFAULT_MODEL_IDS
from pi_rpc.ai.types import Model, TextContent, UserMessage
from pi_rpc.cli import build_parser
from pi_rpc.pi_args import PiExtras, split_pi_argv
from pi_rpc.pi_flags import (
    SessionArgumentError,
    command_line_notices,
    option_forms,
    parse_command_line,
    session_argument,
)
from pi_rpc.session.models.patterns import resolve_cli_model, resolve_model_scope
from pi_rpc.session.storage.store import SessionFile

PI_CLIENT = Path(__file__).resolve().parents[1] / "pi_client"
ORACLE = Path(__file__).with_name("pi_cli_oracle.mjs")
FORMS = option_forms(build_parser())


def parse(*argv: str) -> tuple[Any, PiExtras]:
    return parse_command_line(build_parser(), list(argv))


# --- the parse ----------------------------------------------------------------------------------


def test_a_pi_clients_command_line_reads_as_pi_reads_it() -> None:
    args, extras = parse(
        "--mode", "rpc", "--provider", "loop", "--model", "loop/m:high", "--no-session", "--plan",
        "--depth=3", "--trace", "deep", "@notes.md", "fix it", "-p", "---not an option", "--append-system-prompt",
        "-be terse", "--append-system-prompt", "rules.md", "--thinking", "extreme",
    )  # fmt: skip
    assert (args.mode, args.provider, args.model, args.no_session) == ("rpc", "loop", "loop/m:high", True)
    assert args.append_system_prompt == ["-be terse", "rules.md"]  # repeatable, a value may start with -
    assert extras.unknown_flags == {"plan": True, "depth": "3", "trace": "deep"}
    assert extras.file_args == ["notes.md"] and extras.messages == ["fix it", "---not an option"]
    assert extras.print_mode is True and args.thinking == "extreme"


def test_list_models_takes_a_search_only_when_one_follows() -> None:
    assert parse("--list-models")[1].list_models is True
    assert parse("--list-models", "sonnet")[1].list_models == "sonnet"
    assert parse("--list-models", "--mode", "rpc")[1].list_models is True


def test_an_abbreviation_is_an_unknown_flag_not_an_option() -> None:
    args, extras = parse("--mod", "rpc")
    assert args.mode == "jsonrpc" and extras.unknown_flags == {"mod": "rpc"}


def test_the_daemons_own_equals_spelling_still_works() -> None:
    args, extras = parse("--cwd=/tmp", "--session-dir=/s")
    assert (args.cwd, args.session_dir) == ("/tmp", "/s") and extras == PiExtras()


@pytest.mark.parametrize(
    ("argv", "trust"),
    [([], None), (["-a"], True), (["--approve"], True), (["-na"], False), (["--no-approve"], False)],
)
def test_pis_trust_flags_are_honoured_neither_warned_about_nor_refused(argv: list[str], trust: bool | None) -> None:
    """`-na` was an unknown short option (exit 2) and `--approve` an unknown flag before."""
    args, extras = parse("--mode", "rpc", *argv)
    assert args.project_trust is trust and extras == PiExtras()
    assert notices("--mode", "rpc", *argv) == ([], [])


# --- honoured, warned, refused ------------------------------------------------------------------


def notices(*argv: str) -> tuple[list[str], list[str]]:
    args, extras = parse(*argv)
    found = command_line_notices(args, extras)
    return found.errors, found.warnings


def test_what_has_no_meaning_for_a_daemon_is_warned_about_by_name() -> None:
    errors, warnings = notices(
        "--mode", "rpc", "--theme", "dark.json", "--no-themes", "--verbose", "-e", "ext.ts", "hello", "--plan",
    )  # fmt: skip
    assert errors == []
    assert warnings == [
        "1 message(s) on the command line ignored, as Pi ignores them in RPC mode: send them as `prompt` commands",
        "--plan ignored: an unknown flag, which an extension of -e may register (pi-rpc runs none)",
        "--extension ext.ts ignored: pi-rpc does not run Pi's TypeScript extensions",
        "--theme dark.json ignored: a daemon has no terminal UI",
        "--no-themes ignored: a daemon has no terminal UI",
        "--verbose ignored: a daemon's logs follow --log-level (or $PI_RPC_LOG)",
    ]


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--bogus"], "Unknown option: --bogus"),
        (["--bogus=1"], "Unknown option: --bogus"),
        (["--bogus", "x", "--plan=3", "--bogus"], "Unknown options: --bogus, --plan"),  # each named once
    ],
)
def test_an_unknown_long_flag_is_refused_in_rpc_mode_as_pi_16_refuses_it(argv: list[str], error: str) -> None:
    """Pi 1.6.0 refuses a flag no extension it loaded registered (0.73.1 kept it, as pi-rpc did)."""
    assert notices("--mode", "rpc", *argv) == ([error], [])


def test_an_invalid_thinking_level_is_a_warning_as_in_pi() -> None:
    args, extras = parse("--mode", "rpc", "--thinking", "extreme")
    found = command_line_notices(args, extras)
    assert found.errors == [] and args.thinking is None
    assert found.warnings == [
        'Invalid thinking level "extreme". Valid values: off, minimal, low, medium, high, xhigh, max'
    ]  # Pi 1.6.0 cli/args.js


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--mode", "text", "hi"], "--mode text is Pi's print mode (answer one prompt on stdout, then exit)"),
        (["--mode", "json"], "--mode json is Pi's print mode"),
        (["-p", "hi"], "-p/--print is Pi's print mode (answer one prompt, then exit); pi-rpc is a daemon only"),
        (["--mode", "rpc", "@a.png"], "@file arguments are not supported in RPC mode"),
        (["--mode", "rpc", "-x"], "Unknown option: -x"),
        (["hello"], "unrecognized arguments: hello (Pi's extension flags and messages are for --mode rpc)"),
        (["--no-such-option"], "unrecognized arguments: --no-such-option"),
        (["--mode", "rpc", "--fork", "abc", "--continue"], "--fork cannot be combined with --continue"),
    ],
)
def test_what_contradicts_a_daemon_is_refused_with_the_reason(argv: list[str], error: str) -> None:
    errors, _ = notices(*argv)
    assert len(errors) == 1 and errors[0].startswith(error)


def test_print_mode_beside_rpc_is_ignored_as_pi_ignores_it() -> None:
    errors, warnings = notices("--mode", "rpc", "-p", "hello")
    assert errors == [] and warnings == [
        "-p/--print ignored: with --mode rpc Pi ignores it too (prompts come on stdin)"
    ]


# --- Pi as the oracle ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pi() -> Iterator[subprocess.Popen[str]]:
    if shutil.which("node") is None or not (PI_CLIENT / "node_modules" / "@mariozechner").is_dir():
        pytest.skip("Node or Pi's client (tests/pi_client, npm ci) is not installed")
    with subprocess.Popen(
        ["node", str(ORACLE), str(PI_CLIENT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as oracle:
        yield oracle
        assert oracle.stdin is not None
        oracle.stdin.close()


def ask(oracle: subprocess.Popen[str], question: dict[str, Any]) -> Any:
    assert oracle.stdin is not None and oracle.stdout is not None
    oracle.stdin.write(json.dumps(question) + "\n")
    oracle.stdin.flush()
    return json.loads(oracle.stdout.readline())


# Options both know, with the value each takes (Pi's name for the parsed value).
VALUED = {"--provider": "provider", "--model": "model", "--session": "session", "--session-dir": "sessionDir"}
FLAGS = {"--no-session": "noSession", "--offline": "offline", "-c": "continue", "--no-skills": "noSkills"}
WORDS = st.sampled_from(["fix", "a b", "---dashes", "x=y", "rpc", ""])
TOKENS = st.one_of(
    WORDS,
    st.sampled_from(["@a.md", "@", "-x", "-", "--plan", "--depth=3", "--=v", "-p", "--print", "--list-models"]),
    st.sampled_from([*FLAGS, "--mode"]),
)


@st.composite
def pi_argv(draw: st.DrawFn) -> list[str]:
    argv: list[str] = []
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.integers(0, 4)) == 0:
            option = draw(st.sampled_from(sorted(VALUED)))
            argv += [option, draw(st.one_of(WORDS, st.sampled_from(["-v", "@f", "--x"])))]
        else:
            token = draw(TOKENS)
            argv += [token, draw(st.sampled_from(["rpc", "json", "text"]))] if token == "--mode" else [token]
    return argv


@seed(15)
@settings(max_examples=300, deadline=None)
@given(pi_argv())
def test_the_split_is_pis(pi: subprocess.Popen[str], argv: list[str]) -> None:
    theirs = ask(pi, {"kind": "args", "argv": argv})
    known, ours = split_pi_argv(argv, FORMS)
    assert ours.messages == theirs["messages"] and ours.file_args == theirs["fileArgs"]
    assert ours.unknown_flags == theirs["unknownFlags"] and ours.print_mode == theirs.get("print", False)
    assert ours.list_models == theirs.get("listModels")
    assert ours.unknown_short == [d["message"].removeprefix("Unknown option: ") for d in theirs["diagnostics"]]
    args = build_parser().parse_args(known)
    for option, name in VALUED.items():
        assert getattr(args, option.lstrip("-").replace("-", "_")) == theirs.get(name)
    for option, name in FLAGS.items():
        dest = {"-c": "continue_session"}.get(option, option.lstrip("-").replace("-", "_"))
        assert getattr(args, dest) == theirs.get(name, False)
    assert (args.mode if args.mode != "jsonrpc" else None) == theirs.get("mode")


PROVIDERS = ["anthropic", "openai", "openrouter"]
IDS = [
    "claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "claude-haiku-4-5", "claude-sonnet-latest", "gpt-5.4",
    "gpt-5.4-mini", "gpt-4.1", "o3", "openai/gpt-4o", "openai/gpt-4o:extended", "qwen:7b", "mix",
]  # fmt: skip
PATTERNS = st.sampled_from([
    "sonnet", "claude-sonnet-4-5", "CLAUDE-SONNET-4-5", "anthropic/sonnet", "openai/gpt-5.4:high", "gpt-5.4:xhigh",
    "gpt", "openai/gpt-4o", "openai/gpt-4o:extended", "openrouter/openai/gpt-4o", "qwen:7b", "qwen:7b:low",
    "haiku:bogus", "missing", "anthropic/missing", "o3:off", "4-5", "mini", "*sonnet*", "openai/*:high", "gpt-[45]*",
])  # fmt: skip


def model(provider: str, model_id: str) -> Model:
    return Model(id=model_id, name=model_id, api="openai-completions", provider=provider, base_url="http://x")


def wire(models: list[Model]) -> list[dict[str, Any]]:
    return [
        {"id": m.id, "name": m.name, "api": m.api, "provider": m.provider, "baseUrl": m.base_url, "reasoning": False,
         "input": ["text"], "contextWindow": 1000, "maxTokens": 100, "cost": {}}
        for m in models
    ]  # fmt: skip


CATALOGUES = st.lists(st.tuples(st.sampled_from(PROVIDERS), st.sampled_from(IDS)), min_size=1, max_size=8, unique=True)


@seed(15)
@settings(max_examples=300, deadline=None)
@given(CATALOGUES, st.one_of(st.none(), st.sampled_from([*PROVIDERS, "OpenAI", "nobody"])), PATTERNS)
def test_a_model_name_resolves_as_pi_resolves_it(
    pi: subprocess.Popen[str], catalogue: list[tuple[str, str]], provider: str | None, pattern: str
) -> None:
    if any(char in pattern for char in "*[?"):
        return  # globs are for scopes
    models = [model(*entry) for entry in catalogue]
    theirs = ask(pi, {"kind": "model", "provider": provider, "model": pattern, "models": wire(models)})
    ours = resolve_cli_model(provider, pattern, models, DEFAULT_MODEL_IDS)
    named = f"{ours.model.provider}/{ours.model.id}" if ours.model is not None else None
    assert (named, ours.thinking_level, ours.warning) == (theirs["model"], theirs["thinkingLevel"], theirs["warning"])
    assert (ours.error is None) == (theirs["error"] is None)


@seed(15)
@settings(max_examples=200, deadline=None)
@given(CATALOGUES, st.lists(PATTERNS, min_size=1, max_size=3))
def test_a_scope_is_pis(pi: subprocess.Popen[str], catalogue: list[tuple[str, str]], patterns: list[str]) -> None:
    models = [model(*entry) for entry in catalogue]
    theirs = ask(pi, {"kind": "scope", "patterns": patterns, "models": wire(models)})
    scope, _ = resolve_model_scope(patterns, models)
    assert [{"model": f"{s.model.provider}/{s.model.id}", "thinkingLevel": s.thinking_level} for s in scope] == theirs


@pytest.mark.parametrize(
    "pattern",
    ["anthropic/claude-{haiku,sonnet}-*", "**/gpt-*", "*/claude-[hs]*:low", "ANTHROPIC/*SONNET*", "openai/gpt-?.?"],
)
def test_a_scope_glob_is_minimatchs(pi: subprocess.Popen[str], pattern: str) -> None:
    """Braces, `**`, classes and case as Pi's minimatch (nocase) reads them: the scope now uses the
    one minimatch matcher (session/resources/path_patterns.py); its own translator before knew no braces."""
    models = [
        model("anthropic", "claude-sonnet-4-5"),
        model("anthropic", "claude-haiku-4-5"),
        model("openai", "gpt-5.4"),
        model("openrouter", "openai/gpt-4o"),
    ]
    theirs = ask(pi, {"kind": "scope", "patterns": [pattern], "models": wire(models)})
    scope, _ = resolve_model_scope([pattern], models)
    assert [{"model": f"{s.model.provider}/{s.model.id}", "thinkingLevel": s.thinking_level} for s in scope] == theirs
    assert theirs  # each pattern names something


CATALOGUE = [
    model("anthropic", "claude-sonnet-4-5"),
    model("anthropic", "claude-sonnet-4-5-20250929"),
    model("anthropic", "claude-haiku-4-5"),
    model("openai", "gpt-5.4"),
    model("openrouter", "openai/gpt-4o:extended"),
]


@pytest.mark.parametrize(
    ("provider", "pattern", "named", "level"),
    [
        (None, "sonnet", "anthropic/claude-sonnet-4-5", None),  # the alias, not the dated release
        (None, "sonnet:high", "anthropic/claude-sonnet-4-5", "high"),
        (None, "Anthropic/Claude-Haiku-4-5", "anthropic/claude-haiku-4-5", None),
        ("openai", "openai/gpt-5.4:low", "openai/gpt-5.4", "low"),
        (None, "openai/gpt-4o:extended", "openrouter/openai/gpt-4o:extended", None),  # one id, colon and all
        ("anthropic", "claude-next", "anthropic/claude-next", None),  # a custom id of a known provider
    ],
)
def test_model_names_as_pi_takes_them(provider: str | None, pattern: str, named: str, level: str | None) -> None:
    found = resolve_cli_model(provider, pattern, CATALOGUE, DEFAULT_MODEL_IDS)
    assert found.model is not None and f"{found.model.provider}/{found.model.id}" == named
    assert found.thinking_level == level and found.error is None


def test_a_model_name_that_fits_nothing_is_an_error() -> None:
    assert (
        resolve_cli_model(None, "haiku:bogus", CATALOGUE, DEFAULT_MODEL_IDS).error == "Model not found: */haiku:bogus"
    )
    assert resolve_cli_model("nobody", "x", CATALOGUE, DEFAULT_MODEL_IDS).error == 'Unknown provider "nobody"'


def test_a_scope_takes_globs_levels_and_parts_of_names() -> None:
    scope, warnings = resolve_model_scope(["anthropic/*:high", "gpt-5", "nothing", "haiku:bogus"], CATALOGUE)
    assert [(f"{s.model.provider}/{s.model.id}", s.thinking_level) for s in scope] == [
        ("anthropic/claude-sonnet-4-5", "high"),
        ("anthropic/claude-sonnet-4-5-20250929", "high"),
        ("anthropic/claude-haiku-4-5", "high"),
        ("openai/gpt-5.4", None),
    ]
    assert warnings == [
        'No models match pattern "nothing"',
        'Invalid thinking level "bogus" in pattern "haiku:bogus". Using default instead.',
    ]


def test_a_session_is_named_by_path_or_by_the_start_of_its_id(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    here, there = str(tmp_path / "here"), str(tmp_path / "there")
    mine = SessionFile.create(here, "abc123mine", root)
    mine.append(UserMessage(content=[TextContent(text="hello")]))
    theirs = SessionFile.create(there, "def456theirs", root)
    theirs.append(UserMessage(content=[TextContent(text="hello")]))
    assert session_argument("abc", here, root, fork=False) == mine.path
    assert session_argument("rel/new.jsonl", here, root, fork=False) == Path("rel/new.jsonl").absolute()
    with pytest.raises(SessionArgumentError, match=r"belongs to another workspace .*--fork def4 copies it"):
        session_argument("def4", here, root, fork=False)
    # Named by its path, another workspace's session is refused the same way (it was continued here).
    with pytest.raises(SessionArgumentError, match=r"belongs to another workspace \(.*there\).*--fork"):
        session_argument(str(theirs.path), here, root, fork=False)
    assert session_argument(str(mine.path), here, root, fork=False) == mine.path
    assert session_argument("def4", here, root, fork=True) == theirs.path
    assert session_argument(str(theirs.path), here, root, fork=True) == theirs.path
    with pytest.raises(SessionArgumentError, match="^No session found matching 'zzz'$"):
        session_argument("zzz", here, root, fork=True)
