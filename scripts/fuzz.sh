#!/usr/bin/env bash
# Fuzz every reader of user input (fuzz/fuzz_targets) with libFuzzer through cargo fuzz, each
# for SECONDS (default 600), JOBS targets at a time (default 2). Needs the nightly toolchain
# and cargo-fuzz (installed here from crates.io when missing). Not part of `make test`.
#   usage: scripts/fuzz.sh [SECONDS] [JOBS] [TARGET...]
# Seeds: the shipped inputs and the bad-input corpus. A crash is written to
# fuzz/artifacts/<target>/; fix it and copy the input into tests/bad-input as a regression case.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
jobs=${2:-2}
shift $(( $# > 2 ? 2 : $# )) || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(tracks_csv tracks_parquet wide_csv mechanism_toml pipeline_toml calibration_yaml video view_image)
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
rustup toolchain list | grep -q nightly || { echo "fuzz: the nightly toolchain is needed (rustup toolchain install nightly)" >&2; exit 1; }
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$HOME/.cache/flexbench/fuzz-target}
cd "$root/fuzz"
cargo +nightly fuzz build -O
seed() { # target, files...
  local dir="$root/fuzz/corpus/$1"; shift
  mkdir -p "$dir"
  for f in "$@"; do [ -f "$f" ] && cp "$f" "$dir/seed-$(basename "$f")"; done
  return 0
}
b="$root/tests/bad-input"
seed tracks_csv "$root/recordings/default/truth/tracks.csv" "$b"/tracks/*.csv
seed tracks_parquet "$root/recordings/default/truth/tracks.parquet" "$b"/tracks/*.parquet
seed wide_csv "$b/pipeline/wide.csv" "$b"/tracks/*.csv
seed mechanism_toml "$root"/mechanisms/wind-pump.toml "$root"/mechanisms/slider-crank.toml "$root"/mechanisms/four-bar.toml "$b"/mechanism/*.toml
seed pipeline_toml "$root/pipelines/default.toml" "$b"/pipeline/*.toml
seed calibration_yaml "$root/calibration/default.yaml" "$b"/calibration/*.yaml
seed video "$root/recordings/default/video.mp4" "$b"/video/*.mp4
seed view_image "$root/recordings/default/views/view01.png" "$root/recordings/default/plane-view.png" "$b"/views/*/*
run() {
  local t=$1
  local log="$root/fuzz/logs/$t.log"
  mkdir -p "$root/fuzz/logs"
  if cargo +nightly fuzz run -O "$t" -- -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 > "$log" 2>&1; then
    echo "$t: no crash in $seconds s ($(grep -Eo '^#[0-9]+' "$log" | tail -1 | tr -d '#') inputs run)"
  else
    echo "$t: CRASH, see $log and fuzz/artifacts/$t/"
  fi
}
export -f run
export root seconds
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run {}'
