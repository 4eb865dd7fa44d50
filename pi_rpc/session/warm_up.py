"""A fresh daemon readies itself for its first prompt while it waits for one.

Start-up imports only what the handshake needs (`initialize`, Pi mode's `get_state`: the daemon
answers sooner and sits smaller), so the first prompt used to pay for the rest: the agent loop,
the model's provider module and httpx, each active tool's compiled validator (and jsonschema, for
a schema that needs more than `pi_rpc/ai/plain_schema.py` checks), the HTTP client of the model's
endpoint (its CA bundle, for https), the shell tools' process supervisor and output accumulator,
about 100 ms on the first turn. An editor starts the daemon well before the user's first prompt,
so that work is done once the daemon has been up for `WARM_UP_AFTER_S`, one step per pass of the
event loop; the supervisor, a process of its own, is started as soon as the daemon has answered
its first request (`AtOnce`) and boots meanwhile.

Nothing here reaches the network or runs anything of the user's: no connection is opened, and the
supervisor runs no command until one is asked for. A step that fails is logged and skipped; the
first prompt then meets the same failure where it is reported properly.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Sequence

import anyio
import anyio.lowlevel

from pi_rpc.ai import load_provider, prepare_validator
from pi_rpc.session.configuration.config import SessionConfig

_log = logging.getLogger(__name__)

# Long enough that a client's first requests (initialize, state, a prompt sent at once) are not
# kept waiting behind a step; short against the seconds before a user's first prompt.
WARM_UP_AFTER_S = 0.25

Step = Callable[[], object]


class AtOnce(functools.partial[object]):
    """A step run as soon as the daemon has answered its first request, not after
    `WARM_UP_AFTER_S`: it starts a process of its own (the shell tools' supervisor), which then
    boots beside the daemon instead of in the way of the first shell command, a few hundred
    milliseconds later on a loaded machine. Not before the answer: on a machine with two cores a
    Python booting beside the daemon's start delays the handshake."""


def load_the_loop() -> None:
    """What every run loads that a session's start does not: the agent loop and its tool-call
    batch (through the agent's package, whose `LoopConfig` lives there)."""
    from pi_rpc.agent import LoopConfig  # noqa: F401 - imported for its module


def first_prompt_steps(config: SessionConfig) -> list[Step]:
    """What the session's first prompt would do first, in the order it would (the helpers a tool
    starts, `AtOnce`, first)."""
    steps: list[Step] = [
        AtOnce(tool.prepare)
        for tool in (config.tools.definitions.get(name) for name in config.tools.active)
        if tool is not None and tool.prepare is not None
    ]
    steps.append(load_the_loop)
    choice = config.models.choice
    if choice is not None:
        steps.append(functools.partial(load_provider, choice.model.api))
        if choice.http is not None and not choice.scripted:
            steps.append(functools.partial(choice.http.client_for, choice.model.base_url))
    for name in config.tools.active:
        tool = config.tools.definitions.get(name)
        if tool is None:
            continue
        steps.append(tool.declaration)
        steps.append(functools.partial(prepare_validator, tool.parameters))
    return steps


async def run_warm_up(
    steps: Sequence[Step],
    after_s: float = WARM_UP_AFTER_S,
    idle: Callable[[], Awaitable[None]] | None = None,
    answered: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Run `steps`, the `AtOnce` ones once `answered` returns (the first answer is out) or
    `after_s` has passed, the rest after `after_s`, each once `idle` returns (no run going): a
    prompt that came in first loads what it needs itself (a short answer needs no tool's
    validator), and the rest waits until its run is over."""
    started = anyio.current_time()
    if answered is not None:
        with anyio.move_on_after(after_s):
            await answered()
    for step in steps:
        if isinstance(step, AtOnce):
            _run(step)
    await anyio.sleep(max(0.0, started + after_s - anyio.current_time()))
    for step in steps:
        if isinstance(step, AtOnce):
            continue
        if idle is not None:
            await idle()
        _run(step)
        await anyio.lowlevel.checkpoint()  # a request that came in meanwhile goes first


def _run(step: Step) -> None:
    try:
        step()
    except Exception:  # the first prompt meets it again, and reports it there
        _log.debug("warm-up step %r failed", step, exc_info=True)
