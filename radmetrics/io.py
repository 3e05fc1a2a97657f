"""Reading report pairs (JSONL or CSV) and writing per-row results."""
from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import stat
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from radmetrics.errors import InputError

REFERENCE_ALIASES = ("reference", "references", "ref", "ground_truth", "gt_report", "gt", "target",
                     "reference_report", "findings")
CANDIDATE_ALIASES = ("candidate", "candidates", "prediction", "predictions", "pred", "hypothesis", "hyp",
                     "generated", "generated_report", "candidate_report")


@dataclass
class PairFile:
    rows: list[dict[str, Any]]
    reference_column: str
    candidate_column: str
    #: row index -> "line N: why it cannot be scored" (the row is kept: a stand-in or the row as read)
    bad_rows: dict[int, str]
    #: the line of the file each row starts on (to name it in messages)
    lines: list[int]
    #: other columns that are also reference/candidate aliases, not used (`pick_pair_columns`)
    also_found: tuple[str, ...] = ()


def alias_column(columns: Iterable[str], aliases: tuple[str, ...]) -> str | None:
    """The column named as one of `aliases` (the first alias wins), else None: a column named exactly so wins over
    one that differs in case or surrounding spaces (two tools' exports)."""
    columns = list(columns)
    for alias in aliases:
        if alias in columns:
            return alias
    lowered: dict[str, str] = {}
    for c in columns:
        lowered.setdefault(c.lower().strip(), c)  # the first spelling seen, not the last
    return next((lowered[alias] for alias in aliases if alias in lowered), None)


def _pick(columns: Iterable[str], aliases: tuple[str, ...], wanted: str | None, kind: str, path: Path) -> str:
    columns = list(columns)
    if wanted:
        if wanted not in columns:
            raise InputError(f"{path}: no column '{wanted}' for the {kind}; columns are: {', '.join(columns)}")
        return wanted
    found = alias_column(columns, aliases)
    if found is not None:
        return found
    other = next((sep for sep in (";", "|", "\t") if len(columns) == 1 and sep in columns[0]), None)
    if other == "\t":
        hint = ("; the header holds tabs between names: the file looks tab-separated: name it .tsv (radmetrics "
                "reads a file by its suffix)")
    else:
        hint = (f"; the header holds '{other}' between names: the file looks '{other}'-delimited (a spreadsheet "
                "export in a locale that writes decimal commas): save it comma-separated, or as TSV" if other else "")
    raise InputError(
        f"{path}: no {kind} column. Expected one of: {', '.join(aliases)} (or pass --{kind}-column); "
        f"columns are: {', '.join(columns) or '(none)'}{hint}"
    )


def check_pair_columns(reference: str | None, candidate: str | None, where: str = "") -> None:
    """One column for both the reference and the candidate would judge every report against itself."""
    if reference is not None and reference == candidate:
        raise InputError(f"{where}the reference and the candidate would both be read from column '{reference}', so "
                         "every report would be judged against itself; name two different columns with "
                         "--reference-column and --candidate-column")


def other_alias_columns(columns: Iterable[str], chosen: Iterable[str | None], aliases: Iterable[str]
                        ) -> tuple[str, ...]:
    """The columns not `chosen` whose names are among `aliases`, in any case: the other columns a column picked by
    name could have been read from (``ground_truth`` beside ``reference``)."""
    aliases, chosen = set(aliases), set(chosen)
    return tuple(c for c in columns if c not in chosen and c.lower().strip() in aliases)


def other_pair_columns(columns: Iterable[str], chosen: Iterable[str | None], reference_column: str | None,
                       candidate_column: str | None) -> tuple[str, ...]:
    """The columns not `chosen` whose names also mean a reference (or a candidate) where that column was picked by
    name rather than given: ``ground_truth`` beside ``reference``, ``prediction`` beside ``candidate``."""
    return other_alias_columns(columns, chosen, [a for kind, given in ((REFERENCE_ALIASES, reference_column),
                                                                       (CANDIDATE_ALIASES, candidate_column))
                                                 if not given for a in kind])


def pick_pair_columns(columns: Iterable[str], reference_column: str | None, candidate_column: str | None,
                      path: Path) -> tuple[str, str, tuple[str, ...]]:
    """(reference column, candidate column, the other alias columns present and not used): a file with both
    ``gt_report`` and ``reference`` is read from one of them, and the user is told the other was there."""
    columns = list(columns)
    ref = _pick(columns, REFERENCE_ALIASES, reference_column, "reference", path)
    cand = _pick(columns, CANDIDATE_ALIASES, candidate_column, "candidate", path)
    check_pair_columns(ref, cand, f"{path}: ")
    return ref, cand, other_pair_columns(columns, (ref, cand), reference_column, candidate_column)


def columns_read_line(path: str | os.PathLike, reference: str, candidate: str | None, unused: tuple[str, ...],
                      choose: str = "pass --reference-column / --candidate-column to choose") -> str:
    """The line that says which columns are read, and which other columns could have been (two exports merged
    into one file: the wrong pair must not be scored or trained on without a word). No `candidate`: a file of
    reports alone (`data transform`)."""
    line = f"Reading {path}: reference = '{reference}'" + (f", candidate = '{candidate}'" if candidate else "")
    if unused:
        line += f"; the file also has {', '.join(repr(c) for c in unused)}, not read ({choose})"
    return line


