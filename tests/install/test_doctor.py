"""`pi-rpc doctor` (README.md, "Command line"): a clear line per check, keys by name and never by
value, config errors with their line, and an exit status that says whether something is broken. Run
as a user runs it: `python -m pi_rpc doctor` in a subprocess with its own HOME; the live request
goes to a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pi_rpc.commands.checks import check_folder, check_ripgrep
from tests.reliability.local_server import local_server

from .doctor_run import doctor

pytestmark = pytest.mark.e2e


def config_folder(home: Path) -> Path:
    folder = home / ".config" / "pi-rpc"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_every_line_starts_with_its_status_and_json_carries_the_same(tmp_path: Path) -> None:
    result = doctor(tmp_path)
    assert result.returncode == 0, result.stdout
    lines = [line for line in result.stdout.splitlines() if line and not line.startswith(" ")]
    statuses = {line.split()[0] for line in lines[:-1]}
    assert statuses <= {"ok", "info", "warn", "fail"}
    checks = json.loads(doctor(tmp_path, "--json").stdout)
    assert len(checks) == len(lines) - 1
    assert {"status": "warn", "label": "default model"}.items() <= next(
        c for c in checks if c["label"] == "default model"
    ).items()


def test_a_key_in_the_environment_is_named_never_shown(tmp_path: Path) -> None:
    result = doctor(tmp_path, ANTHROPIC_API_KEY="sk-ant-do-not-print-me")
    assert "ok    anthropic key: set: ANTHROPIC_API_KEY" in result.stdout
    assert "ok    default model: anthropic/claude-sonnet-4-6" in result.stdout
    assert "do-not-print-me" not in result.stdout + result.stderr


def test_a_broken_settings_json_is_a_problem_with_its_line(tmp_path: Path) -> None:
    (config_folder(tmp_path) / "settings.json").write_text(
        '{\n  "steeringMode": "all",\n  "permissions": {"defaultPolicy": "sometimes"}\n}\n'
    )
    result = doctor(tmp_path)
    assert result.returncode == 1
    assert "settings.json, line 3: Invalid enum value 'sometimes' - at `$.permissions.defaultPolicy`" in result.stdout


def test_a_bad_rule_in_the_workspace_settings_is_a_problem(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    (workspace / ".pi").mkdir(parents=True)
    (workspace / ".pi" / "settings.json").write_text('{"permissions": {"allow": ["bash(npm test"]}}')
    result = doctor(tmp_path, "--cwd", str(workspace))
    assert result.returncode == 1 and "fail  workspace settings:" in result.stdout


def test_a_models_json_with_a_wrong_type_names_path_and_line(tmp_path: Path) -> None:
    (config_folder(tmp_path) / "models.json").write_text(
        '{\n  "providers": {\n    "local": {\n      "baseUrl": "http://127.0.0.1:8080/v1",\n'
        '      "api": "openai-completions",\n      "models": [\n        {"id": "qwen", "contextWindow": "big"}\n'
        "      ]\n    }\n  }\n}\n"
    )
    result = doctor(tmp_path)
    assert result.returncode == 1
    assert (
        "models.json, line 7: Expected `int`, got `str` - at `providers.local.models[0].contextWindow`" in result.stdout
    )


def test_a_broken_models_json_still_reports_every_key(tmp_path: Path) -> None:
    # Each line stands on its own: the file's problem does not hide what the environment holds.
    (config_folder(tmp_path) / "models.json").write_text('{"providers": {"local": {"models": [{"id": 1}]}}}\n')
    result = doctor(tmp_path, ANTHROPIC_API_KEY="sk-ant-do-not-print-me")
    assert result.returncode == 1
    assert "fail  models.json: Invalid models config" in result.stdout
    assert "ok    anthropic key: set: ANTHROPIC_API_KEY" in result.stdout
    assert "info  openai key: OPENAI_API_KEY is not set" in result.stdout
    assert "warn  default model: unknown until models.json can be read" in result.stdout
    assert "ok    sessions folder:" in result.stdout
    assert "do-not-print-me" not in result.stdout + result.stderr


def test_a_world_readable_models_json_holding_a_literal_key_is_a_warning(tmp_path: Path) -> None:
    path = config_folder(tmp_path) / "models.json"
    path.write_text(
        '{"providers": {"proxy": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",'
        ' "apiKey": "sk-literal-in-the-file", "models": [{"id": "m"}]}}}'
    )
    path.chmod(0o644)
    result = doctor(tmp_path)
    assert "warn  models.json:" in result.stdout and "chmod 600" in result.stdout
    assert "ok    proxy key: set: written in models.json" in result.stdout
    assert "sk-literal-in-the-file" not in result.stdout


SSE_TOOL_CALLS = (Path(__file__).parents[1] / "providers" / "fixtures" / "openai_tool_calls.sse").read_bytes()


def _calls_when_forced(body: dict[str, Any]) -> tuple[int, bytes, str] | None:
    """A server whose template renders tools: a forced call is answered with one."""
    return (200, SSE_TOOL_CALLS, "text/event-stream") if body.get("tool_choice") == "required" else None


def test_live_request_sends_a_real_turns_requests(tmp_path: Path) -> None:
    with local_server(["qwen"], answer=_calls_when_forced) as server:
        result = doctor(tmp_path, "--live", "--base-url", server.url)
    assert result.returncode == 0, result.stdout
    assert f"ok    live request: openai/qwen at {server.url} answered a real turn's requests" in result.stdout
    assert "a forced tool call)" in result.stdout
    plain, turn, replay, image, forced = [chat.body or {} for chat in server.chats()]
    # One token each, not the model's ceiling.
    assert {body.get("max_tokens", body.get("max_completion_tokens")) for body in (plain, turn, replay, image)} == {1}
    assert [m["role"] for m in plain["messages"]] == ["user"]
    # What a prompt sends: the daemon's system prompt and its default tools.
    assert turn["messages"][0]["role"] == "system" and "<tools>\n- read:" in turn["messages"][0]["content"]
    assert [tool["function"]["name"] for tool in turn["tools"]] == ["read", "bash", "edit", "write"]
    assert [m["role"] for m in replay["messages"]] == ["system", "user", "assistant", "tool"]
    assert replay["messages"][2]["tool_calls"][0]["function"]["name"] == "read"
    # A --base-url model is taken to read images unless the server says otherwise: so one is sent.
    assert [part["type"] for part in image["messages"][-1]["content"]] == ["text", "image_url"]
    # Last, a call the model cannot decline, with the same tools.
    assert forced["tool_choice"] == "required" and forced["tools"] == turn["tools"]


def test_live_request_warns_when_a_forced_tool_call_is_answered_in_text(tmp_path: Path) -> None:
    # llama-server with a chat template that renders no tools: every request is taken, and the
    # forced call gets the recorded text answer.
    with local_server(["SmolLM2"]) as server:
        result = doctor(tmp_path, "--live", "--base-url", server.url)
    assert result.returncode == 0, result.stdout  # a warning: text turns work
    assert "warn  live request: openai/SmolLM2" in result.stdout
    assert 'answered text to a forced tool call (tool_choice "required")' in result.stdout
    assert "→ start the server with a chat template that renders tools: llama-server --jinja" in result.stdout


def _refuses_tool_choice(body: dict[str, Any]) -> tuple[int, bytes, str] | None:
    # llama-cpp-python's chatml-function-calling takes only a named tool_choice (a 500 otherwise).
    return (500, b"Internal Server Error", "text/plain") if "tool_choice" in body else None


def test_live_request_does_not_judge_a_server_that_refuses_tool_choice(tmp_path: Path) -> None:
    with local_server(["SmolLM2"], answer=_refuses_tool_choice) as server:
        result = doctor(tmp_path, "--live", "--base-url", server.url)
    assert result.returncode == 0, result.stdout
    assert "ok    live request: openai/SmolLM2" in result.stdout and "forced" not in result.stdout


def _llama_cpp_python_refusals(body: dict[str, Any]) -> tuple[int, bytes, str] | None:
    """llama-cpp-python's server as it fails: content as a list of parts crashes its chat template
    (200 and an empty stream), and `"content": null` beside tool calls is a 500."""
    messages: list[dict[str, Any]] = body["messages"]
    if any(m["role"] == "user" and isinstance(m["content"], list) for m in messages):
        return 200, b"", "text/event-stream"
    if any(m["role"] == "assistant" and m.get("content") is None for m in messages):
        return 500, b"Internal Server Error", "text/plain"
    return None


def test_live_request_names_the_setting_a_refused_image_needs(tmp_path: Path) -> None:
    with local_server(["SmolLM2"], answer=_llama_cpp_python_refusals) as server:
        result = doctor(tmp_path, "--live", "--base-url", server.url)
    assert result.returncode == 0, result.stdout  # text turns work: a warning
    assert "warn  live request: openai/SmolLM2" in result.stdout
    assert "the server refuses an image (content sent as a list of parts)" in result.stdout
    assert '→ in models.json, set "input": ["text"] for this model' in result.stdout


def test_live_request_names_the_compat_flag_a_refused_replay_needs(tmp_path: Path) -> None:
    with local_server(["SmolLM2"], answer=_llama_cpp_python_refusals) as server:
        models = {
            "providers": {
                "local": {
                    "baseUrl": server.url,
                    "api": "openai-completions",
                    "models": [{"id": "SmolLM2", "compat": {"requiresNonNullAssistantContent": False}}],
                }
            }
        }
        (config_folder(tmp_path) / "models.json").write_text(json.dumps(models))
        result = doctor(tmp_path, "--live", "--provider", "local", "--model", "SmolLM2")
    assert result.returncode == 1, result.stdout
    assert "fail  live request: local/SmolLM2" in result.stdout
    assert "the server refuses a tool call replayed with its result: 500" in result.stdout
    assert '→ in models.json, set "compat": {"requiresNonNullAssistantContent": true} for this model' in result.stdout


def test_live_request_failure_is_a_problem_and_the_key_stays_hidden(tmp_path: Path) -> None:
    with local_server(["qwen"], fail_status=401) as server:
        result = doctor(
            tmp_path, "--live", "--base-url", server.url, "--api-key-env", "MY_KEY", MY_KEY="sk-live-secret-value"
        )
    assert result.returncode == 1
    assert "fail  live request: openai/qwen at" in result.stdout and "401" in result.stdout
    assert "sk-live-secret-value" not in result.stdout + result.stderr


def test_live_request_without_a_model_says_so(tmp_path: Path) -> None:
    result = doctor(tmp_path, "--live")
    assert result.returncode == 1 and "fail  live request: no model is configured" in result.stdout


def test_missing_ripgrep_is_a_problem() -> None:
    check = check_ripgrep(lambda: None)
    assert check.status == "fail" and "grep and find cannot run" in check.detail


def test_folders_others_can_read_are_warned_about(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir(mode=0o755)
    sessions.chmod(0o755)
    check = check_folder("sessions folder", sessions, private=True)
    assert check.status == "warn" and check.hint == f"chmod 700 {sessions}"
    sessions.chmod(0o700)
    assert check_folder("sessions folder", sessions, private=True).status == "ok"
    assert check_folder("sessions folder", tmp_path / "new", private=True).detail.endswith("(created on first use)")


def test_an_untrusted_workspaces_ignored_settings_are_named_and_trust_lifts_it(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    (workspace / ".pi").mkdir(parents=True)
    (workspace / ".pi" / "settings.json").write_text('{"permissions": {"allow": ["bash"], "deny": ["write"]}}')
    result = doctor(tmp_path, "--cwd", str(workspace))
    assert result.returncode == 0, result.stdout
    [line] = [line for line in result.stdout.splitlines() if "workspace trust" in line]
    assert line.startswith("warn  workspace trust:") and "not trusted" in line and "ignored: permissions.allow" in line
    assert "--approve" in result.stdout
    (config_folder(tmp_path) / "trust.json").write_text(json.dumps({os.path.realpath(workspace): True}))
    trusted = doctor(tmp_path, "--cwd", str(workspace))
    assert "ok    workspace trust:" in trusted.stdout and "trusted (trust list)" in trusted.stdout


def test_an_untrusted_workspaces_own_resources_are_named_without_a_settings_file(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    (workspace / ".pi" / "skills" / "s").mkdir(parents=True)
    (workspace / ".pi" / "skills" / "s" / "SKILL.md").write_text("---\nname: s\ndescription: s\n---\n")
    (workspace / ".pi" / "SYSTEM.md").write_text("the repository's prompt")
    result = doctor(tmp_path, "--cwd", str(workspace))
    [line] = [line for line in result.stdout.splitlines() if "workspace trust" in line]
    assert line.startswith("warn  workspace trust:") and "not loaded: .pi/skills, .pi/SYSTEM.md" in line
    assert "ignored:" not in line and "--approve" in result.stdout
