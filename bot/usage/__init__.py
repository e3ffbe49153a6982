"""Usage on record and budgets: what every model call used and cost, and the limits that stop
a turn before it spends more.

* :mod:`~bot.usage.meter`: :class:`~bot.usage.meter.UsageMeter` (one per process) and the
  per-turn :class:`~bot.usage.meter.TurnUsage` the turn loop asks;
* :mod:`~bot.usage.estimate`: a call's usage when the provider reported none;
* :mod:`~bot.usage.pricing`: ``[pricing."<model>"]`` as a lookup;
* :mod:`~bot.usage.budgets`: ``[budgets]`` as the budgets a turn is held to;
* :mod:`~bot.usage.windows`: the day and the month in the budgets' time zone;
* :mod:`~bot.usage.ledger`: the sums per budget scope, read from the store and kept;
* :mod:`~bot.usage.report`: the table ``hatchway usage`` prints.

The rows themselves are :mod:`bot.store.usage`'s.
"""
