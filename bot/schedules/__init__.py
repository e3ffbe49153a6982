"""Scheduled jobs: "remind us / run this every morning".

Modules: :mod:`~bot.schedules.job` (the job and its stored definition),
:mod:`~bot.schedules.recurrence` (cron and one-shot times in IANA zones),
:mod:`~bot.schedules.book` (jobs over the store), :mod:`~bot.schedules.runner` (the
scheduler task that delivers due jobs to the gateway as background envelopes) and
:mod:`~bot.schedules.tools` (``schedule_add`` / ``schedule_list`` / ``schedule_remove``).
See ``docs/schedules.md``.

::

    HatchwayError
    └── ScheduleError   a job definition is invalid (cron, time zone, past time, limit)
"""
