"""Scoring a file of any length in constant memory: read a chunk of rows, judge it, write its results, forget it.

`radmetrics score` runs on this. Per chunk of rows (default 4,096): the rows are read lazily (JSONL line by line,
CSV record by record), prompts built and tokenized only for that chunk, judged through the one pipeline
(`runner.judge_pairs`: cache, engine, parse, re-asks), and the result rows appended **in input order** to
``OUTPUT.part`` (flushed per chunk). The corpus summary is kept as running totals (`RunningSummary`): the scores
of scored rows as a float array (8 bytes a row) and counters, never the judgments. At the end the part file is
renamed over OUTPUT in one step (a CSV output is written from the part file in two streaming passes, header
first; Parquet, which needs one schema, reads the part file back whole); a run that dies leaves OUTPUT untouched and ``OUTPUT.part`` holding every finished chunk, and the next
run with the same input and settings continues after it (the part file's rows are re-read, not re-judged).
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import uuid
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from radmetrics.errors import InputError, RadmetricsError
from radmetrics.io import check_regular_file, part_paths, strict_json_ready
from radmetrics.types import Judgment

if TYPE_CHECKING:
    from radmetrics.io import Record

#: rows read at a time for column detection (JSONL: the union of their keys)
SNIFF_ROWS = 1000


@dataclass
class PairStream:
    path: Path
    reference_column: str
    candidate_column: str
    #: other columns that are also reference/candidate aliases, not used (`io.pick_pair_columns`)
    also_found: tuple[str, ...] = ()
    #: records with bytes that are not UTF-8 (kept unscored), and the first one's line, counted as they are read
    not_utf8_rows: int = 0
    first_not_utf8_line: int | None = None

    def rows(self) -> Iterator[Record]:
        """Every record (row, the line it starts on, why it cannot be scored or None), in order, read lazily."""
        from radmetrics.io import NOT_UTF8, Records

        self.not_utf8_rows, self.first_not_utf8_line = 0, None
        for record in Records(self.path, columns_read={self.reference_column, self.candidate_column, "id"}):
            if record.problem and record.problem.startswith(NOT_UTF8):
                self.not_utf8_rows += 1
                self.first_not_utf8_line = self.first_not_utf8_line or record.line
            yield record


def open_pairs(path: str | os.PathLike, reference_column: str | None = None,
               candidate_column: str | None = None) -> PairStream:
    """A lazy reader of report pairs; the columns are chosen from the first rows (aliases as `io.read_pairs`)."""
    from radmetrics.io import Records, pick_pair_columns

    path = Path(path)
    check_regular_file(path)
    records = Records(path)
    first_problem = None
    for n, record in enumerate(records):  # the CSV header, or the keys of the first readable JSONL rows
        first_problem = first_problem or (record.problem and record)
        if n + 1 >= SNIFF_ROWS:
            break
    if not records.columns and first_problem:  # not one readable row to take the columns from
        raise InputError(f"{path} line {first_problem.line}: {first_problem.problem}; no readable row among the "
                         f"first {n + 1}")
    ref, cand, unused = pick_pair_columns(records.columns, reference_column, candidate_column, path)
    return PairStream(path, ref, cand, unused)


class RunningSummary:
    """The corpus summary of a scoring system, accumulated row by row: equal to ``runner.aggregate(system, all)``
    without holding the judgments.

    Running totals cover the shared mean/std summary (the scores kept as a float array, 8 bytes a row, summed in
    row order as `mean_std_summary` does), the means a system declares in `row_mean_names` (FineRadScore,
    RadCliQ) and GREEN's extras (leniency counts, error-free shares, derived means).
    They are checked once against the system's own ``aggregate`` on the first ``VERIFY_ROWS`` rows: when they
    agree the rows are dropped and only totals are kept; when they do not (a system with another aggregate), or
    with ``keep_all`` (GREEN's clustered summary needs every explanation), light copies of the judgments (raw
    text dropped) are kept and the system's aggregate runs at the end."""

    VERIFY_ROWS = 2048

    def __init__(self, system: Any, keep_all: bool = False):
        from collections import Counter

        self.system, self.key = system, system.score_key
        self.scores = array("d")
        self.total = 0
        self.reasons: dict[str, int] = {}
        self.leniency: Counter[str] = Counter()
        self.lenient = self.differ = self.empty_candidates = 0
        self.error_free: dict[str, int] = {}
        self.green_scored = 0
        self.derived: dict[str, list[float]] = {}
        from radmetrics.scoring import RowMeans

        self.row_means = RowMeans(system)  # FineRadScore's severity mean, RadCliQ's per-category means, ...
        self.kept: list[Judgment] | None = []
        self.mode = "keep" if keep_all else "verify"
        self.keys: list[str] | None = None

    def add(self, judgment: Judgment) -> None:
        from radmetrics.scoring import add_unscored
        from radmetrics.types import GreenJudgment

        self.total += 1
        self.row_means.add(judgment)
        self.empty_candidates += bool(judgment.details.get("empty_candidate"))
        if judgment.score is None:
            add_unscored(self.reasons, judgment)  # as `count_reasons` counts them
        else:
            self.scores.append(judgment.score)
            names = judgment.details.get("leniency") or []
            self.leniency.update(names)
            self.lenient += bool(names)
            if names:
                self.differ += not judgment.details.get("official_reading", {}).get("same_counts", True)
            if isinstance(judgment, GreenJudgment):
                self.green_scored += 1
                for letter in _letters():
                    if judgment.significant.get(letter, 0) == 0:
                        self.error_free[letter] = self.error_free.get(letter, 0) + 1
                for name, value in (judgment.details.get("derived") or {}).items():
                    acc = self.derived.setdefault(name, [0.0, 0])
                    if value is not None:
                        acc[0] += value
                        acc[1] += 1
        if self.kept is not None:
            self.kept.append(_light(judgment))
            if self.mode == "verify" and len(self.kept) >= self.VERIFY_ROWS:
                self._verify()

    def _verify(self) -> None:
        """Running totals replace the judgments once they give exactly the system's own aggregate."""
        import logging

        from radmetrics.runner import aggregate

        logger = logging.getLogger("radmetrics")
        level = logger.level
        logger.setLevel(logging.ERROR)  # the check must not repeat the aggregate's warnings
        try:
            expected = aggregate(self.system, self.kept)
        finally:
            logger.setLevel(level)
        totals = self._totals(list(expected))
        if totals == expected:
            self.mode, self.kept, self.keys = "totals", None, list(expected)
        else:
            self.mode = "keep"

    def _totals(self, keys: list[str]) -> dict[str, Any] | None:
        n = len(self.scores)
        mean = sum(self.scores) / n if n else None
        out: dict[str, Any] = {
            self.key: mean, f"{self.key}_std": (sum((s - mean) ** 2 for s in self.scores) / n) ** 0.5 if n else None,
            "num_scored": n, "num_unscored": self.total - n, "unscored_reasons": dict(self.reasons),
            "leniency": dict(self.leniency.most_common()), "num_lenient": self.lenient,
            "num_official_would_differ": self.differ, "num_empty_candidates": self.empty_candidates,
            "derived": {name: (acc[0] / acc[1] if acc[1] else None) for name, acc in self.derived.items()},
            **self.row_means.result()}
        if "error_free_share" in keys:
            from radmetrics.green.parse import SUB_CATEGORIES

            out["error_free_share"] = {f"({letter}) {SUB_CATEGORIES[letter]}": (
                self.error_free.get(letter, 0) / self.green_scored if self.green_scored else None)
                for letter in _letters()}
        if any(k not in out for k in keys):
            return None
        return {k: out[k] for k in keys}

    def result(self, **options: Any) -> dict[str, Any]:
        """The summary; ``options`` go to the system's aggregate as `runner.aggregate` passes them."""
        if self.mode == "totals" and not any(options.values()):
            return self._totals(self.keys)  # type: ignore[arg-type, return-value]
        from radmetrics.runner import aggregate

        return aggregate(self.system, self.kept, **options)


