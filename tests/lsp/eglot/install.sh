#!/bin/sh
# Emacs and eglot for tests/lsp/test_eglot.py, from Debian (emacs-nox, elpa-eglot). Does nothing
# when both are there already; without root or apt-get it says so and the test skips itself.
set -eu
if command -v emacs >/dev/null 2>&1 && emacs --batch --eval "(require 'eglot)" >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "tests/lsp/test_eglot.py will be skipped: install emacs-nox and elpa-eglot to run it" >&2
  exit 0
fi
install() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends emacs-nox elpa-eglot >/dev/null
}
# A fresh image has no package lists yet: fetch them only when the first attempt needs them.
install || { apt-get update -qq && install; }