#: first bytes of files people pass by mistake (compressed, spreadsheets, databases, images, Arrow/Parquet)
_BINARY_MAGIC = {b"\x1f\x8b": "gzip data", b"PK\x03\x04": "a zip archive (an .xlsx workbook?)",
                 b"%PDF": "a PDF", b"SQLite format 3\x00": "an SQLite database", b"\x89PNG": "a PNG image",
                 b"PAR1": "a Parquet file", b"ARROW1": "an Arrow file", b"\xff\xd8\xff": "a JPEG image",
                 b"BZh": "bzip2 data", b"\xfd7zXZ": "xz data", b"\x28\xb5\x2f\xfd": "zstd data"}


#: what to run on a file that is not UTF-8 (most such files are Latin-1 / Windows-1252 exports)
ICONV_HINT = "re-encode the file, e.g. iconv -f latin1 -t utf-8 IN > OUT"


def not_utf8_file(path: str | os.PathLike, error: UnicodeDecodeError) -> str:
    """Why a whole file read as UTF-8 failed, with the fix (a Latin-1 / Excel export, most often)."""
    return f"{path} is not UTF-8 text (it holds the byte {error.object[error.start:error.start + 1]!r}); {ICONV_HINT}"


#: how the problem of a record holding bytes that are not UTF-8 starts
NOT_UTF8 = "not UTF-8"
#: the problem of a JSON record with an escape of half a UTF-16 surrogate pair (e.g. "\ud800")
LONE_SURROGATE = ("a JSON \\uD800-\\uDFFF escape without its pair (half of a character: not text); the row is "
                  "kept unscored with the escape spelled out")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _surrogates_spelled_out(value: Any) -> Any:
    """Every string with its lone surrogates written as the escapes the file held ("\\ud800")."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8") if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {_surrogates_spelled_out(k): _surrogates_spelled_out(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_surrogates_spelled_out(v) for v in value]
    return value


def check_regular_file(path: Path) -> None:
    """An input file radmetrics can read (more than once: a check, the columns, the rows, a resumed run's pairing):
    not a folder, a pipe or a device, and there."""
    if path.is_dir():
        raise InputError(f"{path} is a folder; give a JSONL or CSV file")
    if path.exists() and not path.is_file():
        raise InputError(f"{path} is not a regular file (a pipe, e.g. <(...), or a device): radmetrics reads its "
                         "input more than once; write it to a file first")
    if not path.is_file():
        raise InputError(f"Input file not found: {path}")


#: bytes no text file holds (tab, line feed, carriage return and form feed left out)
_CONTROL_BYTES = bytes([*range(0, 9), 11, *range(14, 32), 127])


def check_text_file(path: str | os.PathLike, sniff: int | None = 1 << 16) -> None:
    """Refuse what is not a text file, with one line: a folder, a known binary magic number, UTF-16, NUL bytes
    >= 1%, mostly undecodable bytes, or nothing at all. Checks the first SNIFF bytes (None: the whole file, read
    in blocks so that memory stays flat), so that readers that stream the file can call it first."""
    import codecs

    path = Path(path)
    check_regular_file(path)
    # undecodable bytes: replacement characters decoding with errors="replace", less those the text itself holds
    replaced = codecs.getincrementaldecoder("utf-8")(errors="replace")
    ignored = codecs.getincrementaldecoder("utf-8")(errors="ignore")
    size = nul = bad = control = 0
    blank = True
    with path.open("rb") as fh:
        first = True
        while True:
            block = fh.read(sniff if sniff is not None else _CHECK_BLOCK)
            if first:
                for magic, what in _BINARY_MAGIC.items():
                    if block.startswith(magic):
                        raise InputError(f"{path} is not a text file ({what}); radmetrics reads JSONL or CSV text")
                if block.startswith((b"\xff\xfe", b"\xfe\xff")):
                    raise InputError(f"{path} is UTF-16 text; save it as UTF-8 (radmetrics reads UTF-8 JSONL or CSV)")
                block = block.removeprefix(b"\xef\xbb\xbf")
                first = False
            final = sniff is not None or not block
            size += len(block)
            nul += block.count(b"\x00")
            control += len(block) - len(block.translate(None, _CONTROL_BYTES))
            blank = blank and not block.strip()
            bad += replaced.decode(block, final).count("\ufffd") - ignored.decode(block, final).count("\ufffd")
            if final:
                break
    if size and nul * 100 >= size:
        raise InputError(f"{path} is not a text file ({nul} NUL bytes); radmetrics reads UTF-8 JSONL or CSV")
    if size and control * 50 > size:  # control bytes text never holds: binary, which no re-encoding helps
        raise InputError(f"{path} is not a text file ({control} control bytes in {size}); radmetrics reads UTF-8 "
                         "JSONL or CSV")
    if size and bad * 10 > size:
        raise InputError(f"{path} is not UTF-8 text ({bad} of {size} bytes are not UTF-8); {ICONV_HINT}")
    if blank and (sniff is None or path.stat().st_size <= sniff):
        raise InputError(f"{path} is empty")


#: how much of a file `check_text_file` reads at a time when it checks the whole file
_CHECK_BLOCK = 1 << 20


#: characters of an unreadable record kept in its output row (`_raw`), enough to find it in the file
RAW_KEPT = 200


@dataclass
class Record:
    """One record of an input file: the line it starts on, its row, and why it cannot be scored (None: it can).
    A record that cannot be read as a row stands in as ``{"_line": N, "_raw": its text cut to RAW_KEPT}``."""

    line: int
    row: dict[str, Any]
    problem: str | None = None


def _not_utf8(raw: bytes) -> str | None:
    """Where a line's bytes stop being UTF-8, or None when they are UTF-8."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"byte 0x{raw[e.start]:02X} at position {e.start + 1}"
    return None


def _stand_in(line: int, text: str) -> dict[str, Any]:
    text = text.rstrip("\r\n")
    return {"_line": line, "_raw": text if len(text) <= RAW_KEPT else text[:RAW_KEPT] + "…"}


#: suffixes that say a file is JSON Lines (any other suffix but .csv/.tsv is read as JSON Lines too)
JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")

#: the longest CSV field read (characters): 16 Mi, far past any report; a quote left open stops there, not at EOF
CSV_FIELD_LIMIT = 16 * 2**20


class Records:
    """Every record of a JSONL, CSV or TSV file, lazily and in order, each with the line it starts on; records
    that cannot be read come out too, as stand-ins with their problem (nothing is dropped, nothing shifted).

    Read as written: JSONL split on "\\n" only (U+2028, form feed, ... are text inside a record), CSV through the
    csv module (quoted newlines kept), a leading BOM dropped. Text is never altered: a record with bytes that are
    not UTF-8 keeps its problem (the replaced text is there to find it, never to be scored). A CSV row with the
    wrong number of fields stands in; what makes the rest of a CSV unreliable is an InputError naming the line:
    a header that is not UTF-8 or names a column twice, a header and no rows, a record the csv module gives up
    on, or a record over several lines with the wrong number of fields or an odd number of quotes (an unmatched
    quote that swallowed the lines after it). `columns`: the CSV header, or the keys of the readable JSONL rows
    read so far."""

    def __init__(self, path: str | os.PathLike, columns_read: Iterable[str] | None = None):
        self.path = Path(path)
        suffix = self.path.suffix.lower()
        self.delimiter = {".csv": ",", ".tsv": "\t"}.get(suffix)
        self.columns: dict[str, None] = {}
        #: the columns a run reads (a JSONL key given twice matters only there); None: unknown, every key matters
        self.columns_read = set(columns_read) if columns_read is not None else None

    def __iter__(self) -> Iterator[Record]:
        return self._jsonl() if self.delimiter is None else self._csv()

    def _lines(self) -> Iterator[tuple[int, str, str | None, str]]:
        """(line number, text, where it is not UTF-8 or None, the text with such bytes shown as ``\\xe9``);
        CSV lines also end at a lone "\\r", as the csv module expects (newline="")."""
        lineno = 0
        with open(self.path, "rb") as fh:
            for n, chunk in enumerate(fh):
                if n == 0:
                    chunk = chunk.removeprefix(b"\xef\xbb\xbf")  # a spreadsheet's BOM is not part of column 1
                for raw in (chunk,) if self.delimiter is None else chunk.splitlines(keepends=True):
                    lineno += 1
                    text = raw.decode("utf-8", errors="replace")
                    bad = _not_utf8(raw) if "\ufffd" in text else None
                    yield lineno, text, bad, raw.decode("utf-8", errors="backslashreplace") if bad else text

    def _jsonl(self) -> Iterator[Record]:
        for lineno, line, bad, escaped in self._lines():
            if not line.strip():
                continue
            problem = None
            try:
                row = _parse_json_line(line)
                if not isinstance(row, dict):
                    problem = f"a JSON {type(row).__name__}, not an object" + (
                        " (a file holding one JSON array? radmetrics reads JSON Lines, one object per line: "
                        "jq -c '.[]' IN > OUT.jsonl)" if isinstance(row, list) else "")
                elif problem := keys_given_twice(row, self.columns_read):
                    row = {**row, **_stand_in(lineno, line)}  # its other columns (the id) kept beside the reason
            except json.JSONDecodeError as e:
                at = "" if e.msg.endswith(" at") else " at"  # "Unterminated string starting at" + position
                row, problem = None, f"not JSON ({e.msg}{at} position {e.colno})"
                if re.search(r"\}[ \t]*\r+[ \t]*\{", line):
                    # rows ended by a lone "\r" (classic Mac exports) read as one line: not a file cut mid-write,
                    # which is what the hint below said of such a file (review 29c)
                    problem += ("; the lines end in a lone \\r (old Mac line endings) and JSON Lines are split on \\n "
                                "only: convert the file, e.g. tr '\\r' '\\n' < IN > OUT")
                elif not line.endswith("\n"):  # the file's last line, cut: a file read while it was written?
                    problem += "; the last line has no newline: was the file still being written?"
                elif self.path.suffix.lower() not in JSON_SUFFIXES and not line.lstrip().startswith(("{", "[")) \
                        and ("," in line or "\t" in line):
                    problem += ("; a CSV or TSV file? radmetrics reads a file by its suffix: .csv, .tsv, else "
                                "JSON Lines")
            except (ValueError, RecursionError) as e:  # a number too long to read, nesting too deep, ...
                row, problem = None, f"not JSON ({type(e).__name__}: {str(e)[:80]})"
            if bad:
                problem = f"{NOT_UTF8} ({bad}); {ICONV_HINT}"
            elif isinstance(row, dict) and "\\u" in line and (spelled := _surrogates_spelled_out(row)) != row:
                # a JSON escape of half a UTF-16 pair ("\ud800") reads as no character and cannot be written
                # back as UTF-8: the row is kept, unscored, its text with the escape spelled out
                row, problem = spelled, LONE_SURROGATE
            if not isinstance(row, dict):
                row = _stand_in(lineno, line)
            elif bad:  # its text has U+FFFD where the bytes were: the line as read, bytes escaped (\xe9), in _raw
                row = {**row, **_stand_in(lineno, escaped)}
            elif problem is None:
                self.columns.update(dict.fromkeys(row))
            yield Record(lineno, row, problem)

    def _csv(self) -> Iterator[Record]:
        feed = _RecordLines(self._lines())
        reader = csv.reader(feed, delimiter=self.delimiter)
        header: list[str] | None = None
        header_line = rows = 0
        while True:
            feed.next_record()
            # fields as long as a JSONL line may be (the csv module's default stops at 131,072 characters); set
            # around each record only, so no other csv reader in the process sees it
            default_limit = csv.field_size_limit(CSV_FIELD_LIMIT)
            try:
                fields = next(reader)
            except StopIteration:
                if header is not None and not rows:
                    raise InputError(f"{self.path} has a header (line {header_line}) and no rows") from None
                return
            except csv.Error as e:  # a field over the size limit: the rest of the file is in doubt
                raise InputError(self._unreadable(feed, e)) from None
            finally:
                csv.field_size_limit(default_limit)
            if fields == []:
                continue  # a blank line
            if feed.last > feed.first and (feed.quotes % 2 or (header is not None and len(fields) != len(header))):
                # a record over several lines is a quoted field holding newlines; with the wrong number of fields
                # or an odd number of quotes it is an unmatched quote that swallowed the lines after it
                shape = (f"with {len(fields)} field{'s' if len(fields) != 1 else ''}, the header has {len(header)}"
                         if header is not None and len(fields) != len(header) else "with an odd number of quotes")
                if feed.ran_out:  # the file ends inside the quotes: a stray quote, or a multi-line field cut short
                    raise InputError(f"{self.path} lines {feed.first}-{feed.last} read as one record {shape}, the "
                                     f'file ending inside its quotes: an unmatched " on line {feed.first}, or a file '
                                     "cut short (an interrupted download or copy)? Fix the quotes from line "
                                     f"{feed.first} on, or get the whole file")
                raise InputError(f"{self.path} lines {feed.first}-{feed.last} read as one record {shape}: an "
                                 f'unmatched " on line {feed.first}? Fix the quotes from line {feed.first} on')
            if header is None:
                if feed.bad:
                    raise InputError(f"{self.path} line {feed.first} (the header): {NOT_UTF8} ({feed.bad[1]}); "
                                     f"{ICONV_HINT}")
                twice = [c for c, n in Counter(fields).items() if n > 1]
                if twice:
                    raise InputError(f"{self.path} line {feed.first} (the header): column"
                                     f"{'s' if len(twice) > 1 else ''} {', '.join(map(repr, twice))} "
                                     f"appear{'' if len(twice) > 1 else 's'} more than once; give each column "
                                     "its own name")
                header, header_line = fields, feed.first
                self.columns = dict.fromkeys(header)
                continue
            problem = None
            if len(fields) != len(header):
                hint = ("an unquoted comma?" if self.delimiter == "," else "a tab inside a field?") \
                    if len(fields) > len(header) else "a missing field?"
                problem = (f"{len(fields)} field{'s' if len(fields) != 1 else ''}, the header has {len(header)} "
                           f"({hint})")
            elif feed.quotes % 2 and ends_inside_quotes(feed.last_text, self.delimiter):
                # the file's last record, cut inside its last field's quotes: the right number of fields, the text
                # cut short (session 33: read as a whole candidate and scored). One line: a record over several with
                # an odd number of quotes is refused above
                problem = CUT_INSIDE_QUOTES
            if feed.bad:
                where = f" on line {feed.bad[0]}" if feed.bad[0] != feed.first else ""
                problem = f"{NOT_UTF8}{where} ({feed.bad[1]}); {ICONV_HINT}"
            # a row with the wrong number of fields stands in: which value belongs to which column is unknown
            row = dict(zip(header, fields)) if len(fields) == len(header) else _stand_in(feed.first, feed.escaped)
            if feed.bad:  # as in JSONL: the record's lines as read, bytes escaped, in _raw
                row = {**row, **_stand_in(feed.first, feed.escaped)}
            rows += 1
            yield Record(feed.first, row, problem)

    def _unreadable(self, feed: _RecordLines, error: csv.Error) -> str:
        """The one-line error for a record the csv module gives up on (reading on would start inside a field)."""
        if "field limit" in str(error) and feed.last == feed.first and not feed.quotes % 2:
            # one line with its quotes paired: a field that is simply that long, not a quote left open
            return (f"{self.path} line {feed.first}: a field is longer than {CSV_FIELD_LIMIT:,} characters, "
                    "the most a CSV field is read with: shorten it, or write the file as JSONL (no such limit)")
        if "field limit" in str(error):
            return (f"{self.path} line {feed.first}: a field runs past {CSV_FIELD_LIMIT:,} characters "
                    f"(to line {feed.last}): a quoted field that never closes, an unmatched \" on line "
                    f"{feed.first}? Fix the quotes from line {feed.first} on")
        return f"{self.path} line {feed.first}: not a CSV record ({error}); fix the file from line {feed.first} on"


class _RecordLines:
    """The lines csv.reader reads, remembering those of the record being read: its first and last line, the start
    of its text, its first line that is not UTF-8, and how many quote characters it holds."""

    def __init__(self, lines: Iterator[tuple[int, str, str | None]]):
        self.lines = lines
        self.last = 0
        self.ran_out = False  # the file ended while a record was read: the csv module gives it as it stands
        self.next_record()

    def next_record(self) -> None:
        self.first, self.escaped, self.bad, self.quotes = self.last + 1, "", None, 0
        self.last_text = ""

    def __iter__(self) -> _RecordLines:
        return self

    def __next__(self) -> str:
        try:
            lineno, text, bad, escaped = next(self.lines)
        except StopIteration:
            self.ran_out = True
            raise
        self.last = lineno
        if len(self.escaped) <= RAW_KEPT:
            self.escaped += escaped
        if bad and self.bad is None:
            self.bad = (lineno, bad)
        self.quotes += text.count('"')
        self.last_text = text
        return text


CUT_INSIDE_QUOTES = ("the file ends inside this row's quoted field, whose closing quote never comes: a file cut "
                     "short (an interrupted download or copy), or one still being written? Its text is not whole")


def ends_inside_quotes(text: str, delimiter: str = ",") -> bool:
    """Whether a CSV record's whole text (all its lines) ends inside a quoted field, as a file cut short does. A quote
    inside an unquoted field (`5" nodule`) is text, not an open field. Split into lines as the file was read (at
    "\n", "\r", "\r\n" only): `str.splitlines` also splits at a form feed, U+2028, ..., which in an unquoted
    field ended the record there, so a cut after one was read as whole (review 41a)."""
    try:
        next(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True), None)
    except csv.Error as error:
        return "unexpected end of data" in str(error)
    return False


