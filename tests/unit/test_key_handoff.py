"""The start-up hand-off that keeps provider keys out of `/proc/<pid>/environ` and `cmdline`
(pi_rpc/key_handoff.py), the key file, and the helper processes' environment."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from pi_rpc.ai.provider import StreamOptions
from pi_rpc.key_handoff import (
    API_KEY_FLAG,
    HANDOFF_FD_VARIABLE,
    KNOWN_PROVIDER_KEY_VARS,
    _without_api_key,
    hide_keys_from_proc,
    key_from_file,
    restored_variable_names,
)
from pi_rpc.session import ModelChoice
from pi_rpc.tools.tool_env import PROVIDER_KEY_VARS, helper_process_env

KEY = "sk-handoff-0123456789"
# Options and words that are not --api-key (a value may look like anything, even an option).
_words = st.lists(
    st.sampled_from(["--cwd", "/tmp", "--api-key-env", "--api-keyx", "-c", "hello", "--mode=pi", "x=y"]), max_size=6
)


@seed(20261201)
@settings(max_examples=200)
@given(_words, st.integers(min_value=0, max_value=6), st.booleans())
def test_api_key_is_cut_out_and_goes_back_where_it_was(words: list[str], at: int, joined: bool) -> None:
    at = min(at, len(words))
    flag = [f"{API_KEY_FLAG}={KEY}"] if joined else [API_KEY_FLAG, KEY]
    key, where, rest = _without_api_key([*words[:at], *flag, *words[at:]])
    assert (key, rest) == (KEY, words)
    # The re-executed image puts it back in the separate form, at the same place.
    assert [*rest[:where], API_KEY_FLAG, KEY, *rest[where:]] == [*words[:at], API_KEY_FLAG, KEY, *words[at:]]


@seed(20261201)
@settings(max_examples=100)
@given(_words)
def test_arguments_without_the_flag_are_left_alone(words: list[str]) -> None:
    assert _without_api_key(words) == (None, 0, words)


def test_nothing_after_the_double_dash_is_an_option() -> None:
    assert _without_api_key(["--", API_KEY_FLAG, KEY]) == (None, 0, ["--", API_KEY_FLAG, KEY])


_PROBE = """
import json, os, sys
from pi_rpc.key_handoff import hide_keys_from_proc, restored_variable_names
with open(os.environ["PROBE_LOG"], "a") as log:
    log.write("image\\n")  # one line per image the process runs
hide_keys_from_proc(None)  # as __main__.py: the known variables
hide_keys_from_proc(None, lambda: {"MY_PROVIDER_KEY", "OPENAI_API_KEY"})  # as cli.main: models.json's too
print(json.dumps({
    "environ": open("/proc/self/environ", "rb").read().decode(errors="replace"),
    "cmdline": open("/proc/self/cmdline", "rb").read().decode(errors="replace"),
    "argv": sys.argv[1:],
    "values": [os.environ.get(name) for name in ("OPENAI_API_KEY", "MY_PROVIDER_KEY", "NAMED_KEY")],
    "restored": sorted(restored_variable_names()),
    "handoff_left": any("HANDOFF" in name for name in os.environ),
    "fds": sorted(os.listdir("/proc/self/fd")),
}))
"""
SECRETS = ("openai-key-value", "models-json-key-value", "named-key-value")


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_reexecuted_process_shows_no_key_but_holds_it(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[2]), "PROBE_LOG": str(tmp_path / "log")}
    env |= dict(zip(("OPENAI_API_KEY", "MY_PROVIDER_KEY", "NAMED_KEY"), SECRETS, strict=True))
    args = ["--cwd", "/tmp", API_KEY_FLAG, KEY, "--api-key-env", "NAMED_KEY", "--", "msg"]
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], env=env, capture_output=True, text=True, check=True, timeout=120
    )
    seen = json.loads(done.stdout)
    for secret in (*SECRETS, KEY):
        assert secret not in seen["environ"] and secret not in seen["cmdline"]
    assert seen["argv"] == args
    assert seen["values"] == list(SECRETS)
    assert seen["restored"] == ["MY_PROVIDER_KEY", "NAMED_KEY", "OPENAI_API_KEY"]
    assert not seen["handoff_left"]
    assert seen["fds"] == ["0", "1", "2", "3"]  # the hand-off pipe is closed (3: the listing itself)
    # The early call re-executed for the known variable, the second once more for models.json's
    # only; neither re-executed for what was already hidden.
    assert (tmp_path / "log").read_text().count("image") == 3


def test_known_list_holds_our_providers_variables() -> None:
    from pi_rpc.ai import key_variables

    assert set(key_variables()) <= set(KNOWN_PROVIDER_KEY_VARS)


def test_nothing_to_hide_means_no_reexec() -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[2])}
    probe = (
        "import os; from pi_rpc.key_handoff import hide_keys_from_proc; "
        "hide_keys_from_proc(None, lambda: {'MY_PROVIDER_KEY'}); print(os.environ.get('PI_RPC_KEY_HANDOFF_FD'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, "--cwd", "/"], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "None"


def test_in_process_call_never_reexecutes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_PROVIDER_KEY", "value-1234")
    monkeypatch.setattr(os, "execve", _refuse)
    hide_keys_from_proc([API_KEY_FLAG, KEY], lambda: {"MY_PROVIDER_KEY"})


def _refuse(*args: object) -> None:
    raise AssertionError("re-executed the test process")


@pytest.mark.parametrize("value", ["not-a-descriptor", "0", "99999"])
def test_a_stray_handoff_variable_is_ignored(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """Set by hand, it takes nothing back and never reads stdin (the protocol's stream)."""
    monkeypatch.setenv(HANDOFF_FD_VARIABLE, value)
    monkeypatch.setattr(os, "execve", _refuse)
    monkeypatch.setattr(os, "read", _refuse)
    hide_keys_from_proc(None, lambda: set())
    assert HANDOFF_FD_VARIABLE not in os.environ
    assert restored_variable_names() == frozenset()


def test_key_file_gives_its_first_line(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text(f"  {KEY}  \nsecond line\n")
    assert key_from_file(str(path)) == KEY


@pytest.mark.parametrize("content", [None, "", "\n  \n"])
def test_a_missing_or_empty_key_file_is_a_clear_error(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "key"
    if content is not None:
        path.write_text(content)
    with pytest.raises(argparse.ArgumentTypeError, match=str(path)):
        key_from_file(str(path))


def test_helper_processes_get_no_provider_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(name, "value-1234")
    monkeypatch.setenv("UNRELATED_SETTING", "kept")
    env = helper_process_env()
    assert not PROVIDER_KEY_VARS & set(env)
    assert env["UNRELATED_SETTING"] == "kept"


def test_objects_that_carry_a_key_print_none() -> None:
    from pi_rpc.ai import list_models

    options = StreamOptions(api_key=KEY, headers={"Authorization": f"Bearer {KEY}"})
    choice = ModelChoice(model=list_models()[0], stream_fn=_refuse, api_key=KEY, headers={"x-api-key": KEY})  # type: ignore[arg-type]
    for shown in (repr(options), repr(choice), str(options), f"{choice}", json.dumps([repr(choice)])):
        assert KEY not in shown and "[redacted]" in shown
    assert "max_retries=3" in repr(options)
