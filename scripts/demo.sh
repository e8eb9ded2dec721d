#!/usr/bin/env bash
# scripts/demo.sh - the main job end to end on a local real Slurm cluster (`make demo`).
#
# 1. starts the lab cluster (scripts/slurm-lab/start-cluster.sh: 4 nodes on this host, as
#    root; installs Slurm with apt-get if missing; left running: `make cluster-down`);
#    builds (once) or reuses pyslurm for this Slurm (scripts/pyslurm.sh), the node state
#    source mlsub prefers when it matches the cluster's Slurm;
# 2. `mlsub examples/ps_train.py`: reads the live node state, places the job (yu-rr),
#    stores the decision in the default SQLite store, writes the sbatch script and submits
#    it, then waits for it to end (--wait);
# 3. shows the decision, the script, the Slurm job id, where each task ran (sacct), and
#    the trained model's accuracy (the job's output).
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
say "mlsub examples/ps_train.py  (workers, PSs and resources from its '# mlsub:' lines)"
"$MLSUB" "$ROOT/examples/ps_train.py" --interpreter "$PY" --show-script --wait --json > submit.json \
  || { cat submit.json 2>/dev/null; exit 1; }
read -r DECISION JOB < <("$PY" -c 'import json,sys; d=json.load(open("submit.json")); print(d["decision_id"], d["slurm_job_id"])')
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
cat "$OUT"/mlsub-"$DECISION"-*.out
ACC=$(grep -o 'accuracy=[0-9.]*' "$OUT"/mlsub-"$DECISION"-*.out | tail -1)
say "trained model: $ACC (decision $DECISION, Slurm job $JOB); the cluster stays up: make cluster-down"
