"""Ops subcommands of ``hatchway``. Each module exposes ``register(subparsers)``, which adds
its parser and sets ``handler`` to ``async (args) -> int`` (the exit code)."""
