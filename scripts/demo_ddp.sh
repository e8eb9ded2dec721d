#!/usr/bin/env bash
# scripts/demo_ddp.sh - an all-reduce (PyTorch DDP) job end to end on the local real Slurm
# cluster (`make demo-ddp`).
#
# 1. starts the lab cluster (scripts/slurm-lab/start-cluster.sh: 4 nodes of 4 GPUs on this
#    host, as root; left running: `make cluster-down`) and installs the examples' torch
#    (CPU build, scripts/examples-deps.sh);
# 2. `mlsub examples/ddp_train.py --arch allreduce --workers 8 --gpus-per-worker 1`: reads
#    the live node state, places the 8 ranks by the program (the ring's cost: fewest nodes,
#    equal ranks per node: 4 + 4 on 2 nodes), stores the decision, renders ONE sbatch job
#    (explicit nodelist, per-node tasks and GPUs, torchrun per node with its rendezvous on
#    the first node), submits it and follows it to its end (--wait);
# 3. shows the decision, the ring's slowest link (mlsub explain), the script, where Slurm
#    ran each task (sacct) against the nodes the decision named, and the accuracy.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MLSUB=${MLSUB:-$ROOT/.venv/bin/mlsub}
PY=${PY:-$ROOT/.venv/bin/python}
OUT=${DEMO_DIR:-/tmp/mlsub-demo-ddp}
LAUNCHER=${LAUNCHER:-torchrun}
# Δ = 10 s (the integration tests' slot): the job below is sized so that 8 ranks end a slot
# sooner than 7 would (22 epochs: 3,520 mini-batches; docs/user-guide.md, "Parameter servers
# or all-reduce": --workers is "at most N", and a rank that ends nothing sooner is not used)
export MLSUB_SLOT_SECONDS=${MLSUB_SLOT_SECONDS:-10}
EPOCHS=${EPOCHS:-22}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

[ "$(id -u)" = 0 ] || { echo "demo_ddp.sh: the local Slurm cluster needs root" >&2; exit 1; }
say "starting the local Slurm cluster (4 nodes × 4 GPUs)"
bash scripts/slurm-lab/start-cluster.sh | tail -n 3
say "torch for the example (CPU build)"
PY="$PY" bash scripts/examples-deps.sh
"$MLSUB" db upgrade > /dev/null

mkdir -p "$OUT"
cd "$OUT"
for _ in $(seq 60); do  # start from an idle lab cluster (earlier runs' jobs end first)
  [ -z "$(squeue -h -t running,pending 2>/dev/null)" ] && break
  sleep 2
done

say "mlsub examples/ddp_train.py --workers 8 --gpus-per-worker 1 --epochs $EPOCHS --launcher $LAUNCHER -- $EPOCHS"
echo "(--arch allreduce and the rest of the job come from the script's '# mlsub:' lines)"
"$MLSUB" "$ROOT/examples/ddp_train.py" --arch allreduce --workers 8 --gpus-per-worker 1 \
  --epochs "$EPOCHS" --launcher "$LAUNCHER" --interpreter "$PY" --wait --json -- "$EPOCHS" > submit.json \
  || { cat submit.json 2>/dev/null; exit 1; }
read -r DECISION JOB < <("$PY" -c 'import json; d=json.load(open("submit.json")); print(d["decision_id"], d["slurm_job_id"])')
"$PY" - <<'PYEOF'
import json
d = json.load(open("submit.json"))
print(f"decision {d['decision_id']}: policy {d['policy']}, seed {d['seed']}, "
      f"Slurm job {d['slurm_job_id']}, final state {d['state']}")
for p in d["placement"]:
    print(f"  {p['node']}: {p['count']} {p['role']}")
print("\n--- sbatch script ---")
print(d["script"])
PYEOF

say "why this layout (mlsub explain $DECISION)"
"$MLSUB" explain "$DECISION" | sed -n '1,40p'

say "where Slurm ran the job (sacct) and the nodes the decision named"
for _ in $(seq 20); do  # accounting lags a few seconds behind the job's end
  ROWS=$(sacct -j "$JOB" --parsable2 --noheader --format=JobID,JobName,NodeList,NTasks,State,ExitCode 2>/dev/null || true)
  grep -q '\.0|' <<<"$ROWS" && break
  sleep 1
done
printf 'JobID|JobName|NodeList|NTasks|State|ExitCode\n%s\n' "$ROWS" \
  | awk -F'|' '{printf "%-14s %-10s %-16s %-6s %-10s %s\n", $1, $2, $3, $4, $5, $6}'
NAMED=$("$PY" -c 'import json; d=json.load(open("submit.json")); print(",".join(sorted({p["node"] for p in d["placement"]})))')
RAN=$(awk -F'|' '$1 ~ /\.0$/ {print $3}' <<<"$ROWS" | head -1)
RAN=$(scontrol show hostnames "$RAN" | sort | paste -sd, -)
echo "decision named: $NAMED; the job's step ran on: $RAN"
[ "$NAMED" = "$RAN" ] || { echo "demo_ddp.sh: Slurm ran the job on other nodes than the decision named" >&2; exit 1; }

say "the job's output"
cat "$OUT/mlsub-$DECISION-$JOB.out"
ACC=$(grep -o 'accuracy=[0-9.]*' "$OUT/mlsub-$DECISION-$JOB.out" | tail -1)
say "trained: $ACC over ranks on $RAN (decision $DECISION, Slurm job $JOB); the cluster stays up: make cluster-down"
