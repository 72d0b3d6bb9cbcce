#!/usr/bin/env bash
# The Python side of `make test`, in a fresh venv each time (as a user installs):
# - the flexbench Python package, installed by the README's one command (`pip install .`, maturin
#   building the native module with the command line's profile and build directory), checked
#   against the command line on the same inputs, bit for bit, and on the bad-input corpus;
# - the files users open (results.mat by scipy.io.loadmat, results.xlsx by openpyxl);
# - docs/forces_figure.py, the example that draws the forces figure from a tracks file.
# The venv: pinned numpy, scipy, openpyxl, polars, matplotlib, dask.distributed (run_batch on a
# local cluster), pyarrow (the golden files' check), pytest and pytest-xdist (the
# tests on two workers, as the machine's two cores; pip's cache makes it quick after the first
# time), removed at the end; FLEXBENCH_PYVENV names a venv to keep and
# reuse instead. The debug binary of `cargo build` (FLEXBENCH_BIN to use another).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
requirements=(numpy==2.4.6 scipy==1.17.1 openpyxl==3.1.5 pytest==9.2.0 pytest-xdist==3.8.0 polars==2.1.0 matplotlib==3.11.2 dask==2026.8.0 distributed==2026.8.0 pyarrow==26.0.1)
if [ -n "${FLEXBENCH_PYVENV:-}" ]; then
  venv="$FLEXBENCH_PYVENV"
else
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  venv="$scratch/venv"
fi
if ! "$venv/bin/python" -c "import numpy, scipy, openpyxl, pytest, xdist, polars, matplotlib, dask.distributed, pyarrow" 2> /dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${requirements[@]}"
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/flexbench/target}"
export FLEXBENCH_BIN="${FLEXBENCH_BIN:-$CARGO_TARGET_DIR/debug/flexbench}"
cargo build --locked -q -p flexbench
# The one install command of the README, as a user runs it.
"$venv/bin/pip" install --quiet --disable-pip-version-check .
# From another folder, so that `import flexbench` is the installed package, not python/flexbench.
(cd "${TMPDIR:-/tmp}" && "$venv/bin/python" -m pytest -q -p no:cacheprovider -n 2 --durations=8 ${FLEXBENCH_PYTEST_ARGS:-} "$root/python/tests")
