"""A total deadline, and prompt cancellation, for every HTTP request of the openai backend.

httpx's timeouts bound each socket operation, not a request: a server trickling one byte a second keeps a
request alive for ever with timeout=2 (measured: 31 s). This wraps httpcore's network backend so that every
connect, read and write waits at most until the calling thread's request deadline, and until the shared
cancel time once a run is interrupted. Blocking reads are sliced (SLICE seconds) so a deadline or a cancel is
noticed within that time even while the server sends nothing.
"""
from __future__ import annotations

import threading
import time
from typing import Any

import httpcore

SLICE = 0.1


class RequestBudget:
    """Per-thread request deadlines plus one cancel time shared by all threads of a backend."""

    def __init__(self) -> None:
        self._local = threading.local()
        self.cancel_at: float | None = None
        self.cancelled = threading.Event()

    def start(self, seconds: float) -> None:
        self._local.deadline = time.monotonic() + seconds

    def stop(self) -> None:
        self._local.deadline = None

    def cancel(self, grace: float) -> None:
        """No new attempts from now on; requests in flight may finish within `grace` seconds."""
        self.cancel_at = time.monotonic() + grace
        self.cancelled.set()

    def reset(self) -> None:
        self.cancel_at = None
        self.cancelled.clear()

    def limit(self) -> float:
        deadline = getattr(self._local, "deadline", None)
        limits = [t for t in (deadline, self.cancel_at) if t is not None]
        return min(limits) if limits else float("inf")

    def timeout(self, timeout: float | None, error: type[Exception]) -> float | None:
        remaining = self.limit() - time.monotonic()
        if remaining <= 0:
            raise error("the request's total deadline passed" if not self.cancelled.is_set() else "cancelled")
        if remaining == float("inf"):
            return timeout
        return remaining if timeout is None else min(timeout, remaining)


class DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, budget: RequestBudget):
        self._inner, self._budget = inner, budget

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        end = time.monotonic() + timeout if timeout is not None else float("inf")
        while True:
            if time.monotonic() >= end:
                raise httpcore.ReadTimeout("timed out")
            wait = self._budget.timeout(end - time.monotonic() if end != float("inf") else None, httpcore.ReadTimeout)
            try:
                return self._inner.read(max_bytes, timeout=SLICE if wait is None else min(wait, SLICE))
            except httpcore.ReadTimeout:
                continue  # a slice passed: check the deadline and the cancel time again

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout=self._budget.timeout(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname: str | None = None, timeout: float | None = None):
        inner = self._inner.start_tls(ssl_context, server_hostname,
                                      timeout=self._budget.timeout(timeout, httpcore.ConnectTimeout))
        return DeadlineStream(inner, self._budget)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend, budget: RequestBudget):
        self._inner, self._budget = inner, budget

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        stream = self._inner.connect_tcp(host, port, timeout=self._budget.timeout(timeout, httpcore.ConnectTimeout),
                                         local_address=local_address, socket_options=socket_options)
        return DeadlineStream(stream, self._budget)

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        stream = self._inner.connect_unix_socket(path, timeout=self._budget.timeout(timeout, httpcore.ConnectTimeout),
                                                 socket_options=socket_options)
        return DeadlineStream(stream, self._budget)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def deadline_transport(budget: RequestBudget, **transport_options: Any):
    """An httpx transport whose connections obey BUDGET (httpx builds its httpcore pool itself, so the pool's
    network backend is swapped after construction; without that attribute the deadline is still checked
    between body chunks by the caller)."""
    import httpx

    transport = httpx.HTTPTransport(**transport_options)
    pool = getattr(transport, "_pool", None)
    inner = getattr(pool, "_network_backend", None)
    if inner is not None:
        pool._network_backend = DeadlineBackend(inner, budget)
    return transport
