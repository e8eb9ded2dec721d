#!/usr/bin/env bash
# lab-accounts.sh - the accounts and QOS the lab's tests submit with, in slurmdbd
# (idempotent: each is added only when missing; every sacctmgr call bounded by 60 s).
#
#   account ml-research  (root is a user of it)   QOS high  (root's associations may use it)
#
# Run by start-cluster.sh once slurmdbd knows the cluster, and by the integration tests
# that need them (tests/integration/test_sbatch_lines_live.py), against a cluster that
# was already running.
set -euo pipefail
SACCTMGR=(timeout 60 sacctmgr)
has() { "${SACCTMGR[@]}" -n -P show "$@" | grep -q .; }

has qos where name=high format=name || "${SACCTMGR[@]}" -i add qos high
has account where name=ml-research format=account ||
  "${SACCTMGR[@]}" -i add account ml-research description=lab organization=lab
has assoc where account=ml-research user=root format=user ||
  "${SACCTMGR[@]}" -i add user root account=ml-research
"${SACCTMGR[@]}" -n -P show assoc where user=root format=qos | grep -qw high ||
  "${SACCTMGR[@]}" -i modify user root set qos+=high
echo "[lab-accounts] account ml-research and QOS high present"
