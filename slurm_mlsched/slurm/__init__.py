"""Slurm adapters: the command runner (the one way Slurm commands run), the parsers of
their output (pure), and the node state sources built on them."""
