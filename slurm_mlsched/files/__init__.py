"""Parsers of user-supplied inputs: the cluster file, job options and the ``# mlsub:``
header, and the shipped model profile table. Parsers are pure functions of text or data;
``load_*`` / ``read_*`` functions are the thin readers around them.
"""
