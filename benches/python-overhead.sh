#!/usr/bin/env bash
# The Python package's cost over the command line (part of `make bench`, run by peers.sh; also
# alone): `process` on the same tracks files, called from a Python session and run as the
# command, both release builds. Installs polars into the benchmarks' venv and the package with
# the release profile (`pip install .`, maturin given --profile release), then
# benches/python_overhead.py times both and writes the page's section.
#   usage: benches/python-overhead.sh FLEXBENCH SECTION TRACKS...
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/flexbench/target}"
source benches/venv.sh
"$python" -c "import polars" 2>/dev/null || "$venv/bin/pip" install --quiet polars==2.1.0
MATURIN_PEP517_ARGS="--profile release" "$venv/bin/pip" install --quiet --disable-pip-version-check .
"$python" benches/python_overhead.py "$@"
