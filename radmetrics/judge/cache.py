"""Persistent response cache in SQLite: no judgment is computed or lost twice.

Keyed by a hash of backend identity (backend, model, revision, chat template, ...), the exact prompt
and the generation settings. WAL mode and one transaction per write so that a run killed at any
point leaves a readable cache with every answer written before the kill; several processes may share
one file (SQLite's locking; busy timeout).
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

DEFAULT_CACHE_ENV = "RADMETRICS_CACHE"


def default_cache_path() -> Path | None:
    """$RADMETRICS_CACHE (a path, or "off"), else ~/.cache/radmetrics/judgments.sqlite."""
    env = os.environ.get(DEFAULT_CACHE_ENV)
    if env is not None:
        return None if env.strip().lower() in {"", "off", "0", "false", "none"} else Path(env).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "radmetrics" / "judgments.sqlite"


def cache_key(identity: dict[str, Any], prompt: str, config: dict[str, Any]) -> str:
    payload = json.dumps({"identity": identity, "prompt": prompt, "config": config}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ResponseCache:
    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Judge answers about patient reports: readable by the owner only (0600), created that way.
        if not self.path.exists():
            fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        self._local = threading.local()
        self._lock = threading.Lock()
        with self._connect() as con:
            con.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                " key TEXT PRIMARY KEY, backend TEXT, model TEXT, response TEXT NOT NULL, created REAL)"
            )

    def _connect(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            con.execute("PRAGMA busy_timeout=60000")
            # Switching to WAL takes a lock that the busy handler does not wait for when another process
            # is opening the same new file at that moment: retry for a while instead of failing the run.
            deadline = time.monotonic() + 60
            while True:
                try:
                    con.execute("PRAGMA journal_mode=WAL")
                    break
                except sqlite3.OperationalError as e:
                    if "locked" not in str(e) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            con.execute("PRAGMA synchronous=NORMAL")
            self._local.con = con
        return con

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        con = self._connect()
        found: dict[str, str] = {}
        for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
            chunk = list(keys[start : start + 500])
            marks = ",".join("?" * len(chunk))
            for key, response in con.execute(
                f"SELECT key, response FROM responses WHERE key IN ({marks})", chunk
            ):
                found[key] = response
        return found

    def put_many(self, rows: Iterable[tuple[str, str, str | None, str]]) -> None:
        """rows: (key, backend, model, response); one transaction, so all or none land."""
        rows = [(k, b, m, r, time.time()) for k, b, m, r in rows]
        if not rows:
            return
        with self._lock:
            con = self._connect()
            con.execute("BEGIN IMMEDIATE")
            try:
                con.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)", rows)
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise

    def __len__(self) -> int:
        return self._connect().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def integrity_ok(self) -> bool:
        return self._connect().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
