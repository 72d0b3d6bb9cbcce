#!/usr/bin/env bash
# The scipy peer of the signal benchmark (benches/signal_scipy.py) in a venv of its own.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/venv.sh"
"$python" "$here/signal_scipy.py"
