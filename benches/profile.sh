#!/usr/bin/env bash
# The top of each stage's profile on the shipped recording, as a Markdown section for
# docs/benchmarks.md (`make bench` calls it; benches/peers.py splices the section in).
# Each stage runs as a user runs it (the release binary, the demo's settings) under
#   perf record -F 250 --call-graph dwarf
# and the section lists, per stage, its wall time, flexbench's functions by inclusive share of
# the samples (what the time is spent under) and the symbols by self share (where it is spent).
#   usage: benches/profile.sh BIN OUT  (OUT: the Markdown section written)
# Without perf (or when the kernel refuses it: perf_event_paranoid), the section says so.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$1"
out="$2"
rec=recordings/default
mech=mechanisms/wind-pump.toml
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

section() {
  printf '%s\n' "## Profiles (the shipped recording, release build)" "" "$@" > "$out"
}
if ! command -v perf > /dev/null || ! perf record -q -o "$work/probe.data" -- true 2> /dev/null; then
  section "perf is not available here (install linux-perf; perf_event_paranoid at most 2): no profiles."
  exit 0
fi

"$bin" calibrate --views "$rec/views" --board 9x6 --square 0.03 --plane-view "$rec/plane-view.png" \
  --clicks "$rec/clicks.toml" --out "$work/camera.yaml" > /dev/null
declare -A cmd
cmd[track]="$bin track --video $rec/video.mp4 --calibration $work/camera.yaml --mechanism $mech --out $work/tracks.parquet"
cmd[process]="$bin process --tracks $work/tracks.parquet --flags $work/flags.csv --mechanism $mech --out $work/processed --smoother --periodic --refine-horizontal"
cmd[fem]="$bin fem --kinematics $work/processed/bodies.parquet --forces $work/processed/forces.parquet --mechanism $mech --out $work/fem"
cmd[compare]="$bin compare --processed $work/processed --mechanism $mech --out $work/compare"

{
  echo "## Profiles (the shipped recording, release build)"
  echo
  echo "Each stage as \`flexbench run\` runs it on recordings/default, under \`perf record -F 250 --call-graph dwarf\`"
  echo "(benches/profile.sh). *Under*: flexbench's functions by the share of samples in them or below them;"
  echo "*self*: the symbols the samples fall in."
  for stage in track process fem compare; do
    start=$(date +%s.%N)
    perf record -q -F 250 --call-graph dwarf,16384 -o "$work/$stage.data" -- ${cmd[$stage]} > /dev/null 2>&1
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    echo
    printf '### %s (%.1f s under perf)\n\n' "$stage" "$wall"
    echo "| under | function | self | symbol |"
    echo "|---|---|---|---|"
    perf report -i "$work/$stage.data" --children --stdio -g none --percent-limit 3 2> /dev/null \
      | grep -E '^ +[0-9.]+%' | grep 'flexbench_' | grep -v '{{closure}}' | sed -n 1,8p \
      | awk '{ s=$1; $1=$2=$3=$4=$5=""; sub(/^ +/, ""); gsub(/\|/, "/"); print " " s " | `" $0 "` " }' > "$work/under"
    # (sed, not head: head's early exit would kill grep by SIGPIPE, which pipefail makes fatal)
    perf report -i "$work/$stage.data" --no-children --stdio -g none --percent-limit 2 2> /dev/null \
      | grep -E '^ +[0-9.]+%' | sed -n 1,8p \
      | awk '{ s=$1; $1=$2=$3=$4=""; sub(/^ +/, ""); gsub(/\|/, "/"); print " " s " | `" $0 "` " }' > "$work/self"
    awk 'NR == FNR { a[FNR] = $0; n = FNR; next } { b[FNR] = $0; m = FNR }
         END { for (i = 1; i <= (n > m ? n : m); i++)
                 print "|" (i in a ? a[i] : " | ") "|" (i in b ? b[i] : " | ") "|" }' "$work/under" "$work/self"
  done
} > "$out.partial"
mv "$out.partial" "$out"
