#!/usr/bin/env bash
# The scipy peer of the fem benchmark (benches/fem_scipy.py): export the cycle's matrices and
# flexbench's frequencies (release build), then time scipy on them in a venv of its own.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/venv.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cargo run --locked --release -q -p flexbench-benches --example fem_export -- "$work"
"$python" "$here/fem_scipy.py" "$work"