def read_rows_strict(path: str | os.PathLike, why: str = "") -> list[dict[str, Any]]:
    """Every row of a JSONL, CSV or TSV file, read as written (Records); a record that cannot be read is an error
    naming its line, for callers that cannot leave a row out (`why` says so)."""
    return [record.row for record in read_records_strict(path, why)]


def read_records_strict(path: str | os.PathLike, why: str = "") -> list[Record]:
    """`read_rows_strict`, each row with the input line it starts on (`Record.line`), for errors that name it."""
    path = Path(path)
    check_text_file(path, sniff=None)
    records = []
    for record in Records(path):
        if record.problem:
            raise InputError(f"{path} line {record.line}: {record.problem}{why}")
        records.append(record)
    return records


class _KeysTwice(dict):
    """A JSON object that named some key more than once with different values: json keeps the last silently."""

    twice: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    row = dict(pairs)
    if len(row) == len(pairs):
        return row
    first: dict[str, Any] = {}
    differ = [k for k, v in pairs if not _same(first.setdefault(k, v), v)]
    if not differ:  # the same value again: nothing to choose between
        return row
    marked = _KeysTwice(row)
    marked.twice = tuple(dict.fromkeys(differ))
    return marked


#: strict=False: a raw tab or control character inside a string is kept as written, not a reason to drop it
_JSON_LINE = json.JSONDecoder(strict=False, object_pairs_hook=_object)


