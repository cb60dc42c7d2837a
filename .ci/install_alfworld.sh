#!/usr/bin/env bash
# Install ALFWorld's text engine (the `alfworld` extra) into the environment of the given pip:
#
#     .ci/install_alfworld.sh .venv/bin/pip
#
# - textworld[pddl] runs ALFWorld's PDDL games; its planner, fast-downward-textworld, ships only
#   sources and compiles for a few minutes on 2 cores, so its wheel is built once and kept in
#   ${REACT_BENCH_CACHE:-~/.cache/react-bench}/wheels for every later install (CI, fresh venvs).
# - alfworld 0.3.5 is the version whose text grammar the ReAct paper's prompts use (`put X in/on Y`,
#   `You arrive at loc N. ...`); 0.4.x changed it. It is installed --no-deps: its dependencies
#   (torch, ai2thor, opencv, a pinned werkzeug) are for the visual THOR path, which the text path
#   never imports (react_bench/envs/alfworld/engine.py loads the text environment by file).
set -euo pipefail

PIP=${1:?usage: $0 PIP   (e.g. .venv/bin/pip)}
FD_VERSION=20.6.4
WHEELS="${REACT_BENCH_CACHE:-$HOME/.cache/react-bench}/wheels"
mkdir -p "$WHEELS"
QUIET=${REACT_BENCH_PIP_QUIET:--q}

if ! "$PIP" show fast-downward-textworld 2>/dev/null | grep -qx "Version: $FD_VERSION"; then
    exec 9>"$WHEELS/.build-fd.lock"
    flock 9
    wheel=$(ls "$WHEELS"/fast_downward_textworld-"$FD_VERSION"-*.whl 2>/dev/null | head -n 1 || true)
    if [ -z "$wheel" ]; then
        echo "building fast-downward-textworld $FD_VERSION (ALFWorld's planner); this takes minutes"
        build_dir=$(mktemp -d)
        trap 'rm -rf "$build_dir"' EXIT
        # in a throwaway venv of its own: its build runs `python build.py`, which breaks inside a
        # venv that holds the project's editable install (the subprocess loses the stdlib)
        python3 -m venv "$build_dir/venv"
        (cd "$build_dir" && venv/bin/pip wheel $QUIET --no-deps --no-cache-dir -w "$build_dir" \
            "fast-downward-textworld==$FD_VERSION")
        built=$(ls "$build_dir"/fast_downward_textworld-"$FD_VERSION"-*.whl)
        cp "$built" "$WHEELS/.partial-fd.whl"
        mv "$WHEELS/.partial-fd.whl" "$WHEELS/$(basename "$built")"
        wheel="$WHEELS/$(basename "$built")"
    fi
    flock -u 9
    "$PIP" install $QUIET "$wheel"
fi
"$PIP" install $QUIET "textworld[pddl]==1.6.2" "termcolor>=2"
"$PIP" install $QUIET --no-deps "alfworld==0.3.5"

python_bin="$(dirname "$PIP")/python"
"$python_bin" -c "import textworld, alfworld; print('alfworld', alfworld.__version__ if hasattr(alfworld, '__version__') else '', 'textworld', textworld.__version__, 'import fine')"
