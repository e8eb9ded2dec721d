#!/usr/bin/env bash
# scripts/examples-deps.sh - the examples' optional dependency (the `examples` extra:
# torch==2.13.0, the CPU build) in the project's venv, for examples/ddp_train.py.
#
# A machine that keeps wheels on disk for pip (find-links) gets it from there; anywhere
# else it comes from PyTorch's CPU index (about 200 MB), never PyPI's default CUDA build
# of several GB. Nothing is done when torch 2.13.0 is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
WANT=2.13.0
have=$("$PY" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null || true)
if [ "${have%%+*}" = "$WANT" ]; then
  echo "[examples-deps] torch $have already installed"
  exit 0
fi
# torch alone from this machine's wheels (--no-index), then its dependencies from the index
# (torch itself is then satisfied and stays the CPU build)
if "$PY" -m pip install -q --no-index --no-deps "torch==$WANT" 2>/dev/null \
    && "$PY" -m pip install -q "torch==$WANT"; then
  echo "[examples-deps] torch $WANT installed from the wheels on this machine"
else
  "$PY" -m pip install -q "torch==$WANT" --index-url https://download.pytorch.org/whl/cpu
  echo "[examples-deps] torch $WANT (CPU build) installed from download.pytorch.org"
fi