def _parse_json_line(line: str) -> Any:
    return _JSON_LINE.decode(line)


def _same(a: Any, b: Any) -> bool:
    return a == b or repr(a) == repr(b)  # NaN given twice is the same NaN


def keys_given_twice(row: Any, columns_read: set[str] | None = None) -> str | None:
    """The problem of a JSON object that gives a key the run reads twice with different values (which one is meant
    is unknown; json would keep the last without a word), or None. ``columns_read``: the columns the run reads, where
    a reader knows them (a key it does not read cannot change a score, review 16); None: any key (review 17: a
    reader that picks its columns later, e.g. compare's --candidate-column, must not take the last value)."""
    if not isinstance(row, _KeysTwice):
        return None
    twice = [k for k in row.twice if columns_read is None or k in columns_read]
    if not twice:
        return None
    names = ", ".join(map(repr, twice))
    return (f"key{'s' if len(twice) > 1 else ''} {names} given twice with different values: which is meant is "
            "unknown; keep one")


def read_pairs(path: str | os.PathLike, reference_column: str | None = None,
               candidate_column: str | None = None) -> PairFile:
    """Every record of PATH (Records), the unreadable ones kept as stand-ins in `bad_rows`; the columns are
    picked by alias (or as given)."""
    path = Path(path)
    check_text_file(path, sniff=None)
    records = Records(path)
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    bad: dict[int, str] = {}
    for record in records:
        if record.problem:
            bad[len(rows)] = f"line {record.line}: {record.problem}"
        rows.append(record.row)
        lines.append(record.line)
    if bad and not records.columns:  # not one row read: say why the first one was not, not "no columns"
        raise InputError(f"{path}: no row could be read; the first, {next(iter(bad.values()))}")
    ref, cand, unused = pick_pair_columns(records.columns, reference_column, candidate_column, path)
    return PairFile(rows, ref, cand, bad, lines, unused)


