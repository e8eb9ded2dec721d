# All set-up happens here: `make demo` and `make test` work on a fresh Debian 12/13 as root.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv pyslurm demo demo-ddp examples-deps test unit fuzz lint typecheck bench bench-live bench-agreement bench-policies bench-sweep bench-holdout bench-anatomy bench-typed bench-preempt bench-widths bench-param bench-resize bench-price bench-aging bench-gain bench-migrate bench-group bench-forecast bench-oracle bench-order-rollout bench-clause-noise bench-regather bench-regret bench-hold bench-queue bench-scale bench-report bench-burst bench-fuzz clean cluster-up cluster-down

venv: $(STAMP)

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { apt-get update -qq && apt-get install -y -qq python3 python3-venv python3-pip; }
	@$(PYTHON) -m venv --help >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq python3-venv; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

# The main job end to end: local Slurm cluster, mlsub examples/ps_train.py, its result.
demo: venv
	bash scripts/demo.sh

# An all-reduce (PyTorch DDP) job through mlsub on the local Slurm cluster: 8 ranks on 2 nodes.
demo-ddp: venv examples-deps
	bash scripts/demo_ddp.sh

# torch 2.13.0 (CPU build) for examples/ddp_train.py: the `examples` extra.
examples-deps: venv
	PY=$(PY) bash scripts/examples-deps.sh

# pyslurm built from its release source for this machine's Slurm (cached wheel; minutes once).
pyslurm: venv
	PY=$(PY) bash scripts/pyslurm.sh

lint: venv
	$(VENV)/bin/ruff check slurm_mlsched tests bench examples migrations
	$(VENV)/bin/ruff format --check slurm_mlsched tests bench examples migrations

typecheck: venv
	$(VENV)/bin/mypy

unit: venv
	$(PY) -m pytest -q tests

# The property tests (hypothesis) with fresh random examples, FUZZ_RUNS times. `make test`
# under CI=true draws the same examples every run (tests/conftest.py); this looks further.
FUZZ_RUNS ?= 5
fuzz: venv
	@files=$$(grep -rl --include='test_*.py' 'from hypothesis' tests | sort); \
	for i in $$(seq $(FUZZ_RUNS)); do \
	  echo "fuzz run $$i of $(FUZZ_RUNS)"; \
	  HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -q -p no:cacheprovider $$files || exit 1; \
	done

# pytest between cluster-up and cluster-down (also when tests fail): scripts/test.sh
test: venv lint typecheck
	PY=$(PY) bash scripts/examples-deps.sh || echo "torch not installed: the DDP example's tests say so (fail under CI)"
	PY=$(PY) bash scripts/test.sh tests

# A real 4-node Slurm cluster on this host (root; apt-get installs Slurm if missing).
# Started here, it is yours: `make test` uses it and leaves it running.
LAB_MARKER = $${SLURM_LAB_BASE:-/tmp/slurm-lab}/started-by-test
cluster-up:
	bash scripts/slurm-lab/start-cluster.sh && rm -f $(LAB_MARKER)

cluster-down:
	bash scripts/slurm-lab/stop-cluster.sh && rm -f $(LAB_MARKER)

# Each writes its own section of docs/benchmarks.md (bench/sections.py).
bench: venv
	$(PY) -m bench.run --out docs/benchmarks.md
	$(MAKE) bench-live bench-agreement bench-policies bench-sweep bench-holdout bench-typed bench-preempt bench-widths bench-param bench-queue bench-scale bench-reliability bench-burst bench-report

# Live planning latency: needs the local Slurm cluster (started here if it is not up).
bench-live: venv
	bash scripts/slurm-lab/start-cluster.sh >/dev/null
	$(PY) -m bench.live_latency --out docs/benchmarks.md

# Every policy on Philly (5,000 jobs), Pollux 1-3 and Sia/Helios 1-2, at Δ = 600 and 60 s.
bench-policies: venv
	$(PY) -m bench.policy_table --out docs/benchmarks.md

# Robustness: 87 workloads (traces × shape × offered load × seed), every policy at its defaults.
bench-sweep: venv
	$(PY) -m bench.sweep --out docs/benchmarks.md

