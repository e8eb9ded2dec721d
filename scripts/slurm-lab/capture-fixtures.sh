#!/usr/bin/env bash
# capture-fixtures.sh [OUTDIR] - save the real output of the Slurm commands mlsub parses,
# in three fixed scenarios, from the running lab cluster (start-cluster.sh, 4 idle nodes,
# no jobs). Output goes to OUTDIR/<major.minor>/<scenario>/ (default OUTDIR:
# tests/fixtures/slurm). Run it on each Slurm version the project supports (Debian 12:
# 22.05, Debian 13: 24.11); the parsers' tests read these files.
#
# Scenarios (every job, node and state is fixed so the tests can assert exact values):
#   idle    4 idle nodes, no job
#   busy    sleeper  node1, 2 tasks, 2 GPUs, 4G, 10 min
#           multi    node[2-3], 1 task x 3 CPUs per node, 1 GPU and 2G per node, 5 min
#           het      hetjob: node3 2 tasks 2 GPUs 3G + node4 1 task 1 GPU 1G, 7 min
#           nolimit  node2, 1 task, --mem-per-cpu=1500M, no time limit
#           later    pending (--begin=now+1hour)
#   states  node1 draining (drained while a job runs), node2 drained, node3 down,
#           node4 not responding (its slurmd stopped; takes ~35 s to show)
# The cluster is put back to 4 idle nodes at the end (and on error).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUTDIR=${1:-$ROOT/tests/fixtures/slurm}
BASE=${SLURM_LAB_BASE:-/tmp/slurm-lab}
FMT_SINFO='%N|%T|%c|%m|%G'
FMT_SQUEUE='%i|%T|%N|%D|%C|%m|%b|%L|%j'

say() { echo "[capture] $*"; }
# poll CMD until it succeeds, up to SECS seconds
wait_for() {
  local secs=$1 what=$2; shift 2
  local i
  for ((i = 0; i < secs * 5; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "[capture] timed out waiting for: $what" >&2; return 1
}
running_count() { squeue -h -t RUNNING -o %i | wc -l; }
all_idle() { [ "$(sinfo -h -N -o '%N %T' | sort -u | grep -c ' idle$')" = 4 ]; }  # once per node
restore() {
  scancel --user=root 2>/dev/null || true
  [ -s "$BASE/run/slurmd-node4.pid" ] && [ -d "/proc/$(cat "$BASE/run/slurmd-node4.pid")" ] \
    || /usr/sbin/slurmd -N node4
  scontrol update nodename='node[1-4]' state=resume 2>/dev/null || true
  wait_for 60 "4 idle nodes" all_idle
}

VERSION=$(sinfo --version | awk '{print $2}')
DIR=$OUTDIR/${VERSION%.*}
all_idle || { echo "capture-fixtures.sh: needs the lab cluster with 4 idle nodes" >&2; exit 1; }
[ -z "$(squeue -h -o %i)" ] || { echo "capture-fixtures.sh: cancel running jobs first" >&2; exit 1; }
rm -rf "$DIR"
mkdir -p "$DIR"
trap restore EXIT

# save SCENARIO FILE COMMAND... : stdout verbatim, the command line in commands.txt
save() {
  local scenario=$1 file=$2; shift 2
  mkdir -p "$DIR/$scenario"
  "$@" > "$DIR/$scenario/$file"
  printf '%s/%s\t%s\n' "$scenario" "$file" "$*" >> "$DIR/commands.txt"
}
snapshot() {
  save "$1" sinfo-nodes.txt sinfo -h -N -o "$FMT_SINFO"
  save "$1" sinfo.json sinfo --json
  save "$1" sinfo-N.json sinfo -N --json
  save "$1" scontrol-nodes.txt scontrol -o show nodes
  save "$1" squeue.json squeue --json
  save "$1" squeue.txt squeue -h -o "$FMT_SQUEUE"
}

say "Slurm $VERSION -> $DIR"
save idle sinfo-version.txt sinfo --version
save idle scontrol-version.txt scontrol --version
save idle ping.txt scontrol ping
BOGUS=$(mktemp)
printf 'ClusterName=bogus\nSlurmctldHost=localhost\nSlurmctldPort=6999\nAuthType=auth/munge\nNodeName=node1 CPUs=1\nPartitionName=debug Nodes=ALL Default=YES\n' > "$BOGUS"
SLURM_CONF=$BOGUS scontrol ping > "$DIR/idle/ping-down.txt" || true
printf 'idle/ping-down.txt\tSLURM_CONF=<slurm.conf with SlurmctldPort=6999> scontrol ping\n' >> "$DIR/commands.txt"
rm -f "$BOGUS"
snapshot idle

say "busy"
save busy sbatch-parsable.txt sbatch --parsable -J sleeper -w node1 -n2 --mem=4G --gres=gpu:2 \
  -t 10 -o /dev/null --wrap 'sleep 600'
sbatch --parsable -J multi -N2 -w 'node[2-3]' --ntasks-per-node=1 --cpus-per-task=3 --mem=2G \
  --gres=gpu:1 -t 5 -o /dev/null --wrap 'sleep 600' > /dev/null
HET=$(mktemp)
cat > "$HET" <<'EOF'
#!/bin/bash
#SBATCH -J het -t 7 -o /dev/null
#SBATCH -w node3 -N1 --ntasks=2 --gres=gpu:2 --mem=3G
#SBATCH hetjob
#SBATCH -w node4 -N1 --ntasks=1 --gres=gpu:1 --mem=1G
sleep 600
EOF
sbatch --parsable "$HET" > /dev/null
rm -f "$HET"
sbatch --parsable -J nolimit -w node2 -n1 --mem-per-cpu=1500M -o /dev/null --wrap 'sleep 600' > /dev/null
sbatch --parsable -J later --begin=now+1hour -n1 --mem=1G -t 3 -o /dev/null --wrap true > /dev/null
wait_for 30 "5 running job records" bash -c '[ "$(squeue -h -t RUNNING -o %i | wc -l)" = 5 ]'
snapshot busy
sbatch --parsable -w node9 --wrap true > /dev/null 2> "$DIR/busy/sbatch-invalid-node.stderr" || true
printf 'busy/sbatch-invalid-node.stderr\tsbatch --parsable -w node9 --wrap true (stderr)\n' >> "$DIR/commands.txt"
scancel --user=root
wait_for 30 "no running job" bash -c '[ -z "$(squeue -h -t RUNNING,COMPLETING -o %i)" ]'
wait_for 30 "4 idle nodes" all_idle

say "states (node4 takes ~35 s to be marked not responding)"
sbatch --parsable -J keep -w node1 -n1 --mem=1G -t 5 -o /dev/null --wrap 'sleep 600' > /dev/null
wait_for 30 "job on node1" bash -c '[ "$(squeue -h -t RUNNING -o %i | wc -l)" = 1 ]'
kill "$(cat "$BASE/run/slurmd-node4.pid")"
wait_for 120 "node4 not responding" bash -c "sinfo -h -N -n node4 -o '%T' | grep -q '\*\$'"
# set last: with ReturnToService=2, 22.05 puts a DOWN node whose slurmd registers back to idle
scontrol update nodename=node1 state=drain reason="fixture: draining"
scontrol update nodename=node2 state=drain reason="fixture: drained"
scontrol update nodename=node3 state=down reason="fixture: down"
snapshot states
printf '# Slurm %s, captured %s by scripts/slurm-lab/capture-fixtures.sh\n' \
  "$VERSION" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$DIR/VERSION"
say "done: $(find "$DIR" -type f | wc -l) files"
