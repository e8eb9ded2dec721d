#!/usr/bin/env bash
# capture-sacct.sh [OUTDIR] - run a fixed set of jobs on the lab cluster (start-cluster.sh, with
# accounting) and save the real `sacct` output the trace readers parse, once every record is
# final and stable. Output: OUTDIR/<major.minor>/ (default OUTDIR: tests/fixtures/sacct).
# Run it on each Slurm version the project supports (Debian 12: 22.05, Debian 13: 24.11).
# It only submits and cancels its own jobs; other users' jobs may delay it but do not change
# what it saves (every sacct call names its own job ids).
#
# Jobs (names are fixed; ids and times are whatever the cluster gives):
#   plain    2 tasks, 2G, 5 min, one srun step               -> COMPLETED, steps batch + 0
#   gpu2     1 task, --gres=gpu:2, 1G, one srun step          -> COMPLETED, gres/gpu=2
#   multi    2 nodes x 1 task x 2 CPUs, gpu:1 per node        -> COMPLETED, node=2, gres/gpu=2
#   het      hetjob: 2 tasks gpu:2 3G + 1 task gpu:1 1G       -> N+0, N+1 (+ their steps)
#   perc     --mem-per-cpu=1500M, -t UNLIMITED                -> ReqMem per CPU, UNLIMITED
#   fails    exit 1                                           -> FAILED 1:0
#   killed   runs, then scancel                               -> CANCELLED with elapsed > 0
#   later    --begin=now+1hour, no -t, scancel while pending  -> CANCELLED, never started
#   arr      --array=1-2                                      -> N_1, N_2
#   overrun  -t 1, sleeps 300 s                               -> TIMEOUT (takes ~1-2 min)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUTDIR=${1:-$ROOT/tests/fixtures/sacct}
#: the field set the replay guide recommends (mlsub docs/replay-guide.md); exists on 22.05 and 24.11
FIELDS=JobID,JobIDRaw,JobName,User,Account,Partition,State,ExitCode,Submit,Eligible,Start,End,Elapsed,ElapsedRaw,Timelimit,TimelimitRaw,NNodes,NCPUS,ReqCPUS,ReqMem,ReqNodes,ReqTRES,AllocTRES,NodeList

