#!/usr/bin/env bash
# The Python side of `make test`: the files users open (results.mat by scipy.io.loadmat,
# results.xlsx by openpyxl) checked in the tools they open them with. A venv of its own
# (~/.cache/flexbench/pyvenv, or $FLEXBENCH_PYVENV) with pinned numpy, scipy, openpyxl and
# pytest, made once; the debug binary of `cargo build` (FLEXBENCH_BIN to use another).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${FLEXBENCH_PYVENV:-$HOME/.cache/flexbench/pyvenv}"
requirements=(numpy==2.4.6 scipy==1.17.1 openpyxl==3.1.5 pytest==9.2.0)
if ! "$venv/bin/python" -c "import numpy, scipy, openpyxl, pytest" 2> /dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${requirements[@]}"
fi
export FLEXBENCH_BIN="${FLEXBENCH_BIN:-${CARGO_TARGET_DIR:-$HOME/.cache/flexbench/target}/debug/flexbench}"
cargo build --locked -q -p flexbench
"$venv/bin/python" -m pytest -q python/tests