def read_references(path: str | os.PathLike, column: str | None = None) -> list[str]:
    """Reports of one column (a reference alias by default) from JSONL or CSV; empty ones are dropped."""
    path = Path(path)
    rows = read_rows_strict(path, why="; every line of a references file must be a JSON object")
    columns = list(dict.fromkeys(k for r in rows for k in r))
    name = _pick(columns, REFERENCE_ALIASES, column, "reference", path)
    return [r[name] for r in rows if isinstance(r.get(name), str) and r[name].strip()]


#: results formats, by the output file's extension
OUTPUT_FORMATS = {".jsonl": "JSON lines", ".csv": "CSV", ".parquet": "Parquet"}


def check_output_path(path: str | os.PathLike) -> str:
    """The results format the extension names; anything else is refused before any work is done (a
    `.parquet` file must not silently hold JSON lines)."""
    suffix = Path(path).suffix.lower()
    if Path(path).name.lower().endswith((".part.json", ".summary.json")):  # another output's stamp or summary
        raise InputError(f"--output {path}: a name radmetrics gives the side files of another output "
                         "(OUTPUT.part.json, OUTPUT.summary.json); choose another name")
    if suffix == ".json":  # review 12: it held JSON lines, which json.load refuses
        raise InputError(f"--output {path}: radmetrics writes one JSON object per row (JSON Lines), not one JSON "
                         f"document: name it {Path(path).with_suffix('.jsonl').name} (or use .csv / .parquet)")
    if suffix not in OUTPUT_FORMATS:
        raise InputError(f"--output {path}: unknown results format '{suffix or '(no extension)'}'; use one of "
                         f"{', '.join(sorted(OUTPUT_FORMATS))}")
    if suffix == ".parquet":
        from radmetrics.errors import optional_import

        optional_import("pyarrow", "evaluate", "to write .parquet results")
    return suffix