say() { echo "[capture-sacct] $*"; }
VERSION=$(sinfo --version | awk '{print $2}')
DIR=$OUTDIR/${VERSION%.*}
scontrol ping | grep -q 'is UP' || { echo "capture-sacct.sh: slurmctld is not up" >&2; exit 1; }
sacct -n -X -j 1 >/dev/null 2>&1 || { echo "capture-sacct.sh: sacct needs accounting (slurmdbd)" >&2; exit 1; }
WORK=$(mktemp -d)
IDS=()
cleanup() { [ ${#IDS[@]} -gt 0 ] && scancel "${IDS[@]}" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
# sub VAR SBATCH-ARGS...: submit, remember the id (for the sacct calls and the clean-up) in VAR
sub() {
  local var=$1 id; shift
  id=$(sbatch --parsable -o /dev/null "$@"); id=${id%%;*}
  IDS+=("$id"); printf -v "$var" '%s' "$id"
}

say "Slurm $VERSION -> $DIR"
sub ID -J plain -n2 --mem=2G -t 5 --wrap 'srun -n2 sleep 2'
sub ID -J gpu2 -n1 --gres=gpu:2 --mem=1G -t 5 --wrap 'srun sleep 1'
sub ID -J multi -N2 --ntasks-per-node=1 --cpus-per-task=2 --gres=gpu:1 --mem=1G -t 5 \
  --wrap 'srun sleep 2'
cat > "$WORK/het.sh" <<'EOF'
#!/bin/bash
#SBATCH -J het -t 7
#SBATCH -N1 --ntasks=2 --gres=gpu:2 --mem=3G
#SBATCH hetjob
#SBATCH -N1 --ntasks=1 --gres=gpu:1 --mem=1G
srun --het-group=0 -n1 sleep 2 &
srun --het-group=1 -n1 sleep 2 &
wait
EOF
sub ID "$WORK/het.sh"
sub ID -J perc -n1 --mem-per-cpu=1500M -t UNLIMITED --wrap 'sleep 1'
sub ID -J fails -n1 --mem=512M -t 2 --wrap 'exit 1'
sub KILLED -J killed -n1 --mem=512M -t 5 --wrap 'sleep 300'
sub LATER -J later --begin=now+1hour -n1 --mem=1G --wrap true
sub ID -J arr --array=1-2 -n1 --mem=256M -t 2 --wrap 'sleep 1'
sub ID -J overrun -n1 --mem=256M -t 1 --wrap 'sleep 300'
JOBS=$(IFS=,; echo "${IDS[*]}")
say "jobs: $JOBS"

# cancel 'later' once accounting has its record; 'killed' once it has run a few seconds
for _ in $(seq 1 100); do
  [ -n "$(sacct -n -X -j "$LATER" -o JobID 2>/dev/null)" ] && break; sleep 0.2
done
scancel "$LATER"
for _ in $(seq 1 150); do
  [ "$(squeue -h -j "$KILLED" -o %T 2>/dev/null)" = RUNNING ] && break; sleep 0.2
done
sleep 3
scancel "$KILLED"

FINAL='^(COMPLETED|FAILED|CANCELLED.*|TIMEOUT|OUT_OF_MEMORY|NODE_FAIL|PREEMPTED|BOOT_FAIL|DEADLINE)$'
all_final() { sacct -n -X -a -j "$JOBS" -o State --parsable2 | grep -v -E "$FINAL" | grep -q . && return 1; return 0; }
say "waiting for every job to end (overrun hits its 1-minute limit: up to ~2 min)"
for _ in $(seq 1 300); do all_final && break; sleep 1; done
all_final || { echo "capture-sacct.sh: jobs did not end in time" >&2; exit 1; }
# the README warns of lag (NodeList of a multi-node job shows one node for ~3 s): wait for
# three identical full reads in a row
prev="" same=0
for _ in $(seq 1 120); do
  cur=$(sacct -a --parsable2 -j "$JOBS" --format="$FIELDS"; sacct -a --json -j "$JOBS" | md5sum)
  if [ "$cur" = "$prev" ]; then same=$((same + 1)); else same=0; fi
  [ $same -ge 2 ] && break
  prev=$cur; sleep 1
done
[ $same -ge 2 ] || { echo "capture-sacct.sh: sacct output never settled" >&2; exit 1; }

rm -rf "$DIR"; mkdir -p "$DIR"
save() {
  local file=$1; shift
  "$@" > "$DIR/$file"
  printf '%s\t%s\n' "$file" "$*" >> "$DIR/commands.txt"
}
save sacct-parsable2.txt sacct -a --parsable2 -j "$JOBS" --format="$FIELDS"
SLURM_TIME_FORMAT=%s sacct -a --parsable2 -j "$JOBS" --format="$FIELDS" > "$DIR/sacct-parsable2-epoch.txt"
printf '%s\t%s\n' sacct-parsable2-epoch.txt "SLURM_TIME_FORMAT=%s sacct -a --parsable2 -j $JOBS --format=$FIELDS" >> "$DIR/commands.txt"
save sacct-parsable.txt sacct -a --parsable -j "$JOBS" --format="$FIELDS"
save sacct-parsable2-default.txt sacct -a --parsable2 -j "$JOBS"
save sacct-parsable2-all.txt sacct -a --parsable2 -j "$JOBS" --format=ALL
save sacct.json sacct -a --json -j "$JOBS"
printf '# Slurm %s, captured %s (TZ=%s) by scripts/slurm-lab/capture-sacct.sh\n' \
  "$VERSION" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(date +%Z)" > "$DIR/VERSION"
IDS=()
say "done: $(ls "$DIR" | wc -l) files in $DIR"