def _letters() -> tuple[str, ...]:
    from radmetrics.green.parse import LETTERS

    return tuple(LETTERS)


def _light(judgment: Judgment) -> Judgment:
    """A judgment without its raw judge text (the biggest part; aggregates never read it)."""
    import copy

    light = copy.copy(judgment)
    light.raw = ""
    return light


def result_line(row: dict[str, Any]) -> str:
    """One result row as a line of strict JSON: an input's NaN / Infinity (which Python's json reads) are written
    as null, not as the bare NaN that JSON parsers elsewhere (JavaScript, Go, jq 1.7) refuse. Rows without one
    (nearly all) are written as they are, with no copy."""
    try:
        return json.dumps(row, ensure_ascii=False, default=str, allow_nan=False) + "\n"
    except ValueError:
        return json.dumps(strict_json_ready(row), ensure_ascii=False, default=str, allow_nan=False) + "\n"


class OutputWriteError(RadmetricsError):
    """The results could not be written (no space left, a file-size limit): said in one line, rows kept."""


class OrderedPartWriter:
    """Result rows appended in input order to ``OUTPUT.part``; `finish` renames it over OUTPUT (JSONL) or
    writes OUTPUT from it (CSV), atomically. ``OUTPUT.part.json`` records the run's identity (input, metric,
    judge, settings), so a later run continues the part file only when they are the same, and ``token``: a name
    for this part file's run, kept while a run continues it and new when one starts it over (`--retry-unscored`
    names its asks after it, so a run killed and continued reads what the killed one asked again)."""

    def __init__(self, output: str | os.PathLike, identity: dict[str, Any]):
        self.output = Path(output)
        self.output.parent.mkdir(parents=True, exist_ok=True)
        self.part, self.stamp_file = part_paths(self.output)
        stamp = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()
        self.done_rows = 0
        self.discarded = False
        self.stamp_fd = _locked_stamp(self.stamp_file, self.output)  # one run at a time writes OUTPUT
        try:
            previous, _, token = _stamp_lines(self.stamp_fd)
            continued = previous == stamp and self.part.exists()
            self.token = token if continued and token else uuid.uuid4().hex
            self.named = False  # a name given (`name`): kept by `close` with no row written
            if continued:
                offset = 0
                with open(self.part, "rb") as fh:
                    for line in fh:
                        if not line.endswith(b"\n"):
                            break  # a line cut by a crash: dropped, its row is judged again
                        offset += len(line)
                        self.done_rows += 1
                os.truncate(self.part, offset)
            else:
                # an interrupted run's part file with another input or settings: not continued (said by `score`)
                self.discarded = previous != "" and self.part.exists()
                self.part.unlink(missing_ok=True)
            self._write_stamp(stamp)
            self.fh = _private_append(self.part)
        except BaseException:
            os.close(self.stamp_fd)
            raise

    def _write_stamp(self, stamp: str) -> None:
        os.ftruncate(self.stamp_fd, 0)
        os.lseek(self.stamp_fd, 0, os.SEEK_SET)
        os.write(self.stamp_fd, f"{stamp}\n{os.getpid()}\n{self.token}\n".encode())  # the pid: for a second run's error

    def name(self, what: object) -> str:
        """A name under the part file's token for work the response cache records (`score --retry-unscored`: what a
        chunk asks again). Once one is given the part file and its stamp outlive a run stopped before its first row
        (`close`): the next run continues them under the same token and reads the record (review 44: a Ctrl-C in the
        first chunk deleted both, and the rerun asked again what the stopped run had asked again)."""
        self.named = True
        return f"{self.token}:{what}"

    def resumed_rows(self) -> Iterator[dict[str, Any]]:
        """The rows a previous run already wrote (to rebuild the running summary)."""
        with open(self.part, encoding="utf-8") as fh:
            for _, line in zip(range(self.done_rows), fh):
                yield json.loads(line)

    def write(self, rows: list[dict[str, Any]]) -> None:
        try:
            for row in rows:
                self.fh.write(result_line(row))
            self.fh.flush()
        except OSError as e:  # a full disk, a file-size limit: one line, and the whole rows written are kept
            raise OutputWriteError(f"cannot write {self.part} ({e.strerror or e}); the {self.done_rows} rows written "
                                   "before are kept: free space and rerun the same command to continue") from None
        self.done_rows += len(rows)

    def restart(self) -> None:
        """Drop the rows written so far (they are not this input's): the run starts over."""
        self.fh.close()
        os.truncate(self.part, 0)
        self.done_rows = 0
        self.token = uuid.uuid4().hex  # another run's rows: nothing it asked is this run's
        self._write_stamp(_stamp_lines(self.stamp_fd)[0])
        self.fh = _private_append(self.part)

    def replace_rows(self, rows: dict[int, dict[str, Any]]) -> None:
        """Rows ``k`` of the part file replaced by ``rows[k]``: the file rewritten beside it and renamed over it
        (a run killed meanwhile leaves the part file as it was)."""
        from radmetrics.io import AtomicFile

        self.fh.close()
        with AtomicFile(self.part) as out, open(self.part, encoding="utf-8") as old:
            for k, line in enumerate(old):
                out.write(result_line(rows[k]) if k in rows else line)
        self.fh = _private_append(self.part)

    def close(self) -> None:
        try:
            self.fh.close()
        except OSError:  # flushing a chunk onto the full disk again: its cut line is dropped when a run continues
            pass
        finally:
            try:
                if not self.done_rows and not self.named and self.part.stat().st_size == 0:
                    # a run stopped before its first row (an option refused once the judge starts, e.g. --actors
                    # past the Ray cluster's CPUs): nothing to continue, so no empty OUTPUT.part and stamp left
                    # behind (review 40b); unlinked while still locked, as `finish` does
                    self.part.unlink()
                    self.stamp_file.unlink(missing_ok=True)
            except OSError:
                pass
            os.close(self.stamp_fd)  # the lock goes with it: the next run may continue the part file

    def finish(self) -> None:
        try:
            self._finish()
        except OSError as e:  # the part file holds every row: a rerun continues after all of them and writes again
            raise OutputWriteError(f"cannot write {self.output} ({e.strerror or e}); every row is kept in "
                                   f"{self.part}: free space and rerun the same command to write it") from None

    def _finish(self) -> None:
        from radmetrics.io import AtomicFile

        self.fh.close()
        if self.output.suffix.lower() == ".csv":
            fields: dict[str, None] = {}
            for row in self._part_rows():  # pass 1: the header (every key of every row)
                fields.update(dict.fromkeys(row))
            with AtomicFile(self.output) as out:  # a temp file beside OUTPUT (0600, fsync), renamed over it
                writer = csv.DictWriter(out, fieldnames=list(fields))
                writer.writeheader()
                for row in self._part_rows():  # pass 2: the rows
                    writer.writerow({k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in row.items()})
            self.part.unlink()
        elif self.output.suffix.lower() == ".parquet":
            from radmetrics.io import write_parquet_batches

            with AtomicFile(self.output, binary=True) as fh:  # two passes over the part file, a batch at a time
                write_parquet_batches(fh, self._part_batches)
            self.part.unlink()
        else:
            os.replace(self.part, self.output)
        self.stamp_file.unlink(missing_ok=True)  # unlinked while still locked: a run waiting on it sees it gone
        os.close(self.stamp_fd)

    def _part_batches(self) -> Iterator[list[dict[str, Any]]]:
        from radmetrics.io import PARQUET_BATCH_ROWS

        batch: list[dict[str, Any]] = []
        for row in self._part_rows():
            batch.append(row)
            if len(batch) >= PARQUET_BATCH_ROWS:
                yield batch
                batch = []
        if batch:
            yield batch

    def _part_rows(self) -> Iterator[dict[str, Any]]:
        with open(self.part, encoding="utf-8") as fh:
            for line in fh:
                yield json.loads(line)


