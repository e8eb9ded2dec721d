#!/bin/bash
# EpilogSlurmctld for mlsub: after every job end, re-plan mlsub's queue of held jobs
# (`mlsub replan`), so that a job waiting for the resources that just came free starts
# within seconds, on the nodes its decision names. docs/admin-plugins.md, "The queue".
#
# slurmctld runs this as SlurmUser on the controller host and waits for it, so it returns
# at once: the re-plan runs in the background, detached, one at a time. Triggers that
# arrive while a re-plan runs are coalesced: each marks the queue dirty and waits (bounded)
# for its turn; a re-plan that finds the mark already cleared by a later re-plan is skipped.
#
# Configuration: a file of NAME=value lines owned by the user this runs as (root) and
# writable by no one else (else it is ignored; read, never sourced), default
# /etc/mlsched/epilog.env, another one named by MLSUB_EPILOG_ENV. Without it, or without
# MLSUB in it, this epilog does nothing (exit 0). Names:
#   MLSUB=/usr/local/bin/mlsub   the mlsub to run (required)
#   MLSUB_DB_URL=...             the decision store (default: db_url of the site file
#   MLSUB_CLUSTER_NAME=...       /etc/mlsched/config.toml, the same as every user's)
#   MLSUB_SLOT_SECONDS=...
#   STATE_DIR=/run/mlsched       where the lock and the dirty mark live (mode 0700)
#   LOG=/var/log/mlsched-epilog.log
#   TIMEOUT=300                  seconds a re-plan (and a wait for the lock) may take
#   METRICS_OUT=/var/lib/prometheus/node-exporter/mlsub.prom
#                                after each re-plan, `mlsub metrics --out` this file (for
#                                node_exporter's textfile collector; docs/admin-guide.md,
#                                "Metrics"); unset: no metrics
#
# The re-plan acts as the user this runs as (SlurmUser): as root it starts every user's
# queued jobs whose held job Slurm says is theirs (a job whose layout changed is submitted
# again as its owner through setpriv); with SlurmUser=slurm, run mlsub through a sudo
# rule (docs/admin-plugins.md) or each user's own re-plans start their jobs. It never blocks slurmctld and never fails a job: every
# problem goes to LOG, and the exit status is 0.
set -u
conf=${MLSUB_EPILOG_ENV:-/etc/mlsched/epilog.env}
[ -r "$conf" ] || exit 0
# it names a program this runs as SlurmUser (root): only a file of this user's that no one
# else may write counts (else say why in syslog and do nothing)
if [ ! -O "$conf" ] || [ -L "$conf" ] || [ -n "$(find "$conf" -maxdepth 0 -perm /022 2>/dev/null)" ]; then
  logger -t mlsub-epilog "ignoring $conf: it must be owned by $(id -un) and writable by no one else" 2>/dev/null
  exit 0
fi

MLSUB="" MLSUB_DB_URL="" MLSUB_CLUSTER_NAME="" MLSUB_SLOT_SECONDS="" METRICS_OUT=""
STATE_DIR=/run/mlsched LOG=/var/log/mlsched-epilog.log TIMEOUT=300
while IFS= read -r line || [ -n "$line" ]; do
  case $line in ''|'#'*) continue ;; esac
  key=${line%%=*} value=${line#*=}
  case $key in
    MLSUB|MLSUB_DB_URL|MLSUB_CLUSTER_NAME|MLSUB_SLOT_SECONDS|STATE_DIR|LOG|TIMEOUT|METRICS_OUT)
      printf -v "$key" '%s' "$value" ;;
  esac
done < "$conf"
[ -n "$MLSUB" ] && [ -x "$MLSUB" ] || exit 0

mkdir -p -m 0700 "$STATE_DIR" 2>/dev/null || exit 0
# the lock and the mark live in a directory of ours that no one else can write into
# (so no link planted there is followed as root)
if [ -L "$STATE_DIR" ] || [ ! -O "$STATE_DIR" ]; then
  logger -t mlsub-epilog "ignoring STATE_DIR $STATE_DIR: not a directory owned by $(id -un)" 2>/dev/null
  exit 0
fi
chmod 0700 "$STATE_DIR" 2>/dev/null || exit 0
: > "$STATE_DIR/replan.dirty"

run_replans() {
  # wait for our turn; whoever holds the lock re-plans while the mark is set
  exec 9> "$STATE_DIR/replan.lock"
  flock -w "$TIMEOUT" 9 || { echo "$(date -u +%FT%TZ) epilog: lock wait timed out"; return 0; }
  while [ -e "$STATE_DIR/replan.dirty" ]; do
    rm -f "$STATE_DIR/replan.dirty"
    run_mlsub replan --json > "$STATE_DIR/last-replan.json" 2>&1
    status=$?
    echo "$(date -u +%FT%TZ) epilog (first trigger: job ${SLURM_JOB_ID:-?} ended): mlsub replan exit $status"
    [ "$status" = 0 ] || cat "$STATE_DIR/last-replan.json"
    if [ -n "$METRICS_OUT" ]; then
      run_mlsub metrics --out "$METRICS_OUT" > "$STATE_DIR/last-metrics.txt" 2>&1 \
        || { echo "$(date -u +%FT%TZ) epilog: mlsub metrics failed"; cat "$STATE_DIR/last-metrics.txt"; }
    fi
  done
}

run_mlsub() {
  env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="${HOME:-/root}" \
    ${SLURM_CONF:+SLURM_CONF="$SLURM_CONF"} \
    ${MLSUB_DB_URL:+MLSUB_DB_URL="$MLSUB_DB_URL"} \
    ${MLSUB_CLUSTER_NAME:+MLSUB_CLUSTER_NAME="$MLSUB_CLUSTER_NAME"} \
    ${MLSUB_SLOT_SECONDS:+MLSUB_SLOT_SECONDS="$MLSUB_SLOT_SECONDS"} \
    timeout "$TIMEOUT" "$MLSUB" "$@"
}

cd / || exit 0
export -f run_replans run_mlsub 2>/dev/null
export STATE_DIR TIMEOUT MLSUB MLSUB_DB_URL MLSUB_CLUSTER_NAME MLSUB_SLOT_SECONDS METRICS_OUT
setsid -f bash -c run_replans </dev/null >> "$LOG" 2>&1
exit 0
