#!/usr/bin/env bash
# Installs llama-cpp-python into a venv from a wheel built for a portable x86-64 feature set.
#
# Why: llama.cpp's default build is -march=native. A wheel built on a CPU with AMX used AMX tiles and the
# embedded server died with a general protection fault on the first request (issue 8). pip's own wheel cache
# is keyed by the sdist, not by CMAKE_ARGS, so it could hand back such a native wheel. We therefore never let
# pip cache or reuse this wheel: we build it ourselves with --no-cache-dir into a folder whose name is a hash
# of the version, the Python tag and the exact flags, and check every wheel (new or cached) for AMX
# instructions before it is installed.
#
# Usage: scripts/llama_wheel.sh VENV_BIN VERSION
set -euo pipefail
bin="$1"
version="$2"
# AVX2/FMA/F16C is the x86-64-v3 baseline (every x86-64 server CPU since 2013); no AVX-512, no AMX.
flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
pytag=$("$bin/python" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
key=$(printf '%s\n%s\n%s\n%s\n' "$version" "$pytag" "$(uname -m)" "$flags" | sha256sum | cut -c1-16)
cache="${TOOLGAUGE_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolgauge/wheels}/llama-cpp-python-$version-$key"
here=$(cd "$(dirname "$0")" && pwd)

wheel=$(ls "$cache"/llama_cpp_python-*.whl 2>/dev/null | head -n1 || true)
if [ -n "$wheel" ] && ! "$bin/python" "$here/check_no_amx.py" --wheel "$wheel"; then
  echo ">>> cached wheel $wheel failed the portability check; rebuilding" >&2
  rm -rf "$cache"
  wheel=""
fi
if [ -z "$wheel" ]; then
  echo ">>> Compiling llama-cpp-python $version for a portable x86-64 feature set (no -march=native, no AMX)."
  echo ">>> This takes about 15-20 minutes on 2 cores; the wheel is kept in $cache for later setups."
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  CMAKE_ARGS="$flags" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
    "$bin/pip" wheel -q --no-deps --no-cache-dir --no-binary llama-cpp-python \
    -w "$tmp" "llama-cpp-python==$version"
  built=$(ls "$tmp"/llama_cpp_python-*.whl)
  "$bin/python" "$here/check_no_amx.py" --wheel "$built"
  mkdir -p "$cache"
  mv "$built" "$cache/"
  wheel=$(ls "$cache"/llama_cpp_python-*.whl | head -n1)
fi
# The binary only ever comes from our checked wheel (forced, so a native build already in the venv is replaced);
# the [server] extra's pure-Python dependencies then come from the index, the version being already satisfied.
"$bin/pip" install -q --no-cache-dir --no-deps --force-reinstall "$wheel"
"$bin/pip" install -q "llama-cpp-python[server]==$version"
"$bin/python" "$here/check_no_amx.py" --installed
