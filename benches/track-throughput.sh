#!/usr/bin/env bash
# Throughput of `flexbench track` against decoding alone (`flexbench probe`), on the same file,
# best of N runs each. The aim (issue 4): tracking adds at most 25 % to decoding.
# Usage: benches/track-throughput.sh [VIDEO|long] [CALIBRATION] [RUNS]
#   long: a 10 s rendering of the default recording (made once, kept under the target dir), so
#   that the commands' start-up and table writing weigh less than on the shipped 2 s.
# The vision crate is optimised in every profile (Cargo.toml), and decoding is OpenCV's, so the
# dev build measures the same code as a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/flexbench/target}"
video="${1:-recordings/default/video.mp4}"
cal="${2:-recordings/default/truth/camera.yaml}"
runs="${3:-5}"
cargo build -q -p flexbench
bin="$CARGO_TARGET_DIR/debug/flexbench"
if [ "$video" = long ]; then
  long="$CARGO_TARGET_DIR/bench-long"
  if [ ! -f "$long/rec/video.mp4" ]; then
    mkdir -p "$long"
    sed 's/^duration = .*/duration = 10.0/; s/^views = .*/views = 0/' recordings/default/camera.toml > "$long/camera.toml"
    "$bin" render --mechanism mechanisms/wind-pump.toml --camera "$long/camera.toml" --out "$long/rec" > /dev/null
  fi
  video="$long/rec/video.mp4"
  cal="$long/rec/truth/camera.yaml"
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
best() { # command... -> best wall time in seconds
  local b=""
  for _ in $(seq "$runs"); do
    local s e
    s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N)
    b=$(python3 -c "import sys; t=$e-$s; b='$b'; print(t if not b else min(t, float(b)))")
  done
  echo "$b"
}
frames=$("$bin" probe --video "$video" | sed -E 's/.*: ([0-9]+) frames.*/\1/')
decode=$(best "$bin" probe --video "$video")
track=$(best "$bin" track --video "$video" --calibration "$cal" --out "$out/tracks.parquet")
python3 - "$frames" "$decode" "$track" "$video" <<'PY'
import sys
frames, decode, track, video = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
print(f"{video}: {frames} frames")
print(f"  decode only (flexbench probe): {decode:.3f} s, {frames/decode:.0f} frames/s")
print(f"  decode + track (flexbench track, tables written): {track:.3f} s, {frames/track:.0f} frames/s")
print(f"  tracking adds {100*(track/decode-1):.0f} % to decoding (aim: at most 25 %)")
PY
