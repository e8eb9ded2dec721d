#!/usr/bin/env bash
# scripts/pyslurm.sh - build (or reuse) pyslurm for this machine's Slurm and install it into
# the project's venv (make pyslurm; make test and make demo call it).
#
# pyslurm must be built against the Slurm it talks to. PyPI has it for Slurm 25.11 only;
# for the releases Debian installs (22.05 on Debian 12, 24.11 on Debian 13) it is built
# from pyslurm's own release sources, vendored beside the project in
# ../shared/vendor/pyslurm/ (MLSUB_PYSLURM_VENDOR overrides; docs/admin-guide.md).
#
#   Slurm 22.05 -> pyslurm 22.5.3  (Cython >= 0.29.30, < 3; setuptools 59.2.0)
#   Slurm 24.11 -> pyslurm 24.11.0 (Cython 3.0.11+: Debian 13 has Python 3.13; packaging)
#   Slurm 25.11 -> pyslurm 25.11.* from PyPI (the [pyslurm] extra)
#
# The wheel is built once per (pyslurm, Slurm, Python) into
# ${MLSUB_WHEEL_CACHE:-~/.cache/mlsub/wheels} and reused by every later run (the compile
# takes minutes). The build runs in a venv of its own (old setuptools and Cython never
# enter the project's venv). libslurm-dev is installed with apt-get when missing (root).
#
# Exit status: 0 installed (or already there); 2 this machine cannot have it (no Slurm,
# no sources, an unsupported release, not root to install libslurm-dev): the reason is
# printed, and the tests then skip pyslurm (fail under CI=true).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
VENDOR=${MLSUB_PYSLURM_VENDOR:-../shared/vendor/pyslurm}
CACHE=${MLSUB_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mlsub/wheels}

say() { echo "[pyslurm] $*"; }
cannot() { say "not installed: $*"; exit 2; }

# the Slurm release: sinfo's (which 24.11 prints only with a configuration), else the
# installed package's
slurm=$(sinfo --version 2>/dev/null | awk '{print $2}' || true)            # e.g. 22.05.8
if [ -z "$slurm" ] && command -v dpkg-query >/dev/null; then
  slurm=$(dpkg-query -W -f '${Version}' slurm-client 2>/dev/null | sed 's/-.*//' || true)
fi
[ -n "$slurm" ] || cannot "no Slurm here (neither sinfo --version nor the slurm-client package)"
release=$(echo "$slurm" | cut -d. -f1,2)             # e.g. 22.05
pytag=$("$PY" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')

case "$release" in
  22.05) version=22.5.3; build_deps=("Cython>=0.29.30,<3.0" "setuptools==59.2.0" wheel) ;;
  24.11) version=24.11.0; build_deps=("Cython>=3.0.11,<3.2" "setuptools>=59.2.0,<80" wheel packaging) ;;
  25.11)
    "$PY" -m pip install -q "pyslurm==25.11.*" || cannot "pip install pyslurm==25.11.* failed"
    say "installed pyslurm from PyPI for Slurm $slurm"; exit 0 ;;
  *) cannot "no pyslurm release is known for Slurm $slurm (22.05, 24.11 and 25.11 are)" ;;
esac

have=$("$PY" -c 'import pyslurm; print(pyslurm.__version__)' 2>/dev/null || true)
if [ "$have" = "$version" ]; then
  say "pyslurm $version for Slurm $slurm is installed"
  exit 0
fi

key="pyslurm-$version-slurm-$slurm-$pytag"
wheel=$(ls "$CACHE/$key"/pyslurm-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$wheel" ]; then
  source_archive="$VENDOR/pyslurm-$version.tar.gz"
  [ -f "$source_archive" ] || cannot "the source $source_archive is not there (a clone without ../shared)"
  if [ ! -f /usr/include/slurm/slurm.h ]; then
    [ "$(id -u)" = 0 ] || cannot "libslurm-dev is missing and this is not root to install it"
    say "installing libslurm-dev"
    apt() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@"; }
    apt install -y -qq libslurm-dev >/dev/null 2>&1 \
      || { apt update -qq && apt install -y -qq libslurm-dev >/dev/null; } \
      || cannot "apt-get install libslurm-dev failed"
  fi
  libdir=$(dirname "$(ls /usr/lib/*/libslurm.so /usr/lib64/libslurm.so /usr/lib/libslurm.so 2>/dev/null | head -n 1)")
  [ -e "$libdir/libslurm.so" ] || cannot "libslurm.so not found (is libslurm-dev installed?)"
  base=$("$PY" -c 'import sys; print(sys._base_executable)')
  builder="$CACHE/build-venv-$pytag"
  mkdir -p "$CACHE"
  if [ ! -x "$builder/bin/python" ]; then
    "$base" -m venv "$builder"
  fi
  "$builder/bin/python" -m pip install -q "${build_deps[@]}"
  work=$(mktemp -d "$CACHE/.build-XXXXXX")
  trap 'rm -rf "$work"' EXIT
  say "building pyslurm $version against Slurm $slurm ($libdir); this takes minutes, once"
  started=$(date +%s)
  SLURM_LIB_DIR="$libdir" SLURM_INCLUDE_DIR=/usr/include \
    "$builder/bin/python" -m pip wheel -q --no-build-isolation --no-deps -w "$work" "$source_archive" \
    > "$work/build.log" 2>&1 || { tail -n 30 "$work/build.log"; cannot "the build failed"; }
  mkdir -p "$CACHE/$key"
  built=$(ls "$work"/pyslurm-*.whl | head -n 1)
  mv "$built" "$CACHE/$key/"   # same file system: the cache never holds half a wheel
  wheel="$CACHE/$key/$(basename "$built")"
  say "built in $(( $(date +%s) - started )) s: $wheel"
fi
"$PY" -m pip install -q --no-deps --force-reinstall "$wheel"
if "$PY" -c 'import pyslurm; print("[pyslurm] installed pyslurm", pyslurm.__version__)'; then
  exit 0
elif ! sinfo --version >/dev/null 2>&1; then
  # pyslurm, like sinfo, reads Slurm's configuration when it is imported
  say "installed pyslurm $version; it imports once Slurm is configured here (slurm.conf)"
else
  say "installed pyslurm $version, but it does not import (see above)"
  exit 1
fi
