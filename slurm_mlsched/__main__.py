"""``python -m slurm_mlsched …`` is ``mlsub …`` (what each array task of
``mlsub replay --on-slurm`` runs, with the interpreter that submitted it)."""

from .cli.app import main

if __name__ == "__main__":
    main()