def check_output_safe(output: str | os.PathLike, *inputs: str | os.PathLike | None,
                      cache: Sequence[str | os.PathLike] = ()) -> None:
    """Refuse outputs that would destroy something: the input itself (as OUTPUT or any file a run writes or
    removes beside it: an interrupted run's OUTPUT.part fed back in was emptied and deleted), the response cache's
    files (``cache``: every judgment of every earlier run was replaced by the results, review 18), or a symlink
    (written through, a planted link at out.jsonl.summary.json once overwrote its target). One-line InputError."""
    output = Path(output)
    check_cache_is_no_input(cache, inputs)
    kept = [(Path(p), "the input") for p in inputs if p is not None] + [(Path(p), "the response cache") for p in cache]
    for candidate in run_files(output):
        if candidate.is_symlink():
            raise InputError(f"{candidate} is a symbolic link; radmetrics does not write through links "
                             "(remove it or give another --output)")
        if candidate.is_dir():
            raise InputError(f"{candidate} is a folder; --output must be a file path")
        for source, what in kept:
            if same_path(candidate, source):
                raise InputError(f"--output {output} would overwrite {what} {source}; give another --output")


def check_cache_is_no_input(cache: Sequence[str | os.PathLike],
                            inputs: Sequence[str | os.PathLike | None]) -> None:
    """Refuse a response cache that is one of the run's input files (a slip between two file arguments): the
    cache's own error would advise deleting the file. One-line InputError (review 33)."""
    for cache_file in cache:
        for source in (Path(p) for p in inputs if p is not None):
            if same_path(Path(cache_file), source):
                raise InputError(f"--cache {cache_file} is the input {source}: the response cache needs a file of its "
                                 "own (e.g. --cache judgments.sqlite), or --no-cache")


def same_path(a: Path, b: Path) -> bool:
    """The same file (a hard link, another spelling), or the same path where neither exists yet."""
    return (a.exists() and b.exists() and os.path.samefile(a, b)) or a.resolve() == b.resolve()


def strict_json_ready(value: Any) -> Any:
    """A copy with NaN/±inf replaced by None, so json.dumps(..., allow_nan=False) writes strict JSON (results rows,
    reports)."""
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {k: strict_json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json_ready(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        try:
            return strict_json_ready(value.item())
        except (TypeError, ValueError):
            return value
    return value


def summary_path(output: str | os.PathLike) -> Path:
    return Path(f"{os.fspath(output)}.summary.json")


def part_paths(output: str | os.PathLike) -> tuple[Path, Path]:
    """The rows a run has written so far (OUTPUT.part) and the run's identity stamp (OUTPUT.part.json)."""
    return Path(f"{os.fspath(output)}.part"), Path(f"{os.fspath(output)}.part.json")


def run_files(output: str | os.PathLike) -> tuple[Path, ...]:
    """Every file a scoring run writes, truncates or removes for OUTPUT."""
    return (Path(output), summary_path(output), *part_paths(output))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_tmp(path: str | os.PathLike) -> list[Path]:
    """Delete temp files a killed run left beside PATH (`.<name>.<pid>.<random>.tmp` whose process is gone)."""
    path = Path(path)
    removed = []
    for tmp in path.parent.glob(f".{path.name}.*.tmp"):
        pid = tmp.name[len(path.name) + 2 :].split(".", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)) and not tmp.is_symlink():
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def remove_abandoned_staging(folder: Path, prefix: str, suffix: str = "") -> None:
    """Staging folders ``<prefix><pid><suffix>`` in FOLDER whose writing process is gone (a kill left them); a
    link, or a folder of a live process, is left alone."""
    import glob
    import shutil

    for staging in folder.glob(f"{glob.escape(prefix)}*{glob.escape(suffix)}"):
        pid = staging.name[len(prefix) : len(staging.name) - len(suffix)]
        if pid.isdigit() and not _pid_alive(int(pid)) and staging.is_dir() and not staging.is_symlink():
            shutil.rmtree(staging, ignore_errors=True)


@contextmanager
def staged_folder(output: str | os.PathLike) -> Iterator[Path]:
    """Write a folder (a dataset) whole: the block writes into a staging folder beside OUTPUT
    (`.<name>.<pid>.staging`), which then becomes OUTPUT in one rename when OUTPUT is missing or empty, or is
    swapped with OUTPUT in one atomic exchange when OUTPUT holds an earlier dataset and nothing else (--overwrite),
    or has its files moved in one by one (each rename atomic, the card last) when OUTPUT also holds other files,
    which are left as they were. A kill or Ctrl-C while writing leaves OUTPUT as it was, so the same command runs again (review 28: a kill during
    save_to_disk left a folder with data and no card, or half a shard, which the rerun refused as not empty). An
    error or interrupt removes the staging folder; one a kill left is removed by the next run for OUTPUT."""
    import shutil

    out = Path(output).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_abandoned_staging(out.parent, f".{out.name}.", ".staging")
    staging = out.parent / f".{out.name}.{os.getpid()}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        yield staging
        if out.is_dir() and not out.is_symlink() and not any(out.iterdir()):
            out.rmdir()
        if not out.exists() and not out.is_symlink():
            os.rename(staging, out)
            return
        if _holds_only_a_dataset(out) and _exchanged(staging, out):
            return  # the old dataset is now at `staging`, removed below
        for entry in sorted(staging.iterdir(), key=lambda p: p.name == "README.md"):  # the card last
            target = out / entry.name
            if entry.is_dir() and target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)  # a DatasetDict's split folder: replaced whole
            os.replace(entry, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


#: what `Dataset.save_to_disk` / `DatasetDict.save_to_disk` and our card write into a dataset folder
_DATASET_FILE = re.compile(r"(state|dataset_info|dataset_dict)\.json|README\.md|data-\d+-of-\d+\.arrow")


def _holds_only_a_dataset(folder: Path, depth: int = 0) -> bool:
    """True when FOLDER holds nothing but a saved dataset's files (a DatasetDict's split folders included): what
    --overwrite may replace whole. A folder with anything else in it (the user's notes) has its files replaced one
    by one instead, and the rest left as it was."""
    for entry in folder.iterdir():
        if entry.is_symlink():
            return False
        if entry.is_dir():
            if depth or not _holds_only_a_dataset(entry, depth + 1):
                return False
        elif not _DATASET_FILE.fullmatch(entry.name):
            return False
    return True


def _exchanged(a: Path, b: Path) -> bool:
    """Swap two folders in one atomic step (Linux renameat2 RENAME_EXCHANGE): a reader or a kill sees the old
    dataset or the new one whole, never a mix of their files or the old one's extra shards beside the new one.
    False where the system or file system has no such call; the caller then moves files one by one."""
    import ctypes

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):  # glibc < 2.28, musl
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _file_stamps(path: Path) -> dict[str, tuple[int, int, int]]:
    """Each regular file at or under PATH (links not followed) -> (inode, size, mtime): what tells a rewrite."""
    if path.is_symlink() or not path.exists():
        return {}
    found = [str(path)] if path.is_file() else [os.path.join(top, name) for top, _, names in os.walk(path)
                                                  for name in names]
    stamps = {}
    for name in found:
        st = os.lstat(name)
        if stat.S_ISREG(st.st_mode):
            stamps[name] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return stamps


