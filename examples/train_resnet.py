#!/usr/bin/env python3
# mlsub: --name resnet50-demo --model resnet-50 --epochs 2 --batches-per-epoch 2000
# mlsub: --workers 6 --ps auto
# mlsub: --gpus-per-worker 1 --cpus-per-worker 1 --mem-per-worker 8G
# mlsub: --cpus-per-ps 1 --mem-per-ps 4G
#
# An example job for `mlsub plan examples/train_resnet.py --cluster examples/cluster.yaml`.
# The '# mlsub:' lines above are its options (flags on the command line override them);
# the header ends at the first line that is neither blank nor a comment.
#
# The body stands in for a training program: each task mlsub launches learns its role
# from environment variables set by the generated sbatch script (the live path).
"""Print the role environment this task was started with."""

import os
import socket

ROLE_VARIABLES = (
    "MLSCHED_ROLE",  # "ps" or "worker"
    "MLSCHED_RANK",  # this task's index within its role
    "MLSCHED_PS_HOSTS",  # comma-separated host:port of every PS
    "MLSCHED_WORKER_HOSTS",  # comma-separated host:port of every worker
    "MLSCHED_JOB_ID",
    "TF_CONFIG",
    "DMLC_ROLE",
    "DMLC_PS_ROOT_URI",
    "DMLC_NUM_SERVER",
    "DMLC_NUM_WORKER",
)


def main() -> None:
    print(f"host {socket.gethostname()}")
    for name in ROLE_VARIABLES:
        print(f"{name}={os.environ.get(name, '<unset>')}")


if __name__ == "__main__":
    main()
