"""Which of the daemon's environment variables a tool's child process does not get.

The daemon holds the provider keys in its environment; a shell tool that passed them on would
let the model print them into the transcript (`env`, `printenv OPENAI_API_KEY`), and from there
into the editor and the session file. So bash and powershell children get the daemon's
environment minus every variable that holds a provider key: the known providers' variables,
plus those `models.json` names for its `apiKey` and header values (the CLI adds these). A user
who wants a tool to reach a provider opts in (`passProviderKeysToTools` in settings.json, or
`--pass-provider-keys-to-tools`), and then nothing is withheld.

The daemon's own helper processes (the tool supervisor and its keepers, ripgrep) never get a key,
opt-in or not: a command can read their `/proc/<pid>/environ`, and they need none
(`helper_process_env`). A command that is to get the keys gets them in its own environment.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping

from pi_rpc.ai import PROVIDER_ENV
from pi_rpc.key_handoff import restored_variable_names

# The key variables of the providers Pi knows, besides ours (PROVIDER_ENV): a user of several
# providers has them set, and none is the business of a tool's command.
_OTHER_PROVIDER_KEY_VARS = (
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_OAUTH_TOKEN",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GROQ_API_KEY",
    "CEREBRAS_API_KEY",
    "XAI_API_KEY",
    "OPENROUTER_API_KEY",
    "AI_GATEWAY_API_KEY",
    "ZAI_API_KEY",
    "MISTRAL_API_KEY",
    "MINIMAX_API_KEY",
    "MINIMAX_CN_API_KEY",
    "DEEPSEEK_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "PERPLEXITY_API_KEY",
    "OPENCODE_API_KEY",
    "KIMI_API_KEY",
)

PROVIDER_KEY_VARS: frozenset[str] = frozenset(
    [key_var for key_var, _ in PROVIDER_ENV.values()] + list(_OTHER_PROVIDER_KEY_VARS)
)


def without_withheld(env: Mapping[str, str], withheld: Collection[str]) -> dict[str, str]:
    """`env` minus the withheld variables (compared case-insensitively: Windows names are)."""
    if not withheld:
        return dict(env)
    folded = {name.upper() for name in withheld}
    return {name: value for name, value in env.items() if name.upper() not in folded}


def helper_process_env() -> dict[str, str]:
    """The environment of the daemon's helper processes: the daemon's minus every provider key,
    the known ones and those the daemon hid from its own `/proc` entry at start (key_handoff.py)."""
    return without_withheld(os.environ, PROVIDER_KEY_VARS | restored_variable_names())