@contextmanager
def owner_only(path: str | os.PathLike) -> Iterator[None]:
    """Outputs written inside are readable by their owner only (files 0600, folders 0700), as `score`'s results and
    the response cache: they hold report texts and judge answers (review 24: other commands' outputs followed the
    umask). PATH is the output file or folder: what is created while inside is private from its first byte (umask
    077); a file already at or under PATH that the block rewrites in place is narrowed at the end; the rest of a
    folder is left as it was. Only around writing: the umask is the process's."""
    path = Path(path)
    before = _file_stamps(path)
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)
        for name, stamp in _file_stamps(path).items():
            if before.get(name) not in (None, stamp):  # rewritten in place: it kept its old mode
                os.chmod(name, stat.S_IMODE(os.lstat(name).st_mode) & 0o700)


class AtomicFile:
    """Write PATH all at once: a temp file beside it (created O_EXCL, named with our pid so a later run can
    clean it up after a kill), fsync, then rename over PATH. The rename replaces a symlink at PATH instead of
    writing through it; a reader never sees half a file.

    >>> # with AtomicFile(out) as fh: fh.write(...)        # committed on success, removed on error
    >>> # part = AtomicFile(out).open(); ...; part.commit() # for streaming writers (append, then rename)
    """

    def __init__(self, path: str | os.PathLike, binary: bool = False):
        self.path = Path(path)
        self.binary = binary
        self.tmp: Path | None = None
        self.fh = None

    def open(self) -> AtomicFile:
        if self.path.is_symlink():
            raise InputError(f"{self.path} is a symbolic link; radmetrics does not write through links")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        clean_stale_tmp(self.path)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.{os.getpid()}.", suffix=".tmp")
        self.tmp = Path(tmp)
        self.fh = os.fdopen(fd, "wb") if self.binary else os.fdopen(fd, "w", encoding="utf-8", newline="")
        return self

    def write(self, text: str) -> None:
        self.fh.write(text)

    def close_tmp(self) -> None:
        """Flush and close the temp file (a multi-file commit renames several prepared temps in a row)."""
        if self.fh is not None and not self.fh.closed:
            self.fh.flush()
            os.fsync(self.fh.fileno())
            self.fh.close()

    def commit(self) -> None:
        try:
            self.close_tmp()
            os.replace(self.tmp, self.path)
        except BaseException:  # a full disk at the flush/fsync, a failed rename: the temp goes, PATH is untouched
            self.discard()
            raise
        self.tmp = None

    def discard(self) -> None:
        if self.fh is not None and not self.fh.closed:
            with suppress(OSError):  # its flush on close fails again on a full disk; the temp goes anyway
                self.fh.close()
        if self.tmp is not None:
            self.tmp.unlink(missing_ok=True)
            self.tmp = None

    def __enter__(self):
        return self.open().fh

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


def _write_table(fh, path: Path, rows: list[dict[str, Any]]) -> None:
    if path.suffix.lower() == ".parquet":
        _write_parquet(fh, rows)
    elif path.suffix.lower() == ".csv":
        flat = [{k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in r.items()} for r in rows]
        fields = list(dict.fromkeys(k for r in flat for k in r))
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(flat)
    else:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")


