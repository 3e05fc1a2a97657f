"""Persistent response cache in SQLite: no judgment is computed or lost twice.

Keyed by a hash of backend identity (backend, model, revision, chat template, ...), the exact prompt
and the generation settings. WAL mode and one transaction per write so that a run killed at any
point leaves a readable cache with every answer written before the kill; several processes may share
one file (SQLite's locking; busy timeout).

Concurrent runs share work through a claim (lease) table in the same file: a process claims a prompt before
asking it; another process that needs the same prompt waits for the answer instead of asking again. Leases
are renewed while the owner works and expire when it dies (at once when the owner is a dead process on this
host, after `lease_seconds` otherwise). A corrupt, truncated or non-SQLite file is a one-line CacheError
naming the file and the remedy.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from radmetrics.errors import RadmetricsError

DEFAULT_CACHE_ENV = "RADMETRICS_CACHE"
LEASE_ENV = "RADMETRICS_LEASE_SECONDS"
#: an answer this long is not an answer to one report (and must not be kept for ever)
MAX_CACHED_CHARS = 1_000_000


class CacheError(RadmetricsError):
    """The cache file cannot be used; the message names the file and what to do."""


def usable_answer(text: Any) -> bool:
    """Only real answers are cached: text, not blank, not absurdly long, not cut at the token limit (failures, junk
    and cut answers are asked again; a cut answer is unscored, and a rerun with more tokens asks anew anyway)."""
    from radmetrics.types import CutAnswer

    return (isinstance(text, str) and not isinstance(text, CutAnswer) and bool(text.strip())
            and len(text) <= MAX_CACHED_CHARS)


def _in_chunks(keys: Sequence[str], size: int = 500) -> Iterator[tuple[list[str], str]]:
    """``keys`` in chunks of ``size`` (SQLite's bound-parameter limit), each with its "?,?,..." placeholders."""
    for start in range(0, len(keys), size):
        chunk = list(keys[start : start + size])
        yield chunk, ",".join("?" * len(chunk))


def _guarded(method):
    """sqlite errors other than 'busy' become one CacheError line naming the file and the remedy."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as e:
            if "locked" in str(e) or "busy" in str(e):
                raise
            raise CacheError(self.unusable(e)) from None
    return wrapper


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
        if self.path.is_dir():
            raise CacheError(self.unusable("it is a folder"))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Judge answers about patient reports: readable by the owner only (0600), created that way.
            if not self.path.exists():
                fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
                os.close(fd)
        except OSError as e:
            raise CacheError(self.unusable(e.strerror or e)) from None
        self._check_header()
        self._local = threading.local()
        self._lock = threading.Lock()
        self._create_tables()

    def _check_header(self) -> None:
        """O(1) checks SQLite itself leaves to the first unlucky query: the magic, and a file shorter than the
        page count its header records (a truncated copy opens fine and then fails, or silently finds nothing)."""
        with self.path.open("rb") as fh:
            header = fh.read(100)
        if not header:
            return  # new, empty file
        if not header.startswith(b"SQLite format 3\x00"):
            raise CacheError(self.unusable("not an SQLite file"))
        if len(header) < 100:
            raise CacheError(self.unusable("truncated"))
        page_size = int.from_bytes(header[16:18], "big")
        page_size = 65536 if page_size == 1 else page_size
        pages = int.from_bytes(header[28:32], "big")
        size = self.path.stat().st_size
        if pages and size < pages * page_size:
            raise CacheError(self.unusable(f"truncated: {size} bytes, its header records {pages * page_size}"))

    def unusable(self, why: object) -> str:
        return (f"cache file {self.path} cannot be used ({why}): run with --no-cache, or delete the file "
                "(or pass --cache NEW_FILE) to start a new cache")

    @_guarded
    def _create_tables(self) -> None:
        con = self._connect()
        con.execute("CREATE TABLE IF NOT EXISTS responses ("
                    " key TEXT PRIMARY KEY, backend TEXT, model TEXT, response TEXT NOT NULL, created REAL)")
        con.execute("CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL)")
        # Answers written by a radmetrics whose in-process judges stop each row at the end of the judge's context
        # (`get_many_marked`), with the answer's `created` and the context it was written under: an older radmetrics
        # sharing the file writes `responses` alone (INSERT OR REPLACE of five values), so an answer it replaces no
        # longer matches its mark. A table of its own, not a column: older versions insert five values and would fail
        # on a sixth column.
        try:
            con.execute("CREATE TABLE IF NOT EXISTS answers_within_context (key TEXT PRIMARY KEY, created REAL NOT NULL,"
                        " context INTEGER)")
        except sqlite3.OperationalError as e:
            # a cache an older radmetrics wrote, shared read-only: it was read (every answer served) before this
            # table existed; without it no answer is marked, so every one is checked (`get_many_marked`)
            if "readonly" not in str(e):
                raise
        columns = {row[1] for row in con.execute("PRAGMA table_info(answers_within_context)")}
        self._marked = bool(columns)
        if self._marked and "context" not in columns:
            # a file a radmetrics of the day before marks kept their context made: its marks (context NULL) are
            # checked as ones written under a longer context; without the column every read and write of a mark
            # failed ('no such column: w.context', '2 columns but 3 values') and the file was called unusable
            try:
                con.execute("ALTER TABLE answers_within_context ADD COLUMN context INTEGER")
                columns.add("context")
            except sqlite3.OperationalError as e:
                if "duplicate column" in str(e):  # another process opening the file added it first
                    columns.add("context")
                elif "readonly" not in str(e):
                    raise
        self._mark_context = "context" in columns  # False: a read-only file without it, read with context NULL
        # what a batch of work read as the answers to ask again (`written` with a ``batch``), for the same batch asked
        # again whole by a Ray actor restarted on this node; ``noted``: when, to drop what a killed run left
        try:
            con.execute("CREATE TABLE IF NOT EXISTS written_for_batch (batch TEXT NOT NULL, key TEXT NOT NULL, "
                        "created REAL, noted REAL NOT NULL, PRIMARY KEY (batch, key))")
            self._batches = True
        except sqlite3.OperationalError as e:
            if "readonly" not in str(e):
                raise
            self._batches = bool(con.execute("SELECT 1 FROM sqlite_master WHERE name = 'written_for_batch'").fetchone())

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

    @_guarded
    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        con = self._connect()
        found: dict[str, str] = {}
        for chunk, marks in _in_chunks(keys):
            found.update(con.execute(f"SELECT key, response FROM responses WHERE key IN ({marks})", chunk))
        return found

    @_guarded
    def written(self, keys: Sequence[str], batch: str | None = None) -> dict[str, float]:
        """When each of these keys' answers was written (its ``created``), for the keys answered: which answer a
        run asks again (`CachedJudge.ask_anew`), told from one another run wrote since. ``batch``: a name for one
        batch of work that may be done again whole (a Ray actor restarted on this node): what its first read found
        is recorded in this file, and a later read under that name gives the record, so an answer the first try
        wrote since is told from the one to ask again (only ``created`` values this file holds are compared, never
        two machines' clocks; an actor restarted on a node with another cache file finds no record, and asks every
        key again). `batch_done` drops the record."""
        if batch is None or not self._batches:
            con = self._connect()
            found: dict[str, float] = {}
            for chunk, marks in _in_chunks(keys):
                found.update(con.execute(f"SELECT key, created FROM responses WHERE key IN ({marks})", chunk))
            return found
        recorded: dict[str, float | None] = {}
        with self._write() as con:  # read and recorded at once: a second try reads what the first recorded
            for chunk, marks in _in_chunks(keys):
                recorded.update(con.execute(f"SELECT key, created FROM written_for_batch WHERE batch = ? AND key IN "
                                            f"({marks})", [batch, *chunk]))
            new = [key for key in dict.fromkeys(keys) if key not in recorded]
            for chunk, marks in _in_chunks(new):
                now = dict(con.execute(f"SELECT key, created FROM responses WHERE key IN ({marks})", chunk))
                con.executemany("INSERT INTO written_for_batch VALUES (?, ?, ?, ?)",
                                [(batch, key, now.get(key), time.time()) for key in chunk])
                recorded.update((key, now.get(key)) for key in chunk)
        return {key: created for key, created in recorded.items() if created is not None}

    @_guarded
    def rewritten(self, keys: Sequence[str], batch: str) -> set[str]:
        """Of these keys, those `written` recorded under ``batch`` whose answer was written again since (or dropped):
        what an earlier try of that batch asked again (a run killed and continued, `score --retry-unscored`); only
        ``created`` values this file holds are compared."""
        if not self._batches:
            return set()
        con = self._connect()
        found: set[str] = set()
        for chunk, marks in _in_chunks(keys):
            found.update(key for (key,) in con.execute(
                f"SELECT b.key FROM written_for_batch b LEFT JOIN responses r ON r.key = b.key WHERE b.batch = ? AND "
                f"b.key IN ({marks}) AND r.created IS NOT b.created", [batch, *chunk]))
        return found

    @_guarded
    def batch_done(self, batch: str) -> None:
        """Drop what `written` recorded for ``batch`` (its work done), and any record a killed run left a week ago.
        Nothing recorded, nothing written: `score --retry-unscored` ends every chunk here, and a read-only cache file
        with no row to ask again was 'cannot be used' (review 44)."""
        if not self._batches:
            return
        where, args = "batch = ? OR noted < ?", (batch, time.time() - 7 * 86400)
        if self._connect().execute(f"SELECT 1 FROM written_for_batch WHERE {where} LIMIT 1", args).fetchone():
            with self._write() as con:
                con.execute(f"DELETE FROM written_for_batch WHERE {where}", args)

    @_guarded
    def get_many_marked(self, keys: Sequence[str]) -> dict[str, tuple[str, bool, int | None]]:
        """Like `get_many`, with each answer's mark, read in the same query (a run that drops and rewrites a key
        between two reads cannot pair one answer with another's mark): key -> (answer, marked, context). ``marked``:
        written by a radmetrics that stops an in-process judge's rows at the end of its context (`put_many` with a
        ``context``); an unmarked answer (an older radmetrics wrote it) may have gone on past the positions the
        model was trained on. ``context``: the context, in tokens, it was written under (None: not known)."""
        con = self._connect()
        found: dict[str, tuple[str, bool, int | None]] = {}
        for chunk, marks in _in_chunks(keys):
            context = "w.context" if self._mark_context else "NULL"
            query = (f"SELECT r.key, r.response, w.key IS NOT NULL, {context} FROM responses r LEFT JOIN "
                     f"answers_within_context w ON w.key = r.key AND w.created = r.created WHERE r.key IN ({marks})"
                     if self._marked else
                     f"SELECT key, response, 0, NULL FROM responses WHERE key IN ({marks})")
            for key, response, marked, context in con.execute(query, chunk):
                found[key] = (response, bool(marked), context)
        return found

    @_guarded
    def put_many(self, rows: Iterable[tuple[str, str, str | None, str]], context: int | None = None) -> None:
        """rows: (key, backend, model, response); one transaction, so all or none land. Unusable answers
        (blank, not text, oversized) are not kept. A claim on a key ends with its answer. Each answer is marked as
        written by a radmetrics that stops rows at the end of the judge's context, under ``context`` tokens (the
        backend's, where it has one: `get_many_marked`)."""
        rows = [(k, b, m, r, time.time()) for k, b, m, r in rows if usable_answer(r)]
        if not rows:
            return
        with self._write() as con:
            con.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)", rows)
            con.executemany("INSERT OR REPLACE INTO answers_within_context (key, created, context) VALUES (?, ?, ?)",
                            [(r[0], r[4], context) for r in rows])
            con.executemany("DELETE FROM claims WHERE key = ?", [(r[0],) for r in rows])

    @_guarded
    def delete(self, keys: Sequence[str]) -> None:
        """Forget answers (`--retry-unscored` asks those prompts again)."""
        with self._write() as con:
            con.executemany("DELETE FROM responses WHERE key = ?", [(k,) for k in keys])
            con.executemany("DELETE FROM answers_within_context WHERE key = ?", [(k,) for k in keys])

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            con = self._connect()
            try:
                con.execute("BEGIN IMMEDIATE")
                yield con
                con.execute("COMMIT")
            except BaseException:  # Ctrl-C may land anywhere, even right after BEGIN: never leave it open
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise

    # -- claims: concurrent runs wait for each other's answers instead of asking twice --------------------------
    @_guarded
    def claim(self, keys: Iterable[str], owner: str, ttl: float, limit: int | None = None,
              anew: Mapping[str, float | None] = MappingProxyType({})) -> tuple[list[str], list[str]]:
        """Claim up to LIMIT of KEYS for OWNER, in order: keys nobody holds, whose lease has expired, or whose
        owner is a dead process on this host. Returns (claimed, others): the keys claimed, and the keys looked at
        that are answered already or held by another live run (the caller reads or waits for those). ANEW: keys to
        be asked again (`CachedJudge.ask_anew`), each with when the answer to ask again was written (`written`;
        None: none was): that answer is no answer here, one written since (another run asked it again) is. Keys
        after the LIMIT-th claim are not looked at, so a long list costs one window's work per call."""
        now = time.time()
        claimed: list[str] = []
        others: list[str] = []
        with self._write() as con:
            remaining = iter(keys)
            while limit is None or len(claimed) < limit:
                chunk = list(itertools.islice(remaining, 500))  # SQLite's bound-parameter limit
                if not chunk:
                    break
                marks = ",".join("?" * len(chunk))
                answered = dict(con.execute(f"SELECT key, created FROM responses WHERE key IN ({marks})", chunk))
                held = {k: (o, e) for k, o, e in con.execute(
                    f"SELECT key, owner, expires FROM claims WHERE key IN ({marks})", chunk)}
                for key in chunk:
                    if limit is not None and len(claimed) >= limit:
                        break
                    if key in answered and not (key in anew and answered[key] == anew[key]):
                        others.append(key)
                        continue
                    if key in held:
                        holder, expires = held[key]
                        if holder != owner and expires > now and _owner_alive(holder):
                            others.append(key)
                            continue
                    con.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?)", (key, owner, now + ttl))
                    claimed.append(key)
        return claimed, others

    @_guarded
    def renew(self, owner: str, ttl: float) -> None:
        with self._write() as con:
            con.execute("UPDATE claims SET expires = ? WHERE owner = ?", (time.time() + ttl, owner))

    @_guarded
    def release(self, owner: str, keys: Sequence[str] | None = None) -> None:
        with self._write() as con:
            if keys is None:
                con.execute("DELETE FROM claims WHERE owner = ?", (owner,))
            else:
                con.executemany("DELETE FROM claims WHERE key = ? AND owner = ?", [(k, owner) for k in keys])

    @contextlib.contextmanager
    def lease(self, ttl: float | None = None) -> Iterator[Lease]:
        """A claim owner for one generate call: renewed in the background, every claim released at the end."""
        lease = Lease(self, ttl or float(os.environ.get(LEASE_ENV, 60)))
        try:
            yield lease
        finally:
            lease.close()

    @_guarded
    def __len__(self) -> int:
        return self._connect().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    @_guarded
    def integrity_ok(self) -> bool:
        return self._connect().execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _owner_alive(owner: str) -> bool:
    """Owners are host:pid:token; a dead process on this host holds nothing (a kill -9 must not make the
    rerun wait out the lease). Owners on other hosts are trusted until their lease expires."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Lease:
    def __init__(self, cache: ResponseCache, ttl: float):
        self.cache, self.ttl = cache, ttl
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, daemon=True, name="radmetrics-lease")
        self._thread.start()

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                self.cache.renew(self.owner, self.ttl)
            except Exception:  # a busy file now and then: the next beat renews
                pass

    def claim(self, keys: Iterable[str], limit: int | None = None,
              anew: Mapping[str, float | None] = MappingProxyType({})) -> tuple[list[str], list[str]]:
        return self.cache.claim(keys, self.owner, self.ttl, limit, anew)

    def release(self, keys: Sequence[str] | None = None) -> None:
        self.cache.release(self.owner, keys)

    def close(self) -> None:
        self._stop.set()
        try:
            self.release()
        except Exception:  # never hide the error (or interrupt) that ended the run
            pass
