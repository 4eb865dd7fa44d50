"""`pi-rpc protocol`: the wire contract of the installed version, for users without a checkout.

PROTOCOL.md and schema.json travel in the wheel (pi_rpc/protocol_files/, links to protocol/ in a
checkout). `--schema` prints the schema generated from the code itself, which a test keeps equal
to the shipped file.
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from importlib.resources.abc import Traversable


def protocol_file(name: str) -> Traversable:
    """`PROTOCOL.md` or `schema.json` as installed with this package."""
    return resources.files("pi_rpc").joinpath("protocol_files", name)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="pi-rpc protocol", description="Print the pi-rpc wire protocol of this version."
    )
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--schema", action="store_true", help="print the JSON Schema of every message instead")
    shown.add_argument("--path", action="store_true", help="print where PROTOCOL.md is installed")
    args = parser.parse_args(argv)
    if args.schema:
        from pi_rpc.modes.jsonrpc.schema import render

        sys.stdout.buffer.write(render())
    elif args.path:
        sys.stdout.write(f"{protocol_file('PROTOCOL.md')}\n")
    else:
        sys.stdout.write(protocol_file("PROTOCOL.md").read_text(encoding="utf-8"))
    sys.stdout.flush()
    return 0