def write_rows(path: str | os.PathLike, rows: list[dict[str, Any]]) -> None:
    """Write atomically (temp file + rename) so a killed run never leaves half a results file.
    The format follows the extension (check_output_path)."""
    path = Path(path)
    with AtomicFile(path, binary=check_output_path(path) == ".parquet") as fh:
        _write_table(fh, path, rows)


def write_results(path: str | os.PathLike, rows: list[dict[str, Any]], summary: dict[str, Any]) -> Path:
    """Results and their summary as one unit: both prepared as temp files, the old summary removed, then the
    results and the summary renamed into place. A kill at any point leaves either the old pair, new results
    without a summary, or the new pair — never new results beside an old summary (both carry `run_id`)."""
    path = Path(path)
    results = AtomicFile(path, binary=check_output_path(path) == ".parquet").open()
    corpus = AtomicFile(summary_path(path)).open()
    try:
        _write_table(results.fh, path, rows)
        json.dump(summary, corpus.fh, indent=2, default=str, ensure_ascii=False)
        results.close_tmp()
        corpus.close_tmp()
        summary_path(path).unlink(missing_ok=True)
        results.commit()
        corpus.commit()
    except BaseException:
        results.discard()
        corpus.discard()
        raise
    return summary_path(path)


def _write_parquet(fh, rows: list[dict[str, Any]]) -> None:
    write_parquet_batches(fh, lambda: (rows[i:i + PARQUET_BATCH_ROWS] for i in range(0, len(rows), PARQUET_BATCH_ROWS)))


#: rows converted to Arrow at a time: bounds the writer's memory whatever the number of rows
PARQUET_BATCH_ROWS = 4096


def write_parquet_batches(fh, batches) -> None:
    """Parquet through pyarrow, one record batch at a time (memory does not grow with the rows); nested fields
    (details, fingerprint, counts) as JSON text, so that rows whose details differ in shape share one schema.

    ``batches()`` returns a fresh iterator of row lists each call: pass 1 finds every column and the kinds of value
    it holds, pass 2 writes each batch with one type per column: int and float -> double; a column whose values
    mix kinds no Parquet type holds together (ids ``1`` and ``"b"``, a ``true`` among texts, an int past 64 bits)
    -> text, each non-text value as its JSON (``1`` -> ``"1"``); only nulls -> null. Input columns come as the
    user wrote them: such a mix crashed the writer after every row was judged (review 18)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    kinds: dict[str, set[str]] = {}
    for rows in batches():
        for row in rows:
            for key, value in row.items():
                seen = kinds.setdefault(key, set())
                if value is not None:
                    seen.add(_parquet_kind(value))
    if not kinds:
        pq.write_table(pa.table({}), fh)
        return
    schema = pa.schema([(key, _parquet_type(pa, seen)) for key, seen in kinds.items()])
    as_text = {field.name for field in schema if field.type == pa.string()}

    def cell(key: str, value: Any) -> Any:
        if key in as_text and value is not None and not isinstance(value, str):
            return json.dumps(value, ensure_ascii=False, default=str)
        return value

    with pq.ParquetWriter(fh, schema) as writer:
        for rows in batches():
            writer.write_table(pa.Table.from_pylist(
                [{key: cell(key, row.get(key)) for key in kinds} for row in rows], schema=schema))


def _parquet_type(pa, kinds: set[str]):
    """One column's type from the kinds of its non-null values (`_parquet_kind`)."""
    if not kinds:
        return pa.null()
    if kinds == {"int", "float"}:
        return pa.float64()
    single = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    return single[next(iter(kinds))] if len(kinds) == 1 and next(iter(kinds)) in single else pa.string()


def _parquet_kind(value: Any) -> str:
    """The Parquet type family a value belongs to (bool before int: True is an int to Python)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int" if -(2**63) <= value < 2**63 else "big"
    if isinstance(value, float):
        return "float"
    return "str"  # text, and nested values (written as their JSON text)


def check_new_folder(output: str | os.PathLike, overwrite: bool, holds: str) -> None:
    """A folder to be written is new or empty unless --overwrite: what it holds would be replaced without a word
    (a dataset and its card in `data convert` / `transform`, a trained judge in `train`)."""
    folder = Path(output).expanduser()
    held = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    if held and not overwrite:
        shown = ", ".join(held[:4]) + (f" and {len(held) - 4} more" if len(held) > 4 else "")
        raise InputError(f"--output {output} is not empty ({shown}): writing there would replace the {holds} it "
                         "holds. Choose a new folder, or pass --overwrite")


def check_report_lists(references: Any, candidates: Any, names: tuple[str, str] = ("references", "candidates")) -> None:
    """One report given where a list of reports is expected: a str is a sequence, and each of its characters was
    judged as a report (review 27, M2). None, a number or a generator was "TypeError: object of type 'NoneType' has
    no len()" from deep inside, naming neither argument (review 39b): each is refused here, naming it."""
    for value, name in zip((references, candidates), names):
        if isinstance(value, (str, bytes)):
            raise InputError(f"{name} is one {type(value).__name__} ({value[:40]!r}), not a list of reports: pass "
                             f"[{name[:-1]}] for one report, or a list")
        if not (hasattr(value, "__len__") and hasattr(value, "__getitem__")):
            shown = "None" if value is None else type(value).__name__
            hint = " (list(...) of it)" if hasattr(value, "__next__") else ""  # a generator, an iterator
            raise InputError(f"{name} is {shown}, not a list of reports: pass a list{hint}, one report per row")