# Held-out cells: Philly later in the trace, Pollux and Sia on a shape, load and seed no
# sweep cell has; fixed before their first replay, never used to choose a parameter.
bench-holdout: venv
	$(PY) -m bench.holdout --workers 2 --out docs/benchmarks.md

# The sweep's worst cell taken apart: yu-rr against the bound's relaxed schedule, by width
# and by node size (CELL='...' for another sweep cell).
bench-anatomy: venv
	$(PY) -m bench.cell_anatomy --out docs/benchmarks.md $(if $(CELL),--cell "$(CELL)")

# The bound's GPU-type rows on workloads whose jobs name GPU types (a stated, seeded rule)
# on a typed cluster from Alibaba's node inventory; every policy ÷ the typed bound.
bench-typed: venv
	$(PY) -m bench.typed_bound --out docs/benchmarks.md

# The preemption ladder: yu-rr, yu-rr +preempt, drf on Philly windows (6x8) and the 16 cells.
bench-preempt: venv
	$(PY) -m bench.preempt_ladder --out docs/benchmarks.md \
		--cells philly-w10000,philly-w30000,philly-w50000,philly-w70000,pollux1,pollux2,pollux3,sia1,sia2,philly5k,mustang1,mustang2

# yu-rr alone over the 16 policy cells and the 87 sweep cells: preempt_cost slot against
# exact (the default) and reserve_depth 4 against 2 (the default since 2026-12-05), the
# ratio per family (bench/param_ladder.py; about 90 min on 2 cores).
bench-param: venv
	rm -f bench/out/ladder/slot.jsonl bench/out/ladder/exact.jsonl bench/out/ladder/rd4.jsonl
	$(PY) -m bench.param_ladder run --tag slot --workers 2 --set preempt_cost='"slot"'
	$(PY) -m bench.param_ladder run --tag exact --workers 2
	$(PY) -m bench.param_ladder run --tag rd4 --workers 2 --set reserve_depth=4
	$(PY) -m bench.param_ladder render --base slot --other exact \
		--title "Restart cost of a pause: \`preempt_cost\` exact against slot"
	$(PY) -m bench.param_ladder render --base rd4 --other exact --section param-reserve \
		--title "Reservations: \`reserve_depth\` 2 (the default) against 4"

# yu-rr alone over the same 103 cells: the defaults (resize by checkpoint-restart on, its
# narrow starts bounded by narrow_regret 2, preempt_max 1000) against the defaults before
# 2026-12-05 (no resize, preempt_max 8), two cells at a time (docs/formulation.md §16;
# about 60 min on 2 cores).
bench-resize: venv
	rm -f bench/out/ladder/before-resize.jsonl bench/out/ladder/defaults.jsonl
	$(PY) -m bench.param_ladder run --tag before-resize --workers 2 \
		--set preempt_resize=false --set preempt_max=8
	$(PY) -m bench.param_ladder run --tag defaults --workers 2
	$(PY) -m bench.param_ladder render --base before-resize --other defaults \
		--section param-resize \
		--title "Resize by checkpoint-restart: the defaults (resize on, \`narrow_regret\` 2, \`preempt_max\` 1000) against no resize and \`preempt_max\` 8"

# yu-rr alone over the same 103 cells: the queue's aging counted in the cluster's size (the
# default) against aging in machines (docs/formulation.md §14.2; about 60 min on 2 cores).
bench-aging: venv
	rm -f bench/out/ladder/aging-machine.jsonl bench/out/ladder/aging-cluster.jsonl
	$(PY) -m bench.param_ladder run --tag aging-machine --workers 2 \
		--set aging=0.3 --set aging_unit='"machine"'
	$(PY) -m bench.param_ladder run --tag aging-cluster --workers 2
	$(PY) -m bench.param_ladder render --base aging-machine --other aging-cluster \
		--section param-aging \
		--title "The unit of the queue's aging: \`aging_unit\` cluster (the default, γ' = 0.01875) against machine (γ = 0.3)"

# yu-rr alone over the same 103 cells: the LP's machine price, best fit (the default)
# against the load price it replaced (docs/formulation.md §4; about 30 min on 2 cores).
bench-price: venv
	rm -f bench/out/ladder/price-load.jsonl bench/out/ladder/price-fit.jsonl
	$(PY) -m bench.param_ladder run --tag price-load --workers 2 --set machine_price='"load"'
	$(PY) -m bench.param_ladder run --tag price-fit --workers 2 --set machine_price='"fit"'
	$(PY) -m bench.param_ladder render --base price-load --other price-fit \
		--section param-price \
		--title "Machine price: \`machine_price\` fit (the default) against load"

