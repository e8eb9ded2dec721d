#!/usr/bin/env bash
# scripts/demo.sh - the main job end to end on a local real Slurm cluster (`make demo`).
#
# 1. starts the lab cluster (scripts/slurm-lab/start-cluster.sh: 4 nodes on this host, as
#    root; installs Slurm with apt-get if missing; left running: `make cluster-down`);
#    builds (once) or reuses pyslurm for this Slurm (scripts/pyslurm.sh), the node state
#    source mlsub prefers when it matches the cluster's Slurm;
# 2. fills the cluster with four jobs of mlsub's (one per node; the first ends after
#    FIRST_S seconds), so that the training job must wait in mlsub's queue;
# 3. `mlsub examples/ps_train.py`: reads the live node state, finds no room now, stores
#    the decision (queued) in the default SQLite store and submits the job held; when the
#    first filler ends, slurmctld's epilog (plugins/epilog_slurmctld.sh) runs `mlsub
#    replan`, which starts it on the nodes its decision names; --wait follows it to its end;
# 4. shows the decision (queued, starting, submitted, ...), the script, the Slurm job id,
#    where each task ran (sacct), and the trained model's accuracy (the job's output), and
#    writes the decision history as one HTML page (mlsub report).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MLSUB=${MLSUB:-$ROOT/.venv/bin/mlsub}
PY=${PY:-$ROOT/.venv/bin/python}
OUT=${DEMO_DIR:-/tmp/mlsub-demo}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

[ "$(id -u)" = 0 ] || { echo "demo.sh: the local Slurm cluster needs root" >&2; exit 1; }
say "starting the local Slurm cluster (4 nodes)"
bash scripts/slurm-lab/start-cluster.sh | tail -n 3
say "pyslurm for this Slurm (built once from ../shared/vendor/pyslurm, then reused)"
PY="$PY" bash scripts/pyslurm.sh || echo "(mlsub reads the node state with the Slurm commands instead)"

say "the decision store (the default SQLite file; brought to this mlsub's schema)"
"$MLSUB" db upgrade

mkdir -p "$OUT"
cd "$OUT"
LAB_BASE=${SLURM_LAB_BASE:-/tmp/slurm-lab}
EPILOG_ENV=$LAB_BASE/mlsub-epilog.env
DB_URL=$("$MLSUB" db current --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["url"])')
# the lab's EpilogSlurmctld re-plans this store while the demo runs (docs/admin-plugins.md)
printf 'MLSUB=%s\nMLSUB_DB_URL=%s\nSTATE_DIR=%s\nLOG=%s\n' "$MLSUB" "$DB_URL" \
  "$LAB_BASE/run/mlsched" "$OUT/epilog.log" > "$EPILOG_ENV"
FILLERS=()
rm -f "$OUT/epilog.log"
trap 'rm -f "$EPILOG_ENV"; [ ${#FILLERS[@]} = 0 ] || scancel "${FILLERS[@]}" 2>/dev/null || true' EXIT

for _ in $(seq 60); do  # start from an idle lab cluster (earlier runs' jobs end first)
  [ -z "$(squeue -h -t running,pending 2>/dev/null)" ] && break
  sleep 2
done
say "filling the cluster: one job of mlsub's per node (the first ends after ${FIRST_S:=15} s)"
cat > filler.sh <<'FILLER'
#!/bin/bash
# mlsub: --workers 3 --ps 1 --gpus-per-worker 0 --cpus-per-worker 2 --cpus-per-ps 2
# mlsub: --mem-per-worker 1G --mem-per-ps 1G --step-time 0.05 --model-size 1 --epochs 1
# mlsub: --batches-per-epoch 100000 --name filler
sleep "$1"
FILLER
for k in 1 2 3 4; do
  [ "$k" = 1 ] && SECONDS_=$FIRST_S || SECONDS_=$((FIRST_S + 45))
  "$MLSUB" filler.sh --json -- "$SECONDS_" > filler.json
  "$PY" -c "import json; d=json.load(open('filler.json')); print('  decision', d['decision_id'], '- Slurm job', d['slurm_job_id'], 'on', d['placement'][0]['node'], '-', d['state'])"
  FILLERS+=("$("$PY" -c "import json; print(json.load(open('filler.json'))['slurm_job_id'])")")
done
squeue

say "mlsub examples/ps_train.py  (workers, PSs and resources from its '# mlsub:' lines)"
echo "the cluster is full: it waits held in mlsub's queue; the first filler's end starts it"
"$MLSUB" "$ROOT/examples/ps_train.py" --interpreter "$PY" --show-script --wait --json > submit.json \
  || { cat submit.json 2>/dev/null; exit 1; }
read -r DECISION JOB < <("$PY" -c 'import json,sys; d=json.load(open("submit.json")); print(d["decision_id"], d["slurm_job_id"])')
echo "the epilog's re-plans:"; cat "$OUT/epilog.log" 2>/dev/null || true
"$PY" - <<'EOF'
import json
d = json.load(open("submit.json"))
print(f"decision {d['decision_id']}: {d['mode']}, policy {d['policy']}, seed {d['seed']}, "
      f"Slurm job {d['slurm_job_id']}, final state {d['state']}")
for t in d["tasks"]:
    print(f"  {t['role']:6} rank {t['rank']}  node {t['node']:6} {t['endpoint']}")
print("\n--- sbatch script ---")
print(d["script"])
EOF

say "the stored decision (mlsub show $DECISION)"
"$MLSUB" show "$DECISION"

say "where Slurm ran each step (sacct)"
for _ in $(seq 20); do  # accounting lags a few seconds behind the job's end
  ROWS=$(sacct -j "$JOB" --parsable2 --noheader --format=JobID,JobName,NodeList,State,ExitCode 2>/dev/null || true)
  grep -q '\.[0-9]|' <<<"$ROWS" && break
  sleep 1
done
printf 'JobID|JobName|NodeList|State|ExitCode\n%s\n' "$ROWS" \
  | awk -F'|' '{printf "%-12s %-10s %-10s %-10s %s\n", $1, $2, $3, $4, $5}'

say "the job's output"
cat "$OUT/mlsub-$DECISION-$JOB.out"
ACC=$(grep -o 'accuracy=[0-9.]*' "$OUT/mlsub-$DECISION-$JOB.out" | tail -1)

say "the decision history as a page (mlsub report; open it in a browser, offline)"
"$MLSUB" reconcile --json > /dev/null || true
"$MLSUB" report --out "$OUT"
say "trained model: $ACC (decision $DECISION, Slurm job $JOB); the cluster stays up: make cluster-down"
