"""slurm_mlsched: place distributed ML training jobs on Slurm with the online
randomized-rounding algorithm of Yu, Liu, Wu, Ji, Bentley (IEEE TNSE).

Architecture (see docs/architecture.md):

* ``model``, ``placement``: the pure core. No I/O, no clock, no adapters.
* ``files``: parsers of user-supplied files (cluster YAML, ``# mlsub:`` lines); pure
  functions of text, plus thin readers.
* ``services``: use cases that wire the core to adapters and return data.
* ``cli``: the Typer layer, the only place that prints and picks adapters.
"""

__version__ = "0.1.0"
