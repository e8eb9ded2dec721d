#!/usr/bin/env bash
# scripts/test.sh [PYTEST ARGS...] - the test suite, with a real local Slurm cluster.
#
# pyslurm for the cluster's Slurm is built (once; scripts/pyslurm.sh) while the tests that
# need no daemon run; the integration tests (-m integration) run after it.
#
# Starts the lab cluster (scripts/slurm-lab/start-cluster.sh: 4 nodes on this host, as
# root; installs Slurm with apt-get if missing) before pytest and stops it afterwards,
# also when tests fail or the run is interrupted (trap on EXIT). Without root, or when
# the cluster cannot start, pytest still runs: the integration tests then skip with the
# reason, except under CI=true, where they fail.
#
# Sharing: a cluster that was already running and not started by a test run (someone ran
# `make cluster-up`) is used and left running. Test runs on one machine share the cluster
# they start: each holds a shared lock on $SLURM_LAB_LOCK (default
# /tmp/slurm-lab.users.lock) while pytest runs, and the run that finishes last stops it.
# SLURM_LAB_KEEP=1 leaves it running (`make cluster-down` stops it).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
LAB=scripts/slurm-lab
USERS_LOCK=${SLURM_LAB_LOCK:-/tmp/slurm-lab.users.lock}
STATE_LOCK=$USERS_LOCK.state
# marks a cluster that a test run started (cleared by make cluster-up / cluster-down)
MARKER=${SLURM_LAB_BASE:-/tmp/slurm-lab}/started-by-test
LOG=${TMPDIR:-/tmp}/slurm-lab-test-$$.log

say() { echo "[test.sh] $*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
running() { command -v scontrol >/dev/null && timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'; }

start_cluster() {
  exec 8>"$STATE_LOCK" 9>"$USERS_LOCK"
  flock -x 8  # one start or stop at a time
  if running && [ -e "$MARKER" ]; then
    say "using the Slurm cluster another test run started"
  elif running; then
    say "using the Slurm cluster that is already running (it stays up afterwards)"
  else
    local t; t=$(now)
    # 8>&- 9>&-: the daemons must not inherit the lock files (a daemon holding them would
    # block every later run's flock until it dies)
    if bash "$LAB/start-cluster.sh" > "$LOG" 2>&1 8>&- 9>&-; then
      mkdir -p "$(dirname "$MARKER")" && touch "$MARKER"
      say "Slurm cluster up in $(since "$t") s ($(grep -o 'Slurm [0-9.]*' "$LOG" | head -1))"
    else
      say "the Slurm cluster did not start; the integration tests will skip (fail under CI)"
      tail -n 20 "$LOG"
    fi
  fi
  flock -s 9  # this run uses the cluster until it ends
  flock -u 8
}

stop_cluster() {
  flock -x 8
  if [ "${SLURM_LAB_KEEP:-0}" = 1 ]; then
    say "SLURM_LAB_KEEP=1: leaving the Slurm cluster running (make cluster-down stops it)"
  elif [ ! -e "$MARKER" ]; then
    : # not started by a test run: leave it alone
  elif flock -x -n 9; then  # no other test run holds it
    local t; t=$(now)
    bash "$LAB/stop-cluster.sh" >> "$LOG" 2>&1 8>&- 9>&-
    rm -f "$MARKER"
    say "Slurm cluster stopped in $(since "$t") s"
  else
    say "another test run still uses the Slurm cluster: leaving it up"
  fi
  flock -u 8
}

if [ "$(id -u)" = 0 ]; then
  start_cluster
  trap stop_cluster EXIT
  trap 'exit 130' INT TERM
else
  say "not root: the Slurm cluster is not started; the integration tests will skip"
fi

# pyslurm for this Slurm (scripts/pyslurm.sh: a cached wheel, or a build of minutes) runs
# beside the tests that need no daemon; the integration tests, which read the cluster
# through both pyslurm and the commands, start once it is installed (or has said why not).
PYSLURM_LOG=${TMPDIR:-/tmp}/mlsub-pyslurm-$$.log
T=$(now)
PY="$PY" bash scripts/pyslurm.sh > "$PYSLURM_LOG" 2>&1 8>&- 9>&- &
pyslurm_pid=$!
report_pyslurm() {
  wait "$pyslurm_pid"
  local pyslurm_status=$?
  grep '^\[pyslurm\]' "$PYSLURM_LOG" || tail -n 20 "$PYSLURM_LOG"
  say "pyslurm step exited with $pyslurm_status after $(since "$T") s (log: $PYSLURM_LOG)"
}
own_marker=0
for a in "$@"; do case "$a" in -m|-m*) own_marker=1 ;; esac; done
if [ "$own_marker" = 1 ]; then  # the caller picks the tests by marker: one run, after pyslurm
  report_pyslurm
  "$PY" -m pytest -q "$@" 8>&- 9>&-
  status=$?
else
  "$PY" -m pytest -q -m "not integration" "$@" 8>&- 9>&-
  first=$?
  report_pyslurm
  "$PY" -m pytest -q -m integration "$@" 8>&- 9>&-
  second=$?
  # 5 = nothing collected in one phase (a path with only unit tests): not a failure alone
  if [ "$first" = 5 ] && [ "$second" = 5 ]; then
    status=5
  else
    [ "$first" = 5 ] && first=0
    [ "$second" = 5 ] && second=0
    status=$(( first != 0 ? first : second ))
  fi
fi
say "pytest finished in $(since "$T") s with exit status $status"
exit "$status"
