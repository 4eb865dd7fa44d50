#!/usr/bin/env bash
# The VS Code part of `make test`: installs what it needs (Node packages, code-server, Chromium;
# each cached, so a second run installs nothing), type-checks and lints (ESLint with type
# information and the layering of src/), then runs the unit tests under node --test and the
# in-host tests in a real VS Code host against the real daemon.
set -euo pipefail
cd "$(dirname "$0")/.."
export PI_RPC="${PI_RPC:-$(cd ../.. && pwd)/.venv/bin/pi-rpc}"

if [ ! -e node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
scripts/setup-host.sh

node scripts/gen-types.mjs --check
npx tsc -p . --noEmit
npx eslint --max-warnings 0 .
node scripts/build.mjs --production --tests
node --test out/test/unit/
npx vsce package --no-dependencies --allow-missing-repository --skip-license --no-rewrite-relative-links -o out/pi-vscode.vsix >/dev/null
node test/host/run.mjs
