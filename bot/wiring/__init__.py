"""What the composition root (:mod:`bot.app`) is built from, one concern a module.

:class:`bot.app.App` says what a running hatchway is made of and in which order it starts
and stops; the modules here say how each piece is made, so that the root stays readable:
:mod:`~bot.wiring.storage` (the database the configuration names),
:mod:`~bot.wiring.replicas` (the lease keeper and the liveness of several replicas),
:mod:`~bot.wiring.channels` (the adapters, created and kept running),
:mod:`~bot.wiring.tools` (the tool catalog, MCP, the workspace of a turn's attachments),
:mod:`~bot.wiring.metering` (the metered wrappers, only when metrics are kept) and
:mod:`~bot.wiring.parts` (stopping the long-running parts).
"""
