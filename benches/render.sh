# Sourced by the benchmarks: `render SECONDS FOLDER` makes FOLDER/rec, the default bench filmed
# by the default recording's camera for SECONDS, without calibration views (once: kept). Needs
# $bin, a flexbench executable.
render() {
  if [ ! -f "$2/rec/video.mp4" ]; then
    mkdir -p "$2"
    sed "s/^duration = .*/duration = $1/; s/^views = .*/views = 0/" recordings/default/camera.toml > "$2/camera.toml"
    echo "rendering $1 s of the bench (once; kept in $2)"
    "$bin" render --mechanism mechanisms/wind-pump.toml --camera "$2/camera.toml" --out "$2/rec" > /dev/null
  fi
}
