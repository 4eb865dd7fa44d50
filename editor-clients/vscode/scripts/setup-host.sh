#!/usr/bin/env bash
# Installs the real VS Code host the in-host tests run in: code-server (VS Code 1.100.3 with a Node
# extension host) from npm, Debian's Chromium and playwright-core to drive it. Idempotent: a host
# that is already in place is left alone, so a second `make test` installs nothing.
set -euo pipefail
DEST=${1:-$(cd "$(dirname "$0")/.." && pwd)/.vscode-test-host}
CS_VERSION=${CS_VERSION:-4.100.3}        # last code-server whose engines.node is 20
PW_VERSION=${PW_VERSION:-1.65.1}
if ! command -v chromium >/dev/null || ! command -v rg >/dev/null || ! dpkg -s libkrb5-dev >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium ripgrep libkrb5-dev >/dev/null
fi
if [ -e "$DEST/node_modules/code-server/lib/vscode/node_modules/node-pty/build/Release/pty.node" ] \
   && [ "$(node -p "require('$DEST/node_modules/code-server/package.json').version" 2>/dev/null)" = "$CS_VERSION" ]; then
  exit 0
fi
mkdir -p "$DEST" && cd "$DEST"
cat > package.json <<JSON
{ "name": "vscode-test-host", "private": true,
  "allowScripts": { "argon2": true, "code-server": false } }
JSON
npm install --no-audit --no-fund --loglevel=error "code-server@$CS_VERSION" "playwright-core@$PW_VERSION"
# What code-server's postinstall.sh does, done so that it works offline and with npm 11:
cd node_modules/code-server/lib/vscode
node -e '
const fs=require("fs");const p=JSON.parse(fs.readFileSync("package.json"));
p.allowScripts={"@parcel/watcher":true,"@vscode/spdlog":true,"@vscode/deviceid":true,"kerberos":true,
 "native-watchdog":true,"node-pty":true,"@vscode/ripgrep":false,"@vscode/windows-ca-certs":false,
 "@vscode/windows-process-tree":false,"@vscode/windows-registry":false};
fs.writeFileSync("package.json",JSON.stringify(p,null,2));'
npm_config_yes=true npm install --omit=dev --no-audit --no-fund --loglevel=error  # node-pty's post-install runs npx
# @vscode/ripgrep would download its binary from GitHub; Debian's rg does the same job.
mkdir -p node_modules/@vscode/ripgrep/bin && cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
ln -sfn node_modules node_modules.asar
ln -sf code-linux.sh bin/remote-cli/code-server
ln -sf browser-linux.sh bin/helpers/browser.sh
(cd extensions && npm install --omit=dev --no-audit --no-fund --loglevel=error)
