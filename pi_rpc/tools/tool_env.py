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

from pi_rpc.ai import key_variables
from pi_rpc.key_handoff import KNOWN_PROVIDER_KEY_VARS, restored_variable_names

# Ours (`key_variables`) and the other providers Pi knows (key_handoff.py keeps that list: it is read
# before anything else at start-up): a user of several providers has them set, and none is the
# business of a tool's command.
PROVIDER_KEY_VARS: frozenset[str] = frozenset([*key_variables(), *KNOWN_PROVIDER_KEY_VARS])


# What Pi sets in its own environment at start, so every command it runs can tell it runs under a
# coding agent (Pi 0.84: `AI_AGENT`, the cross-agent convention; `PI_CODING_AGENT`, Pi's own).
AGENT_ENV: dict[str, str] = {"AI_AGENT": "pi", "PI_CODING_AGENT": "true"}


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
