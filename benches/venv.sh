# Sourced by the scipy peers of the benchmarks: $python, the interpreter of a venv of their own
# ($FLEXBENCH_VENV, default ~/.cache/flexbench/venv) with numpy and scipy, made if need be.
venv="${FLEXBENCH_VENV:-$HOME/.cache/flexbench/venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -c "import scipy, numpy" 2>/dev/null || "$venv/bin/pip" install --quiet numpy scipy
python="$venv/bin/python"
