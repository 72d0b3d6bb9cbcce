#!/usr/bin/env bash
# The whole chain (track, smooth, process, fem, compare, report; the calibration given) on the
# bench rendered for 10 s and for 100 s (made by benches/peers.sh, or here when missing): peak
# resident memory (GNU time), wall time and processor time (user + system) of each run. About
# 10 s and 1 minute on 2 cores (300 s: 3 minutes, and about 20 to render it once). A failed run
# prints its log's end and stops.
#   usage: benches/long-run.sh [SECONDS...]   (default: 10 100)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/flexbench/target}"
cargo build --locked --release -q -p flexbench
bin="$CARGO_TARGET_DIR/release/flexbench"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
source benches/render.sh
for s in "${@:-10 100}"; do
  for seconds in $s; do
    folder="$CARGO_TARGET_DIR/bench-${seconds}s"
    [ "$seconds" = 10 ] && folder="$CARGO_TARGET_DIR/bench-long" # the name benches/peers.sh gives it
    render "$seconds.0" "$folder"
    rec="$folder/rec"
    cat > "$work/p$seconds.toml" <<TOML
[run]
mechanism = "$(pwd)/mechanisms/wind-pump.toml"
recording = "$rec"

[inputs]
calibration = "$rec/truth/camera.yaml"

[process]  # as pipelines/default.toml
method = "smoother"
periodic = true
refine_horizontal = true
TOML
    if ! /usr/bin/time -f "%M %e %U %S" -o "$work/time" "$bin" run "$work/p$seconds.toml" --out "$work/out$seconds" > "$work/log$seconds" 2>&1; then
      echo "$seconds s of video: the run failed" >&2
      tail -n 20 "$work/log$seconds" >&2
      exit 1
    fi
    read -r kb wall user sys < "$work/time"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')
    echo "$seconds s of video: whole run $wall s ($cpu s of processor time), peak resident memory $((kb / 1024)) MB"
    grep -E '^\[[0-9]/[0-9]\]' "$work/log$seconds" | sed 's/^/  /'
  done
done
