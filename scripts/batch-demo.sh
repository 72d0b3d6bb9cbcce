#!/usr/bin/env bash
# A batch of four recordings for `flexbench run`: the bench rendered at 240 and 120 frames/s and
# at 140 and 120 rpm, and a fourth recording whose video is not a video. Renders them (once) into
# OUT/recordings, then runs pipelines/default.toml over them two at a time into OUT/runs.
#   usage: scripts/batch-demo.sh FLEXBENCH_BINARY OUT
# The batch exits non-zero (one recording fails, on purpose); the summary is
# OUT/runs/batch-summary.{csv,html,json}.
set -euo pipefail
bin=$1
out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/recordings" "$out/inputs"
render() { # name fps rpm duration
  local name=$1 fps=$2 rpm=$3 duration=$4
  [ -f "$out/recordings/$name/video.mp4" ] && return
  sed "s/omega_ref_rpm = 140.0/omega_ref_rpm = $rpm/" "$root/mechanisms/wind-pump.toml" > "$out/inputs/$name.mechanism.toml"
  sed -e "s/^fps = 240.0/fps = $fps/" -e "s/^duration = 2.0/duration = $duration/" "$root/recordings/default/camera.toml" > "$out/inputs/$name.camera.toml"
  "$bin" render --mechanism "$out/inputs/$name.mechanism.toml" --camera "$out/inputs/$name.camera.toml" --out "$out/recordings/$name"
}
render a-240fps-140rpm 240.0 140.0 2.0
render b-120fps-140rpm 120.0 140.0 2.0
render c-240fps-120rpm 240.0 120.0 2.0
broken="$out/recordings/d-broken"
if [ ! -f "$broken/video.mp4" ]; then
  mkdir -p "$broken"
  cp -r "$out/recordings/a-240fps-140rpm/views" "$out/recordings/a-240fps-140rpm/plane-view.png" "$out/recordings/a-240fps-140rpm/clicks.toml" "$broken/"
  echo "this is not a video file" > "$broken/video.mp4"
fi
set +e
"$bin" run "$root/pipelines/default.toml" --recordings "$out/recordings" --jobs 2 --out "$out/runs"
status=$?
set -e
echo "batch-demo: summary in $out/runs/batch-summary.html (exit status $status: one recording is broken on purpose)"
