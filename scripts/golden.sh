#!/usr/bin/env bash
# `make golden` (every golden file remade in place by scripts/golden.py) and `make golden-check`
# (remade in a scratch copy and compared with the committed ones), in a venv with the versions
# the committed files were made with: numpy, scipy and pyarrow pinned as in
# scripts/python-tests.sh. FLEXBENCH_PYVENV names a venv to use instead.
set -euo pipefail
cd "$(dirname "$0")/.."
requirements=(numpy==2.4.6 scipy==1.17.1 pyarrow==26.0.1)
venv="${FLEXBENCH_PYVENV:-$HOME/.cache/flexbench/golden-venv}"
if ! "$venv/bin/python" -c "import numpy, scipy, pyarrow" 2> /dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${requirements[@]}"
fi
"$venv/bin/python" scripts/golden.py "$@"
