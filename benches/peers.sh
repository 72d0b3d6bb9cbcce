#!/usr/bin/env bash
# `make bench`: flexbench against its peers on the same inputs, as ratios, into docs/benchmarks.md.
# Installs what it needs: a venv of its own with numpy, scipy and opencv-python-headless
# (benches/venv.sh), a release build of flexbench and of the kernels' side
# (benches/criterion/examples/peers.rs), the bench rendered for 10 s and for 100 s (once, kept
# under the build directory: about 2 and 15 minutes) and the calibration views of
# benches/calibration-camera.toml (once). Then benches/profile.sh takes each stage's profile on
# the shipped recording (perf), and benches/peers.py times the peers and writes the table with
# the profiles' tops.
#   usage: benches/peers.sh [FILE]   (the page written; default docs/benchmarks.md)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out="${1:-docs/benchmarks.md}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/flexbench/target}"
source benches/venv.sh
"$python" -c "import cv2" 2>/dev/null || "$venv/bin/pip" install --quiet opencv-python-headless
cargo build --locked --release -q -p flexbench
bin="$CARGO_TARGET_DIR/release/flexbench"
long="$CARGO_TARGET_DIR/bench-long"
source benches/render.sh
render 10.0 "$long"
render 100.0 "$CARGO_TARGET_DIR/bench-100s"
calset="$CARGO_TARGET_DIR/bench-calibration"
if [ ! -f "$calset/rec/truth/camera.yaml" ]; then
  echo "rendering the calibration benchmark's views (once; kept in $calset)"
  "$bin" render --mechanism mechanisms/wind-pump.toml --camera benches/calibration-camera.toml --out "$calset/rec" > /dev/null
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Kernels on one thread on both sides.
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
cargo run --locked --release -q -p flexbench-benches --example peers -- "$work"
echo "the Python package against the command line (a release build of the package; about 3 minutes)"
bash benches/python-overhead.sh "$bin" "$work/python.section" "$root/recordings/default/truth/tracks.csv" "$long/rec/truth/tracks.csv"
echo "profiling each stage on the shipped recording (perf; about 2 minutes)"
bash benches/profile.sh "$bin" "$work/profiles.section"
"$python" benches/peers.py "$work" "$bin" "$long/rec/video.mp4" "$long/rec/truth/tracks.csv" "$CARGO_TARGET_DIR/bench-100s/rec/video.mp4" "$root/$out" "$calset/rec"
