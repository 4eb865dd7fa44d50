"""`pi-rpc trust`: record the user's trust of a folder in the trust list (session/configuration/trust.py), or
forget it, or say what decides it now; the command that the untrusted folder's warning and
`pi-rpc doctor` point to, so nobody has to edit `trust.json` by hand."""

from __future__ import annotations

import argparse
import os
import sys

from pi_rpc.session import SettingsError, decide_trust, load_settings, needs_trust, record_trust, trust_file


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="pi-rpc trust",
        description="Trust a folder (default: this one), so that its own .pi/settings.json may loosen "
        "approvals (allow rules, defaultPolicy), start its mcpServers and load its skills, prompt "
        "templates and SYSTEM.md. Recorded in your trust list; a folder's decision holds for the "
        "folders in it.",
    )
    parser.add_argument("folder", nargs="?", default=os.getcwd(), help="the folder (default: .)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--no", action="store_true", help="record that the folder is not trusted")
    what.add_argument("--forget", action="store_true", help="remove the folder's record")
    what.add_argument("--show", action="store_true", help="say whether it is trusted and why; record nothing")
    args = parser.parse_args(argv)
    folder = os.path.abspath(os.path.expanduser(args.folder))
    if not os.path.isdir(folder):
        sys.stderr.write(f"pi-rpc trust: {folder} is not a folder\n")
        return 2
    if not args.show:
        try:
            record_trust(folder, None if args.forget else not args.no)
        except OSError as exc:
            sys.stderr.write(f"pi-rpc trust: cannot write {trust_file()}: {exc}\n")
            return 1
    try:
        user = load_settings()
    except SettingsError as exc:
        sys.stderr.write(f"pi-rpc trust: {exc}\n")
        return 2
    default = user.default_project_trust if isinstance(user.default_project_trust, str) else None
    decision = decide_trust(folder, None, default)
    state = "trusted" if decision.trusted else "not trusted"
    reason = {
        "trust list": f"the trust list, {trust_file()}",
        "defaultProjectTrust": "settings.json defaultProjectTrust",
        "nothing to trust": "it holds no settings or resources of its own",
        "command line": "the command line",
    }[decision.source]
    sys.stdout.write(f"{folder}: {state} (decided by {reason})\n")
    if decision.trusted and not needs_trust(folder):
        sys.stdout.write("It holds no .pi/ settings or resources yet; once it does, this decision applies.\n")
    return 0
