#!/usr/bin/env bash
# The scipy peer of the signal benchmark (benches/signal_scipy.py) in a venv of its own.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${FLEXBENCH_VENV:-$HOME/.cache/flexbench/venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -c "import scipy, numpy" 2>/dev/null || "$venv/bin/pip" install --quiet numpy scipy
"$venv/bin/python" "$here/signal_scipy.py"
