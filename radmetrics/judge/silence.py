"""When to say that a judge server has gone quiet.

A server that accepts the connection but never answers looks like a hang: with the openai backend's defaults
(120 s per request, 5 retries) a row fails only after about 13 minutes. `SilenceWatch` tells the backend when
to say so: after `first` seconds without any response while requests are out, then at a growing interval
(first, 2x, 4x... of the silence, the step capped at `MAX_STEP`), and a slow but working server is not nagged
for the rest of the run: the next threshold is kept when an answer arrives, so a server that takes a minute
per answer gets a line or two, not one a minute. Pure bookkeeping over a clock; the backend does the logging.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: the longest step between two notices of one silence
MAX_STEP = 600.0
#: a backend idle for longer than this between two batches starts a new silence (its requests were all
#: answered or given up; the time between batches is not the server's)
IDLE_GAP = 1.0


class SilenceWatch:
    """Seconds since the server last sent a response, and whether a notice is due."""

    def __init__(self, first: float, clock: Callable[[], float] = time.monotonic):
        self.first = float(first)
        self.clock = clock
        self._next = self.first  # silence (s) at which the next notice is due
        self._lock = threading.Lock()
        self._last: float = clock()
        self._stopped_at: float | None = None
        #: whether a response came since the backend started working (after an idle gap)
        self.heard_any = False

    @property
    def enabled(self) -> bool:
        return self.first > 0

    def start(self) -> None:
        """Requests are about to go out. Back-to-back batches (windows of one run) continue one silence."""
        now = self.clock()
        with self._lock:
            if self._stopped_at is None or now - self._stopped_at > IDLE_GAP:
                self._last, self.heard_any = now, False
            self._stopped_at = None

    def stop(self) -> None:
        with self._lock:
            self._stopped_at = self.clock()

    def heard(self) -> None:
        """A response came (any status: the server is alive). Called from request threads."""
        now = self.clock()
        with self._lock:
            self._last, self.heard_any = now, True

    def silent_for(self) -> float:
        with self._lock:
            return self.clock() - self._last

    def wait_s(self, cap: float) -> float:
        """How long the caller may block before the next notice could be due (at most `cap`)."""
        if not self.enabled:
            return cap
        return max(0.01, min(cap, self._next - self.silent_for()))

    def due(self) -> float | None:
        """The silence in seconds when a notice is due now (and the next one is scheduled), else None."""
        if not self.enabled:
            return None
        silent = self.silent_for()
        if silent < self._next:
            return None
        # the next step from the threshold just passed (not from `silent`, which a late check may overshoot)
        while self._next <= silent:
            self._next += min(self._next, MAX_STEP)
        return silent


def span(seconds: float) -> str:
    """30 s, 0.5 s, 2 min, 13 min: a duration as a person reads it."""
    if seconds < 100:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"
