#!/usr/bin/env bash
# A picture of the run viewer, for looking at it without a desktop:
#   scripts/screenshot_viewer.sh [RUN_DIR] [OUT.png]
# Without RUN_DIR it makes a small scripted run first. Exports the run to inspect_ai's log
# format, serves it with `inspect view` on 127.0.0.1 and takes a headless Chromium screenshot
# (scripts/cdp_screenshot.py). CLICK=<text> clicks that text first (e.g. a sample's id).
# Needs the `viewer` extra (make setup installs it) and Debian's chromium (apt-get install chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${2:-results/viewer.png}
work=$(mktemp -d)
trap 'kill "${server_pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
run_dir=${1:-}
if [ -z "$run_dir" ]; then
    printf '%s' '[" I should search Scott Derrickson.\nAction 1: Search[Scott Derrickson]", " He is American.\nAction 2: Finish[yes]", " I search Ed Wood.\nAction 1: Search[Ed Wood]", " So no.\nAction 2: Finish[no]"]' > "$work/script.json"
    "$PY" scripts/eval.py mode=react n=2 model=scripted "model.script=$work/script.json" "results_dir=$work/results" run_id=view show=none >/dev/null
    run_dir=$(dirname "$(find "$work/results" -name run.json)")
fi
log=$("$PY" scripts/export.py "$run_dir" --to inspect)
port=$((20000 + RANDOM % 20000))
"$(dirname "$PY")/inspect" view --log-dir "$(dirname "$log")" --host 127.0.0.1 --port "$port" >"$work/view.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.2; done
mkdir -p "$(dirname "$OUT")"
"$PY" scripts/cdp_screenshot.py "http://127.0.0.1:$port/#/logs/$(basename "$log")" "$OUT" --wait 5 \
    ${CLICK:+--click "$CLICK"}
echo "$OUT"
