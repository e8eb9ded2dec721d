"""The command line: Typer commands (``app``), the one printer (``output``) and the one
error handler (``errors``). This is the only layer that prints and that picks adapters."""
