"""What the daemon imports before its first request: nothing the first request may not need.

httpx (providers), jsonschema (tool-argument validation) and Pillow (images) are imported on
first use; together they cost about a third of the daemon's import time without lsprotocol. So are
what one command alone needs: the HTML export's writer (and `html`'s entity table) and `difflib`
(an edit's diff, a rewind's, the nearest model names of a "Model not found" message).
"""

from __future__ import annotations

import subprocess
import sys

from pi_rpc.ai.apis import API_DECLARATIONS

DEFERRED = (
    "httpx",
    "jsonschema",
    "PIL",
    "pi_rpc.ai.http",
    # every HTTP API's provider module (the scripted model's is light, and the demo's default)
    *(declaration.module for declaration in API_DECLARATIONS.values() if declaration.provider is not None),
    "pi_rpc.session.storage.export_html",
    "html.entities",
    "difflib",
)

_PROBE = """
import sys
import pi_rpc.cli, pi_rpc.modes.stdio, pi_rpc.session.session, pi_rpc.tools.registry, pi_rpc.modes.jsonrpc.server
print(" ".join(name for name in sys.argv[1:] if name in sys.modules))
"""


def test_start_up_leaves_providers_validation_and_images_unloaded() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *DEFERRED], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == []
