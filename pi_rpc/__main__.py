"""`python -m pi_rpc`, and the `pi-rpc` command (pyproject.toml points it at `run`)."""

import gc

from pi_rpc.key_handoff import hide_keys_from_proc


def run() -> None:
    # No cyclic collection while the daemon imports: the start-up makes tens of thousands of
    # objects that live as long as the process (modules, classes, functions) and no garbage worth
    # a pass, and the passes cost several percent of the start. cli.resume_collector turns it on.
    gc.disable()
    # Before the daemon's imports: a re-exec that hides the provider keys then costs one
    # interpreter start, not two imports of the whole daemon (key_handoff.py; cli.main calls it
    # again for models.json's variables).
    hide_keys_from_proc(None)
    from pi_rpc.cli import main

    main()


if __name__ == "__main__":
    run()