# yu-rr alone over the same 103 cells: a pause's gain by rollout (the default since
# 2026-12-05) against the two-job exchange it replaced (docs/formulation.md §16; about
# 40 min on 2 cores).
bench-gain: venv
	rm -f bench/out/ladder/gain-exchange.jsonl bench/out/ladder/gain-rollout.jsonl
	$(PY) -m bench.param_ladder run --tag gain-exchange --workers 2 \
		--set preempt_gain='"exchange"'
	$(PY) -m bench.param_ladder run --tag gain-rollout --workers 2
	$(PY) -m bench.param_ladder render --base gain-exchange --other gain-rollout \
		--section param-gain \
		--title "Pause gain: \`preempt_gain\` rollout (the default) against exchange"

# yu-rr alone over the same 103 cells: a pause kept when its job moves at once
# (preempt_migrate) against off, the default (docs/formulation.md §16; about 40 min on
# 2 cores; the off run is the defaults', as bench-gain's rollout run).
bench-migrate: venv
	rm -f bench/out/ladder/migrate-off.jsonl bench/out/ladder/migrate.jsonl
	$(PY) -m bench.param_ladder run --tag migrate-off --workers 2
	$(PY) -m bench.param_ladder run --tag migrate --workers 2 --set preempt_migrate=true
	$(PY) -m bench.param_ladder render --base migrate-off --other migrate \
		--section param-migrate \
		--title "Migration: \`preempt_migrate\` on against off (the default)"

# yu-rr alone over the same 103 cells: a pause together (preempt_group: the running jobs
# sharing a machine paused as one when their room together starts a waiting job) against
# off, the default (docs/formulation.md §16; measured, not kept; about 45 min on 2 cores).
bench-group: venv
	rm -f bench/out/ladder/group-off.jsonl bench/out/ladder/group.jsonl
	$(PY) -m bench.param_ladder run --tag group-off --workers 2
	$(PY) -m bench.param_ladder run --tag group --workers 2 --set preempt_group=true
	$(PY) -m bench.param_ladder render --base group-off --other group \
		--section ladder-group \
		--title "Pause together: \`preempt_group\` on against off (the default; measured, not kept)"

# yu-rr alone over the same 103 cells: arrivals in a pause's rollout (preempt_forecast: the
# look-ahead's forecast of arrivals list-scheduled in both branches of the gain) against
# the defaults (docs/formulation.md §16; measured, not kept; about 35 min on 2 cores).
bench-forecast: venv
	rm -f bench/out/ladder/forecast-off.jsonl bench/out/ladder/forecast.jsonl
	$(PY) -m bench.param_ladder run --tag forecast-off --workers 2
	$(PY) -m bench.param_ladder run --tag forecast --workers 2 --set preempt_forecast=true
	$(PY) -m bench.param_ladder render --base forecast-off --other forecast \
		--section ladder-forecast \
		--title "Arrivals in a pause's rollout: \`preempt_forecast\` on against off (the default; measured, not kept)"

# An oracle order: yu-rr with every rule at the defaults and each job's queue key scaled by
# a multiplier a seeded local search fits offline to the cell (docs/formulation.md §15.10;
# every sweep cell above 1.15 x the bound but Philly's, and Pollux 8 on 6x8: 8 cells, 400
# replays and 60 with key noise each, about 1.5 h on one core).
bench-oracle: venv
	$(PY) -m bench.oracle_order --out docs/benchmarks.md $(if $(CELL),--cell "$(CELL)") \
		$(if $(EVALS),--evals $(EVALS))

# The queue order chosen online by rollout: at each re-plan the next position goes to the
# candidate whose list schedule of the queue costs least (a probe; docs/formulation.md
# §15.10; every sweep cell but Philly's, 4 configurations, about 15 min on one core).
bench-order-rollout: venv
	$(PY) -m bench.order_rollout --out docs/benchmarks.md $(if $(CELL),--cell "$(CELL)")

