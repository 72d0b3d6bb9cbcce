#!/usr/bin/env bash
# The scipy peer of the fem benchmark (benches/fem_scipy.py): export the cycle's matrices and
# flexbench's frequencies (release build), then time scipy on them in a venv of its own.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${FLEXBENCH_VENV:-$HOME/.cache/flexbench/venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -c "import scipy, numpy" 2>/dev/null || "$venv/bin/pip" install --quiet numpy scipy
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cargo run --locked --release -q -p flexbench-benches --example fem_export -- "$work"
"$venv/bin/python" "$here/fem_scipy.py" "$work"
