"""`pi-rpc demo`: the guided demo (pi_rpc/demo/client.py)."""

from __future__ import annotations


def main(argv: list[str]) -> int:
    from pi_rpc.demo.client import main as demo_main

    demo_main(argv)
    return 0