def _locked_stamp(stamp_file: Path, output: Path) -> int:
    """The part file's stamp, open and exclusively locked (``flock``) for as long as this run writes OUTPUT: a
    second run with the same OUTPUT (a double launch, a scheduler's requeue while the first job still runs)
    stops with an error instead of appending to the same part file. Where ``flock`` is missing (Windows) there is
    no lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return os.open(stamp_file, os.O_RDWR | os.O_CREAT, 0o644)
    while True:
        fd = os.open(stamp_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _stamp_lines(fd)
            os.close(fd)
            pid = f" (pid {holder[1]})" if holder[1].isdigit() else ""
            raise InputError(f"{output} is being written by another radmetrics run{pid}; wait for it to finish, "
                             "or give this run another --output") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(stamp_file).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # the run that held it finished and removed it between our open and our lock: open it anew


def _private_append(path: Path):
    """``path`` opened to append text, created readable by its owner only (it holds the reports, as the cache and
    the summary do)."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "a", encoding="utf-8")


def _stamp_lines(fd: int) -> list[str]:
    """The stamp file's first three lines (the run's identity hash, the writing run's pid, the part file's token),
    "" where missing (an older radmetrics wrote two)."""
    os.lseek(fd, 0, os.SEEK_SET)
    lines = [line.strip() for line in os.read(fd, 4096).decode("utf-8", "replace").split("\n")]
    return (lines + ["", "", ""])[:3]
