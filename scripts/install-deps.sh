#!/usr/bin/env bash
# Install what flexbench needs on a Debian machine, and nothing when it is all there.
# Idempotent: only the missing packages are installed; run as root or with sudo available.
#   libopencv-dev, clang, libclang-dev: the `opencv` crate (vision stage) binds Debian's OpenCV
#   through libclang; pkg-config finds it. The numerical crates need none of them.
#   chromium: the report's test loads the HTML report in headless Chromium (every figure must
#   render) and takes a screenshot; `flexbench run` itself never needs it.
#   ffmpeg: its ffprobe reads each frame's presentation time from the container (OpenCV 4.6 gives
#   none for MP4); without it a video is timed from its frame rate, with a warning.
#   python3-venv: `make test`'s Python side (scripts/python-tests.sh: scipy and openpyxl read the
#   MATLAB and Excel files back).
#   With the argument `bench` (make bench), also: time (GNU time: the peak memory of a command).
set -euo pipefail

packages=(pkg-config libopencv-dev clang libclang-dev chromium ffmpeg python3-venv)
if [ "${1:-}" = bench ]; then
  packages+=(time)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo="sudo"
    else
      echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
      exit 1
    fi
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: system packages present (${packages[*]})"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "install-deps: cargo is not on PATH; install the Rust toolchain (rustup, Rust >= 1.85) and run again" >&2
  exit 1
fi

# make test checks formatting and lints: rustfmt and clippy must be there (rustup installs them
# with the default profile; `rustup component add rustfmt clippy` otherwise).
for tool in fmt clippy; do
  if ! cargo "$tool" --version >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
      echo "install-deps: adding the Rust component for cargo $tool"
      rustup component add "$([ "$tool" = fmt ] && echo rustfmt || echo clippy)"
    else
      echo "install-deps: cargo $tool is missing; install the rustfmt and clippy components of the Rust toolchain" >&2
      exit 1
    fi
  fi
done