# How much of a missed target clause is luck: each clause the target still misses, yu-rr
# under seeded 5 % noise on every job's queue key against the reference policy's figure
# (docs/formulation.md §15.10; three clauses, about 15 min on one core).
bench-clause-noise: venv
	$(PY) -m bench.clause_noise --out docs/benchmarks.md

# yu-rr alone over the same 103 cells: regather before the re-plan (preempt_regather: a
# spread running job with less work left than the queue restarts co-located on a free
# node before the queue gets it), the default since 2026-12-06, against off
# (docs/formulation.md §16; about 45 min on 2 cores).
bench-regather: venv
	rm -f bench/out/ladder/regather-off.jsonl bench/out/ladder/regather.jsonl
	$(PY) -m bench.param_ladder run --tag regather-off --workers 2 --set preempt_regather=false
	$(PY) -m bench.param_ladder run --tag regather --workers 2
	$(PY) -m bench.param_ladder render --base regather-off --other regather \
		--section ladder-regather \
		--title "Regather before the re-plan: \`preempt_regather\` on (the default) against off"

# yu-rr alone over the same 103 cells: the narrow start's regret guard off
# (narrow_regret 0, the rule until 2026-12-05) against the default 2, under the other
# defaults of 2026-12-06 (rollout gain, regather; docs/formulation.md §16; ~45 min).
bench-regret: venv
	rm -f bench/out/ladder/regret2.jsonl bench/out/ladder/regret0.jsonl
	$(PY) -m bench.param_ladder run --tag regret2 --workers 2
	$(PY) -m bench.param_ladder run --tag regret0 --workers 2 --set narrow_regret=0
	$(PY) -m bench.param_ladder render --base regret2 --other regret0 \
		--section ladder-regret \
		--title "The narrow start's regret guard off: \`narrow_regret\` 0 against 2 (the default; measured, not kept)"

# yu-rr alone over the same 103 cells: the look-ahead under preemption holds back only
# jobs the pause rule cannot pause (lookahead_pausable false, the default since
# 2026-12-06) against every job (true, the rule until then; docs/formulation.md §14.7).
bench-hold: venv
	rm -f bench/out/ladder/hold-pausable.jsonl bench/out/ladder/hold-default.jsonl
	$(PY) -m bench.param_ladder run --tag hold-pausable --workers 2 --set lookahead_pausable=true
	$(PY) -m bench.param_ladder run --tag hold-default --workers 2
	$(PY) -m bench.param_ladder render --base hold-pausable --other hold-default \
		--section ladder-hold \
		--title "The look-ahead under preemption: \`lookahead_pausable\` false (the default) against true"

# One late-binding re-plan of 200 waiting jobs at 64 and 1,024 machines: latency.
bench-widths: venv
	$(PY) -m bench.width_ladder --all --out docs/benchmarks.md

bench-queue: venv
	$(PY) -m bench.queue_latency --out docs/benchmarks.md

# The whole Philly trace (82,247 jobs) under each policy: wall time and peak RSS (~20 min).
bench-scale: venv
	$(PY) -m bench.philly_scale --out docs/benchmarks.md

# Concurrency, fuzzed input and bounded waits against the real cluster, SQLite, PostgreSQL.
bench-reliability: venv
	bash scripts/slurm-lab/start-cluster.sh >/dev/null
	$(PY) -m bench.reliability --out docs/benchmarks.md

# Sixteen mlsub plan --reserve at once on one store (SQLite, PostgreSQL): a burst on the lock.
bench-burst: venv
	$(PY) -m bench.lock_burst --out docs/benchmarks.md

# What fuzzed input made mlsub replay / mlsub plan do: the fuzz tests at 25 x a CI run's
# examples from a drawn (stored) seed, counted by exit code. No Slurm.
bench-fuzz: venv
	$(PY) -m bench.fuzz_tally --out docs/benchmarks.md

# mlsub report of 10,000 and 100,000 synthetic decisions, and the page in headless Chromium.
bench-report: venv
	$(PY) -m bench.report_scale --out docs/benchmarks.md

# A real Slurm log replayed and compared with what Slurm did (needs the local cluster).
bench-agreement: venv
	bash scripts/slurm-lab/start-cluster.sh >/dev/null
	$(PY) -m bench.slurm_agreement --out docs/benchmarks.md

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache dist build
