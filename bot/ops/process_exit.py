"""Ending a finished one-shot process without the interpreter's teardown.

After ``main()`` returns, CPython finalizes: it waits for non-daemon threads, runs the
``atexit`` callbacks, flushes ``sys.stdout`` and ``sys.stderr``, and then destroys every
module and object one by one. With the provider SDK and the config models loaded (a hundred
thousand objects, thousands of classes) that last part took 0.2–0.3 s of a 1 s
``hatchway chat`` turn, and it writes nothing: by then every file of ours is closed.

:func:`exit_now` does the first three steps exactly as the interpreter would and then ends
the process with :func:`os._exit`. It is safe only once the caller has closed what it owns:
``hatchway chat`` calls it after :meth:`bot.app.App.stop` (channels stopped, the provider's
connections closed, the store's queued writes run and its connection closed on its own
thread, which checkpoints the WAL into the database file, and that thread joined) and after
``asyncio.run`` returned (tasks cancelled and awaited, async generators closed, the
default executor's threads joined). What the skipped teardown would still have done is free
memory and run finalizers of objects that own nothing unwritten; the kernel closes the file
descriptors. There is no telemetry exporter in hatchway; one that registers an ``atexit``
callback (as OpenTelemetry's SDK does) is shut down by step 2.

When a thread that the interpreter would wait for is still running (a thread pool not shut
down, a model thread not joined), :func:`exit_now` returns instead, and the caller exits the
ordinary way: no thread is cut short that the normal exit would have let finish.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

#: The status CPython exits with when flushing stdout or stderr fails at exit.
FLUSH_FAILED = 120


def threads_left() -> list[str]:
    """Names of the running threads, other than this one, that the interpreter would wait
    for at exit (non-daemon threads)."""
    current = threading.current_thread()
    return [
        t.name for t in threading.enumerate() if t is not current and not t.daemon and t.is_alive()
    ]


def exit_now(code: int) -> None:
    """End the process with ``code`` once the ``atexit`` callbacks have run (the logging
    module's among them: every handler flushed and closed) and stdout and stderr are
    flushed; return, doing nothing, when :func:`threads_left` names any thread."""
    if threads_left():
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe: the interpreter would say 120 too
            code = FLUSH_FAILED
    os._exit(code)
