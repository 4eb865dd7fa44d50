"""The session's model and thinking level as ACP session config options.

Both are `select` options: `model` (values `<provider>/<model id>`, every model the daemon can
reach) and `thought_level` (the levels the current model supports). Setting one answers the
whole set again, since a new model can change the thinking levels on offer.
"""

from __future__ import annotations

from acp import RequestError
from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption

from pi_rpc.ai import Model
from pi_rpc.modes.acp.errors import SESSION_REFUSALS, session_error
from pi_rpc.session import AgentSession

MODEL_OPTION = "model"
THINKING_OPTION = "thought_level"

THINKING_NAMES: dict[str, str] = {
    "off": "Off",
    "minimal": "Minimal",
    "low": "Low",
    "medium": "Medium",
    "high": "High",
    "xhigh": "Extra high",
}


def model_value(model: Model) -> str:
    return f"{model.provider}/{model.id}"


def config_options(session: AgentSession) -> list[SessionConfigOptionSelect]:
    """The options as they stand; no model option while no model is configured or known."""
    options: list[SessionConfigOptionSelect] = []
    models = session.current_model.available_models()
    if session.current_model.model is not None and models:
        options.append(
            SessionConfigOptionSelect(
                type="select",
                id=MODEL_OPTION,
                name="Model",
                category="model",
                current_value=model_value(session.current_model.model),
                options=[
                    SessionConfigSelectOption(value=model_value(m), name=m.name or m.id, description=m.provider)
                    for m in models
                ],
            )
        )
    options.append(
        SessionConfigOptionSelect(
            type="select",
            id=THINKING_OPTION,
            name="Thinking",
            category="thought_level",
            current_value=session.current_model.thinking_level,
            options=[
                SessionConfigSelectOption(value=level, name=THINKING_NAMES.get(level, level))
                for level in session.current_model.thinking_levels()
            ],
        )
    )
    return options


def set_config_option(session: AgentSession, config_id: str, value: str | bool) -> None:
    """Apply one option (the next model request uses it); a bad id or value is -32602."""
    if not isinstance(value, str):
        raise RequestError.invalid_params({"details": f"{config_id} takes a string value"})
    if config_id == MODEL_OPTION:
        set_model(session, value)
    elif config_id == THINKING_OPTION:
        if value not in session.current_model.thinking_levels():
            raise RequestError.invalid_params({"details": f"Unknown thinking level: {value}"})
        session.current_model.set_thinking_level(value)
    else:
        raise RequestError.invalid_params({"details": f"Unknown config option: {config_id}"})


def set_model(session: AgentSession, value: str) -> None:
    """`<provider>/<model id>` (a model id alone is looked up among the available models)."""
    provider, _, model_id = value.partition("/")
    if not model_id:
        match = next((m for m in session.current_model.available_models() if m.id == value), None)
        provider, model_id = (match.provider, match.id) if match is not None else ("", value)
    try:
        session.current_model.set_model(provider, model_id)
    except SESSION_REFUSALS as exc:  # no such model
        raise session_error(exc) from exc
