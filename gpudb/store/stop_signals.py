"""SIGTERM and SIGHUP stopping a long command as Ctrl-C does, so it unwinds through its
clean-up (``gpudb sweep`` ends its workers and keeps the finished runs; ``gpudb measure``
restores the GPU's clocks)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Signals that stop a command as Ctrl-C does (where the platform has them).
STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: unwinds like Ctrl-C."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextmanager
def stop_on_signals() -> Iterator[list[int]]:
    """Within the block, SIGTERM and SIGHUP raise Stopped (once) where they would end the
    process, so the command unwinds through its clean-up. A signal ignored (nohup) or handled
    by the program stays so; signals go to the main thread only. Yields the list of the
    signal that fired (empty until one does): a Stopped raised inside a DuckDB query reaches
    the caller as DuckDB's RuntimeError('Query interrupted'), without its signal."""
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    fired: list[int] = []

    def stop(signum, frame):
        if not fired:  # a second signal while unwinding must not interrupt the clean-up
            fired.append(signum)
            raise Stopped(signum)

    previous = {}
    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) is signal.SIG_DFL:
            previous[sig] = signal.signal(sig, stop)
    try:
        yield fired
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
