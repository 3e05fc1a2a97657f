"""What radmetrics reads is never altered: JSONL split on "\\n" only, CSV through the csv module (quoted newlines
kept), BOM dropped, binary files refused with one line. The real CLI scores against a real local
OpenAI-compatible server and its own output is fed back in (results in RELIABILITY.md)."""
from __future__ import annotations

import csv
import gzip
import io
import json
import os
import subprocess
import sys

import pytest
from conftest import REPO
from fake_judge import analysis_for
from openai_server import FakeOpenAIServer

import radmetrics
from radmetrics.errors import InputError
from radmetrics.io import Records

#: every character str.splitlines() breaks on, every C0/C1 control character, DEL, BOM inside text
SEPARATORS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
CONTROLS = [chr(c) for c in range(0x20)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xa0)] + ["\ufeff"]


def hostile_rows():
    rows = []
    for i, ch in enumerate(dict.fromkeys(SEPARATORS + CONTROLS)):
        rows.append({"id": i, "reference": f"left effusion{ch}stable heart {i}",
                     "candidate": f"left effusion{ch}new nodule {i}"})
    return rows


def cli(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "radmetrics.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, env=os.environ.copy())


def score(server, src, out, tmp_path, *extra):
    return cli("score", "-m", "green", "-i", src, "-o", out, "--backend", "openai", "--base-url", server.base_url,
               "--judge", "judge-model", "--cache", tmp_path / "cache.sqlite", "--no-progress", *extra)


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def read_csv(path):
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_own_output_round_trips_every_line_separator_and_control_character(tmp_path):
    rows = hostile_rows()
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    with FakeOpenAIServer(analysis_for) as server:
        first = score(server, src, tmp_path / "out.jsonl", tmp_path)
        assert first.returncode == 0, first.stderr[-3000:]
        again = score(server, tmp_path / "out.jsonl", tmp_path / "again.jsonl", tmp_path)  # own output as input
        assert again.returncode == 0, again.stderr[-3000:]
        as_csv = score(server, src, tmp_path / "out.csv", tmp_path)
        assert as_csv.returncode == 0, as_csv.stderr[-3000:]
        from_csv = score(server, tmp_path / "out.csv", tmp_path / "from_csv.jsonl", tmp_path)
        assert from_csv.returncode == 0, from_csv.stderr[-3000:]
    for name in ("out.jsonl", "again.jsonl", "from_csv.jsonl"):
        got = read_jsonl(tmp_path / name)
        assert len(got) == len(rows), name
        assert [g["reference"] for g in got] == [r["reference"] for r in rows], name
        assert [g["candidate"] for g in got] == [r["candidate"] for r in rows], name
        assert all(g["parsed"] for g in got), name
    got = read_csv(tmp_path / "out.csv")
    assert [g["reference"] for g in got] == [r["reference"] for r in rows]
    assert [g["candidate"] for g in got] == [r["candidate"] for r in rows]
    assert f"Wrote {len(rows)} rows from {tmp_path / 'out.csv'}: {len(rows)} scored, 0 unscored" in from_csv.stderr
    print(f"\n{len(rows)} rows, {len(SEPARATORS)} line separators + {len(CONTROLS)} control characters: "
          "jsonl -> jsonl -> jsonl and jsonl -> csv -> jsonl, every character kept")


def test_csv_keeps_quoted_newlines_and_bom_is_dropped(tmp_path):
    buf = io.StringIO(newline="")
    writer = csv.writer(buf)
    writer.writerow(["reference", "candidate"])
    writer.writerow(["FINDINGS:\nleft effusion.\r\n\nIMPRESSION:\u2028effusion", "left effusion"])
    writer.writerow(["heart normal", "heart\x0cnormal"])
    src = tmp_path / "excel.csv"
    src.write_bytes(b"\xef\xbb\xbf" + buf.getvalue().encode())
    jsonl = tmp_path / "bom.jsonl"
    jsonl.write_bytes(b"\xef\xbb\xbf" + b"".join(json.dumps(r).encode() + b"\n" for r in [
        {"reference": "a b", "candidate": "a"}, {"reference": "c d", "candidate": "c"}]))
    with FakeOpenAIServer(analysis_for) as server:
        out = score(server, src, tmp_path / "o.jsonl", tmp_path)
        assert out.returncode == 0, out.stderr[-3000:]
        assert "Wrote 2 rows" in out.stderr and "reference = 'reference'" in out.stderr
        out2 = score(server, jsonl, tmp_path / "o2.jsonl", tmp_path)
        assert out2.returncode == 0 and "Wrote 2 rows" in out2.stderr, out2.stderr[-3000:]
    got = read_jsonl(tmp_path / "o.jsonl")
    assert got[0]["reference"] == "FINDINGS:\nleft effusion.\r\n\nIMPRESSION:\u2028effusion"
    assert got[1]["candidate"] == "heart\x0cnormal" and all(g["parsed"] for g in got)
    got2 = read_jsonl(tmp_path / "o2.jsonl")
    assert [g["reference"] for g in got2] == ["a b", "c d"] and all(g["parsed"] for g in got2)  # row 0 kept


def judged_pairs(server):
    """The (reference, candidate) pairs the judge server was asked about, read back from its requests."""
    green = radmetrics.get_scoring_system("green")
    prompts = [r["body"]["messages"][-1]["content"] if "messages" in r["body"] else r["body"]["prompt"]
               for r in server.requests]
    return [green.pair_in_prompt(p) for p in prompts]


def test_csv_rows_with_more_or_fewer_fields_than_the_header_are_unscored_never_shifted(tmp_path):
    """An unquoted comma used to shift the columns (reference 'Small effusion', candidate ' left side.', the real
    candidate dropped) and the row was scored. Now it is an unscored row naming its line, with its text kept;
    the other rows, the quoted comma and a record over two lines included, are scored as written."""
    src = tmp_path / "ragged.csv"
    src.write_text("id,reference,candidate\n"
                   "r1,Small effusion, left side.,No effusion.\n"     # line 2: an unquoted comma
                   'r2,"Small effusion, left side.",No effusion.\n'   # line 3: the same, quoted
                   'r3,"FINDINGS:\nclear lungs.",Clear lungs.\n'     # lines 4-5: one record
                   "r4,Clear lungs.\n"                                # line 6: a field missing
                   "r5,Clear lungs.,Clear lungs.\n", encoding="utf-8")
    with FakeOpenAIServer(analysis_for) as server:
        out = score(server, src, tmp_path / "o.jsonl", tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = read_jsonl(tmp_path / "o.jsonl")
    assert [r.get("id") for r in rows] == [None, "r2", "r3", None, "r5"]  # every row, in order
    assert rows[0]["reason"] == "input line 2: 4 fields, the header has 3 (an unquoted comma?)"
    assert rows[0]["_line"] == 2 and rows[0]["_raw"] == "r1,Small effusion, left side.,No effusion."
    assert "reference" not in rows[0] and "candidate" not in rows[0]  # no shifted value passes for a report
    assert rows[3]["reason"] == "input line 6: 2 fields, the header has 3 (a missing field?)"
    assert rows[3]["_raw"] == "r4,Clear lungs." and rows[0]["green"] is None and rows[3]["green"] is None
    assert rows[1]["reference"] == "Small effusion, left side." and rows[2]["reference"] == "FINDINGS:\nclear lungs."
    assert all(rows[i]["parsed"] and rows[i]["green"] is not None for i in (1, 2, 4))
    assert sorted(judged_pairs(server)) == sorted([("Small effusion, left side.", "No effusion."),
                                                   ("FINDINGS: clear lungs.", "Clear lungs."),  # GREEN's spacing
                                                   ("Clear lungs.", "Clear lungs.")])
    summary = json.loads((tmp_path / "o.jsonl.summary.json").read_text())["summary"]
    assert summary["num_scored"] == 3 and summary["unscored_reasons"] == {
        "4 fields, the header has 3 (an unquoted comma?)": 1, "2 fields, the header has 3 (a missing field?)": 1}


def score_fails(src, tmp_path):
    """`radmetrics score` on SRC against a live judge: the input is what must fail, before any row is judged."""
    with FakeOpenAIServer(analysis_for) as server:
        out = score(server, src, tmp_path / "o.jsonl", tmp_path)
    assert out.returncode == 2, out.stderr[-3000:]
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert not server.requests and not (tmp_path / "o.jsonl").exists()
    return out.stderr.strip()


def rows_with_a_stray_quote(n, quoted_row=2, pad=""):
    lines = ["id,reference,candidate"] + [f"q{i},ref {i}{pad},cand {i}" for i in range(n)]
    lines[1 + quoted_row] = f'q{quoted_row},"Unmatched quote in the reference,candidate text'
    return "\n".join(lines) + "\n"


def test_csv_unmatched_quote_that_swallows_rows_is_an_error_naming_the_line(tmp_path):
    """A stray quote on line 4 used to swallow rows q3-q7 into one unscored stand-in ('input line 4: 2 fields...'):
    3 rows out of 8, no warning. Now the run stops before judging, naming the lines and the fix."""
    src = tmp_path / "stray.csv"
    src.write_text(rows_with_a_stray_quote(8), encoding="utf-8")
    assert score_fails(src, tmp_path) == (
        f'Error: {src} lines 4-9 read as one record with 2 fields, the header has 3, the file ending inside its '
        'quotes: an unmatched " on line 4, or a file cut short (an interrupted download or copy)? Fix the quotes '
        "from line 4 on, or get the whole file")


def test_csv_unmatched_quote_past_the_field_limit_stops_never_resumes_inside_the_field(tmp_path):
    """In 3,000 rows the swallowed text outgrew the csv module's field limit: 1,581 rows were lost behind one
    stand-in and the reader resumed inside the quoted field, inventing rows out of report text. Now: one error."""
    src = tmp_path / "stray3000.csv"
    src.write_text(rows_with_a_stray_quote(3000, pad=" " + "x" * 6000), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        list(Records(src))
    assert str(caught.value) == (
        f"{src} line 4: a field runs past 16,777,216 characters (to line 2789): a quoted field that never closes, "
        'an unmatched " on line 4? Fix the quotes from line 4 on')
    assert score_fails(src, tmp_path) == f"Error: {caught.value}"


@pytest.mark.parametrize("quoted", [True, False])
def test_csv_long_fields_are_read_as_jsonl_reads_them_and_only_past_the_limit_refused(tmp_path, quoted):
    """Review 10 (F23) / 11 (R3): a 200k-character report on one line (past the csv module's default limit of
    131,072) stopped the run as "an unmatched quote"; the same row as JSONL was scored. Now it is read; a field
    past radmetrics' own limit (16 Mi characters) is named as too long, not blamed on a quote."""
    import csv

    def write(text: str):
        field = chr(34) + text + chr(34) if quoted else text
        src.write_text(f"id,reference,candidate\nq0,a,b\nq1,a,{field}\nq2,a,b\n", encoding="utf-8")

    src = tmp_path / "long.csv"
    write("word " * 40_000)
    records = list(Records(src))
    assert [r.row["id"] for r in records] == ["q0", "q1", "q2"] and records[1].row["candidate"] == "word " * 40_000
    assert all(r.problem is None for r in records)
    assert csv.field_size_limit() == 131_072  # the limit is raised around each record only
    write("x" * (16 * 2**20 + 1))
    with pytest.raises(InputError) as caught:
        list(Records(src))
    assert str(caught.value) == (f"{src} line 3: a field is longer than 16,777,216 characters, the most a CSV "
                                 "field is read with: shorten it, or write the file as JSONL (no such limit)")
    assert score_fails(src, tmp_path) == f"Error: {caught.value}"


TO_THE_END = (', the file ending inside its quotes: an unmatched " on line 3, or a file cut short (an interrupted '
              "download or copy)? Fix the quotes from line 3 on, or get the whole file")


@pytest.mark.parametrize("text,expected", [
    pytest.param("id,reference,candidate\nq0,a,b\nq1,a,\"cand\nq2,a,b\nq3,a,b\n", TO_THE_END, id="to-end-of-file"),
    pytest.param("id,reference,candidate\nq0,a,b\nq1,a,\"cand\nq2,a,b\nq3,a,\"c d\"\nq4,a,b\n",
                 ': an unmatched " on line 3? Fix the quotes from line 3 on', id="closed-by-a-later-quote"),
    # a record whose quoted field holds newlines, the file cut inside it: not only a stray quote can end so (the
    # refusal said "an unmatched quote" alone; session 34's note)
    pytest.param('id,reference,candidate\nq0,a,b\nq1,a,"finding one\nfinding two\nfinding thr', TO_THE_END,
                 id="cut-inside-a-multi-line-field"),
])
def test_csv_unmatched_quote_in_the_last_column_is_an_error_though_the_field_count_fits(tmp_path, text, expected):
    """A stray quote in the last column swallows the next lines into the candidate with the right field count:
    the candidate 'cand\\nq2,a,b\\n...' used to be judged. A record over several lines with an odd number of
    quotes cannot be a correctly quoted one."""
    src = tmp_path / "last.csv"
    src.write_text(text, encoding="utf-8")
    assert score_fails(src, tmp_path) == f"Error: {src} lines 3-5 read as one record with an odd number of quotes{expected}"


@pytest.mark.parametrize("name,header,expected", [
    ("dup.csv", "id,reference,candidate,candidate", "column 'candidate' appears more than once"),
    ("dup.tsv", "id\treference\tcandidate\tid\treference", "columns 'id', 'reference' appear more than once"),
])
def test_duplicate_column_names_are_an_error(tmp_path, name, header, expected):
    """`id,reference,candidate,candidate` used to score the last candidate column and drop the first one's text."""
    src = tmp_path / name
    sep = "\t" if name.endswith(".tsv") else ","
    src.write_text(header + "\n" + sep.join(["r1", "Heart normal.", "first", "second", "x"][:header.count(sep) + 1])
                   + "\n", encoding="utf-8")
    assert score_fails(src, tmp_path) == f"Error: {src} line 1 (the header): {expected}; give each column its own name"


def test_csv_with_a_header_and_no_rows_is_an_error(tmp_path):
    """It used to print 'Scored 0 rows', write green: null and exit 0."""
    src = tmp_path / "header_only.csv"
    src.write_text("id,reference,candidate\n\n", encoding="utf-8")
    assert score_fails(src, tmp_path) == f"Error: {src} has a header (line 1) and no rows"


def test_missing_value_markers_are_missing_reports_not_text_to_judge(tmp_path):
    """Review 11 (R5): R's write.csv writes NA, pandas' astype(str) writes nan, other tools None / N/A; such cells
    were sent to the judge as the report and scored. Now their rows are unscored, naming the marker; an empty
    candidate is still judged (the generator's failure, as the official GREEN code scores it)."""
    src = tmp_path / "markers.csv"
    src.write_text("id,reference,candidate\nr1,NaN,Clear lungs.\nr2,Clear lungs.,NA\nr3,None,nan\n"
                   "r4,Clear lungs., N/A \nr5,Clear lungs.,\nr6,Small effusion.,No effusion.\n", encoding="utf-8")
    with FakeOpenAIServer(analysis_for) as server:
        out = score(server, src, tmp_path / "o.jsonl", tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = {r["id"]: r for r in read_jsonl(tmp_path / "o.jsonl")}
    assert rows["r1"]["reason"] == "input line 2: reference is 'NaN', a missing-value marker, not a report"
    assert rows["r2"]["reason"] == "input line 3: candidate is 'NA', a missing-value marker, not a report"
    assert rows["r3"]["reason"].startswith("input line 4: reference is 'None'")
    assert rows["r4"]["reason"] == "input line 5: candidate is 'N/A', a missing-value marker, not a report"
    assert all(rows[k]["green"] is None for k in ("r1", "r2", "r3", "r4"))
    assert rows["r5"]["green"] is not None and rows["r6"]["green"] is not None
    assert sorted(judged_pairs(server)) == [("Clear lungs.", ""), ("Small effusion.", "No effusion.")]
    assert "Wrote 6 rows" in out.stderr and "2 scored, 4 unscored" in out.stderr


def test_an_input_nan_is_echoed_as_strict_json_and_the_run_still_resumes(tmp_path):
    """Review 11 (R5): an input column holding JSON NaN / Infinity (Python's json reads them) was echoed into
    results.jsonl as bare NaN, which strict parsers refuse. Now null; a continued run still matches its rows."""
    src = tmp_path / "nan.jsonl"
    src.write_text("".join(f'{{"id": "r{i}", "reference": "Small effusion {i}.", "candidate": "No effusion.", '
                           f'"site_weight": {v}}}\n' for i, v in enumerate(["NaN", "Infinity", "1.5"])),
                   encoding="utf-8")
    out = tmp_path / "o.jsonl"
    with FakeOpenAIServer(analysis_for) as server:
        assert score(server, src, out, tmp_path).returncode == 0
        for line in out.read_text().splitlines():
            json.loads(line, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
        assert [json.loads(x)["site_weight"] for x in out.read_text().splitlines()] == [None, None, 1.5]
    # an interrupted run (Ctrl-C once its part file holds two rows, NaN among them) is continued, not refused
    # as "input line ... differs from the row an interrupted run wrote for it"
    import signal
    import time

    import threading

    out2 = tmp_path / "o2.jsonl"
    interrupted = threading.Event()

    def answer(prompt):  # the third row waits for the interrupt: the run cannot finish first on a slow machine
        if "Small effusion 2." in prompt:
            interrupted.wait(60)
        return analysis_for(prompt)

    with FakeOpenAIServer(answer) as server:
        args = [sys.executable, "-m", "radmetrics.cli", "score", "-m", "green", "-i", str(src), "-o", str(out2),
                "--backend", "openai", "--base-url", server.base_url, "--judge", "judge-model", "--no-cache",
                "--no-progress", "--chunk-rows", "1", "--judge-option", "concurrency=1"]
        # Ctrl-C as a terminal delivers it (a background job, CI's, starts with SIGINT ignored)
        from test_reliability_faults import with_ctrl_c

        proc = subprocess.Popen(with_ctrl_c(args), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        part, deadline = tmp_path / "o2.jsonl.part", time.time() + 60
        while (not part.exists() or part.read_text().count("\n") < 2) and time.time() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
        interrupted.set()
        again = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Continued an interrupted run: 2 rows were already written" in again.stderr, again.stderr[-3000:]
    assert [json.loads(x)["site_weight"] for x in out2.read_text().splitlines()] == [None, None, 1.5]


def test_rows_that_are_not_utf8_are_unscored_never_judged_altered(tmp_path):
    """A Latin-1 export (a few bad bytes, so not refused as binary) used to be judged with every accented letter
    turned into U+FFFD. Now its rows that are not UTF-8 are unscored with the fix, the others scored; once
    re-encoded as the message says, the same rows are scored with their text intact."""
    text = ("id,reference,candidate\n"
            "r1,\u00c9panchement pleural gauche.,Pas d'\u00e9panchement.\n"
            "r2,Clear lungs.,Clear lungs.\n"
            "r3,Small effusion.,No effusion.\n")
    src = tmp_path / "latin.csv"
    src.write_bytes(text.encode("latin-1"))
    with FakeOpenAIServer(analysis_for) as server:
        out = score(server, src, tmp_path / "o.jsonl", tmp_path)
        assert out.returncode == 0, out.stderr[-3000:]
        assert ("Warning: 1 row was not UTF-8 and left unscored (first: line 2); re-encode the file, e.g. "
                "iconv -f latin1 -t utf-8 latin.csv > latin.utf8.csv") in out.stderr
        # review 11 (R4): the count line says how many rows have a score, not only how many were read
        assert f"Wrote 3 rows from {src}: 2 scored, 1 unscored" in out.stderr
        rows = read_jsonl(tmp_path / "o.jsonl")
        assert [r["id"] for r in rows] == ["r1", "r2", "r3"]
        assert rows[0]["green"] is None and not rows[0]["parsed"] and rows[0]["judge_output"] == ""
        assert rows[0]["reason"] == ("input line 2: not UTF-8 (byte 0xC9 at position 4); re-encode the file, "
                                     "e.g. iconv -f latin1 -t utf-8 IN > OUT")
        assert rows[0]["_line"] == 2 and rows[0]["_raw"] == "r1,\\xc9panchement pleural gauche.,Pas d'\\xe9panchement."
        assert "_raw" not in rows[1]
        assert rows[1]["green"] is not None and rows[2]["green"] is not None
        assert sorted(judged_pairs(server)) == [("Clear lungs.", "Clear lungs."), ("Small effusion.", "No effusion.")]

        fixed = tmp_path / "latin.utf8.csv"  # what iconv -f latin1 -t utf-8 writes
        fixed.write_bytes(src.read_bytes().decode("latin-1").encode("utf-8"))
        again = score(server, fixed, tmp_path / "o2.jsonl", tmp_path)
    assert again.returncode == 0 and "not UTF-8" not in again.stderr, again.stderr[-3000:]
    first = read_jsonl(tmp_path / "o2.jsonl")[0]
    assert first["reference"] == "\u00c9panchement pleural gauche." and first["green"] is not None
    assert ("\u00c9panchement pleural gauche.", "Pas d'\u00e9panchement.") in judged_pairs(server)


@pytest.mark.parametrize("name,content,expected", [
    ("nul.csv", b"\x00" * 64, "is not a text file (64 NUL bytes)"),
    ("pairs.jsonl", gzip.compress(b'{"reference": "a", "candidate": "b"}\n'), "is not a text file (gzip data)"),
    ("pairs.csv", b"PK\x03\x04" + bytes(range(256)) * 4, "is not a text file (a zip archive"),
    # review 12: random bytes were told to re-encode from Latin-1; their control bytes say binary
    ("random.jsonl", bytes((i * 97 + 13) % 256 for i in range(4000)), "is not a text file (451 control bytes in 4000)"),
    ("cyrillic.csv", "id,reference,candidate\nr1,Норма.,Норма.\n".encode("cp1251"), "re-encode the file, e.g. iconv"),
    ("semicolons.csv", b"id;reference;candidate\nr1;a;b\n", "the file looks ';'-delimited"),
    # review 14 (F9): a TSV named .csv, a CSV named .txt (read as JSON Lines) said only "no reference column"
    ("tabs.csv", b"id\treference\tcandidate\nr1\ta\tb\n", "the file looks tab-separated: name it .tsv"),
    ("pairs.txt", b"id,reference,candidate\nr1,a,b\n", "pairs.txt line 1: not JSON (Expecting value at position "
     "1); a CSV or TSV file? radmetrics reads a file by its suffix"),
    ("array.jsonl", b'[{"reference": "a", "candidate": "b"}]\n', "radmetrics reads JSON Lines, one object per line"),
    ("latin.csv", "référence,candidat\n".encode("utf-16"), "is UTF-16 text; save it as UTF-8"),
    ("header.csv", "id,référence,candidat\nr1,Heart normal.,Heart normal.\n".encode("latin-1"),
     "header.csv line 1 (the header): not UTF-8 (byte 0xE9 at position 5); re-encode the file, e.g. iconv"),
    ("empty.jsonl", b"\n\n", "is empty"),
])
def test_binary_empty_and_non_text_inputs_are_one_line_errors(tmp_path, name, content, expected):
    src = tmp_path / name
    if content is None:
        src.mkdir()
    else:
        src.write_bytes(content)
    with FakeOpenAIServer(analysis_for) as server:  # a live judge: the input is what fails
        out = cli("score", "-m", "green", "-i", src, "-o", tmp_path / "o.jsonl", "--backend", "openai",
                  "--base-url", server.base_url, "--judge", "m", "--no-cache")
    assert not server.requests
    assert out.returncode == 2, out.stderr[-2000:]
    assert expected in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_the_whole_file_check_reads_in_blocks_with_the_same_counts(tmp_path, monkeypatch):
    """`check_text_file(sniff=None)` (the non-streaming readers) reads the file a block at a time: a character
    cut by a block's end is not an undecodable byte, and the counts are those of the whole file."""
    from radmetrics import io
    from radmetrics.errors import InputError

    monkeypatch.setattr(io, "_CHECK_BLOCK", 7)  # every 2-byte "é" below straddles some block boundary
    text = tmp_path / "accents.jsonl"
    text.write_bytes(('{"reference": "épanchement é", "candidate": "é"}\n' * 50).encode())
    io.check_text_file(text, sniff=None)
    assert len(io.read_rows_strict(text)) == 50
    noise = tmp_path / "random.jsonl"
    noise.write_bytes(bytes(0x80 + (i * 37) % 128 if i % 2 else 0x41 for i in range(4000)))  # no control byte
    with pytest.raises(InputError, match=r"is not UTF-8 text \(2000 of 4000 bytes"):
        io.check_text_file(noise, sniff=None)
    tail = tmp_path / "tail.jsonl"  # text first, then a binary tail past the default sniff
    tail.write_bytes(b'{"reference": "a", "candidate": "b"}\n' * 2000 + b"\x00" * 80_000)
    io.check_text_file(tail)  # the streaming reader's sniff sees only text
    with pytest.raises(InputError, match=r"is not a text file \(80000 NUL bytes\)"):
        io.read_pairs(tail)


def test_the_whole_file_check_keeps_memory_flat(tmp_path):
    import tracemalloc

    from radmetrics import io

    big = tmp_path / "big.jsonl"
    big.write_bytes(b'{"reference": "No acute findings.", "candidate": "Normal chest."}\n' * 300_000)  # ~20 MB
    tracemalloc.start()
    try:
        io.check_text_file(big, sniff=None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * io._CHECK_BLOCK, f"peak {peak:,} bytes for a {big.stat().st_size:,}-byte file"


def test_a_pipe_a_line_that_is_no_row_and_a_cut_last_line_are_named_for_what_they_are(tmp_path):
    """Review findings: a FIFO (or `<(...)`) was "Input file not found"; a 5 MB line that is not JSON was "no
    reference column ... columns are: (none)"; a last line cut mid-write was only "not JSON"."""
    fifo = tmp_path / "pairs.jsonl"
    os.mkfifo(fifo)
    out = cli("score", "-m", "green", "-i", fifo, "-o", tmp_path / "o.jsonl", "--replay", REPO / "radmetrics" /
              "sample_data" / "green_replay.jsonl")
    assert out.returncode == 2 and "is not a regular file (a pipe, e.g. <(...), or a device): radmetrics reads its " \
        "input more than once; write it to a file first" in out.stderr, out.stderr[-2000:]
    fifo.unlink()
    huge = tmp_path / "huge.jsonl"
    huge.write_text("x" * 5_000_000)
    out = cli("score", "-m", "green", "-i", huge, "-o", tmp_path / "o.jsonl", "--replay", REPO / "radmetrics" /
              "sample_data" / "green_replay.jsonl")
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stderr.strip() == f"Error: {huge} line 1: not JSON (Expecting value at position 1); the last line has " \
        "no newline: was the file still being written?; no readable row among the first 1", out.stderr[-2000:]
    cut = tmp_path / "cut.jsonl"
    first = (REPO / "radmetrics" / "sample_data" / "pairs.jsonl").read_text().splitlines()[0]  # in the replay file
    cut.write_text(first + '\n{"reference": "Small eff')
    out = cli("score", "-m", "green", "-i", cut, "-o", tmp_path / "c.jsonl", "--replay", REPO / "radmetrics" /
              "sample_data" / "green_replay.jsonl")
    assert out.returncode == 0, out.stderr[-2000:]
    reason = json.loads((tmp_path / "c.jsonl").read_text().splitlines()[1])["reason"]
    assert reason == ("input line 2: not JSON (Unterminated string starting at position 15); the last line has no "
                      "newline: was the file still being written?"), reason


def test_a_csv_cut_inside_its_last_rows_quoted_field_leaves_that_row_unscored_with_the_reason(tmp_path):
    """Session 33 (review 39b's left item): a CSV cut inside its last row's quoted last field still has the header's
    number of fields, and the cut text ("Small effus") was judged as a whole candidate. Now that row is unscored with
    the reason; the rows before it are judged; a quote inside an unquoted field (5" nodule) is still text."""
    pair = json.loads((REPO / "radmetrics" / "sample_data" / "pairs.jsonl").read_text().splitlines()[0])
    rows = [["id", "reference", "candidate"], ["r1", pair["reference"], pair["candidate"]]]
    buffer = io.StringIO()
    csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    cut = tmp_path / "cut.csv"
    cut.write_text(buffer.getvalue() + '"r2","Small left effusion.","Small effus', encoding="utf-8")
    out = cli("score", "-m", "green", "-i", cut, "-o", tmp_path / "c.jsonl", "--replay", REPO / "radmetrics" /
              "sample_data" / "green_replay.jsonl")
    assert out.returncode == 0, out.stderr[-2000:]
    first, second = (json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines())
    assert first["green"] is not None, first
    assert second["green"] is None and second["id"] == "r2", second
    assert "input line 3: the file ends inside this row's quoted field" in second["reason"], second
    inch = tmp_path / "inch.csv"
    inch.write_text(buffer.getvalue() + 'r2,Effusion.,5" nodule', encoding="utf-8")
    assert [r.problem for r in Records(inch)] == [None, None]
    assert list(Records(inch))[1].row["candidate"] == '5" nodule'


@pytest.mark.parametrize("separator", ["\x0c", "\u2028", "\x85", "\x1e", "\x0b"],
                         ids=["form-feed", "line-separator", "next-line", "record-separator", "vertical-tab"])
def test_a_cut_last_row_is_found_though_an_unquoted_field_before_it_holds_a_page_break_or_unicode_line_break(tmp_path, separator):
    """Review 41a: the cut check split the record's text with str.splitlines, which also breaks at a form feed (PDF
    page breaks in extracted reports), U+2028, ...: in an unquoted field before the cut one, the check's record ended
    there, and the cut text was judged (and converted) as a whole report. csv writers leave such fields unquoted."""
    from radmetrics.data.schema import read_csv_rows
    from radmetrics.io import CUT_INSIDE_QUOTES

    whole = f'id,reference,candidate\n1,No effusion.,No effusion.\n2,Lungs clear.{separator}Page 2,"Small effusion."\n'
    cut = tmp_path / "cut.csv"
    cut.write_text(whole[: whole.index("effusion.\"")], encoding="utf-8", newline="")
    assert [r.problem for r in Records(cut)] == [None, CUT_INSIDE_QUOTES]
    with pytest.raises(InputError, match="line 3: the file ends inside a quoted field"):
        read_csv_rows(cut, ("reference", "candidate"), "test")
    full = tmp_path / "whole.csv"
    full.write_text(whole, encoding="utf-8", newline="")
    assert [r.problem for r in Records(full)] == [None, None]
    assert list(Records(full))[1].row["reference"] == f"Lungs clear.{separator}Page 2"
    assert read_csv_rows(full, ("reference", "candidate"), "test")[1]["candidate"] == "Small effusion."


def test_a_column_named_exactly_wins_over_one_that_differs_in_case(tmp_path):
    """Review finding: one row keyed "Reference" among rows keyed "reference" made the run read "Reference" for the
    whole file (the last spelling seen won): 11 of 12 rows unscored, the corpus score one row's, exit 0."""
    from radmetrics.io import read_pairs
    from radmetrics.streaming import open_pairs

    rows = [{"id": f"r{i}", "reference": "No effusion.", "candidate": "No effusion."} for i in range(12)]
    rows[5] = {"id": "r5", "Reference": "No effusion.", "candidate": "No effusion."}
    src = tmp_path / "case.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert open_pairs(src).reference_column == "reference"
    assert read_pairs(src).reference_column == "reference"
    only_upper = tmp_path / "upper.jsonl"
    only_upper.write_text(json.dumps({"Reference": "a", "Candidate": "b"}) + "\n")
    assert open_pairs(only_upper).reference_column == "Reference"  # a case-insensitive match still found


def test_an_output_named_like_another_outputs_side_file_is_refused(tmp_path):
    """Review finding: `-o out.jsonl.part.json` renamed its results over out.jsonl's lock stamp."""
    src = tmp_path / "pairs.jsonl"
    src.write_text((REPO / "radmetrics" / "sample_data" / "pairs.jsonl").read_text())
    for name in ("out.jsonl.part.json", "out.jsonl.summary.json"):
        out = cli("score", "-m", "green", "-i", src, "-o", tmp_path / name, "--replay", REPO / "radmetrics" /
                  "sample_data" / "green_replay.jsonl")
        assert out.returncode == 2 and "a name radmetrics gives the side files of another output" in out.stderr
        assert not (tmp_path / name).exists()


def test_input_columns_named_like_result_fields_are_kept_not_overwritten(tmp_path):
    """Review 12 R15: scoring an earlier results file again (it has green, reason, parsed, details, run_id) or a
    sheet with a `reason` column overwrote those columns without a word; a user's own `_line` column then looked
    like the unreadable-line marker. Now kept as input_<name>, said once, and a continued run still matches."""
    src = tmp_path / "earlier.jsonl"
    src.write_text("".join(json.dumps({"id": f"r{i}", "reference": "Small left effusion.", "candidate": f"Effusion {i}.",
                                       "green": 0.25 * i, "reason": f"note {i}", "details": {"x": i}, "_line": 100 + i,
                                       "input_green": "already taken"}) + "\n" for i in range(3)), encoding="utf-8")
    out = tmp_path / "o.jsonl"
    with FakeOpenAIServer(analysis_for) as server:
        run = score(server, src, out, tmp_path)
        again = score(server, src, out, tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Note: input column(s) _line, details, green, reason kept as input_" in run.stderr
    rows = read_jsonl(out)
    assert [r["input_input_green"] for r in rows] == [0.0, 0.25, 0.5] and [r["input_green"] for r in rows] == [
        "already taken"] * 3
    assert [r["input_reason"] for r in rows] == ["note 0", "note 1", "note 2"] and rows[2]["input_details"] == {"x": 2}
    assert [r["input__line"] for r in rows] == [100, 101, 102] and all("_line" not in r for r in rows)
    assert all(r["parsed"] and 0 <= r["green"] <= 1 and r["reason"] is None for r in rows)
    assert again.returncode == 0 and read_jsonl(out) == rows


def test_a_file_with_two_reference_or_candidate_columns_says_which_were_not_read(tmp_path):
    """Two exports merged into one file (``gt_report`` beside ``reference``, ``prediction`` beside ``candidate``):
    the pair read is named, and so are the alias columns that were not read; naming the columns silences it."""
    src = tmp_path / "merged.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in [
        {"gt_report": "old reference a", "reference": "left effusion", "Prediction": "model v1", "candidate": "left effusion"},
        {"gt_report": "old reference b", "reference": "heart normal", "Prediction": "model v1", "candidate": "cardiomegaly"}]))
    with FakeOpenAIServer(analysis_for) as server:
        out = score(server, src, tmp_path / "o.jsonl", tmp_path)
        assert out.returncode == 0, out.stderr[-3000:]
        # review 24 (L11): on the line that names the columns read, not on a line of its own
        assert (f"Reading {src}: reference = 'reference', candidate = 'candidate'; the file also has 'gt_report', "
                "'Prediction', not read (pass --reference-column / --candidate-column to choose)\n") in out.stderr
        chosen = score(server, src, tmp_path / "o2.jsonl", tmp_path, "--reference-column", "gt_report",
                       "--candidate-column", "candidate")
        assert chosen.returncode == 0, chosen.stderr[-3000:]
        assert "not read" not in chosen.stderr
        # one column for both: every report judged against itself, refused before any work (review 24 L11)
        asked = len(server.requests)
        for flags, where in ((["--reference-column", "candidate", "--candidate-column", "candidate"], ""),
                             (["--reference-column", "candidate"], f"{src}: ")):
            same = score(server, src, tmp_path / "o3.jsonl", tmp_path, *flags)
            assert same.returncode == 2 and same.stderr.strip().splitlines() == [
                f"Error: {where}the reference and the candidate would both be read from column 'candidate', so every "
                "report would be judged against itself; name two different columns with --reference-column and "
                "--candidate-column"], same.stderr
        assert len(server.requests) == asked and not (tmp_path / "o3.jsonl").exists()
    got = read_jsonl(tmp_path / "o2.jsonl")
    assert [r["reference"] for r in got] == ["left effusion", "heart normal"]  # input columns echoed as they were
    assert [r["gt_report"] for r in got] == ["old reference a", "old reference b"]


def test_a_json_escape_of_half_a_surrogate_pair_is_an_unscored_row_not_a_crash(tmp_path):
    """Review 13: `"\\ud800"` in a JSONL string decoded to a lone surrogate; writing the results then died with
    UnicodeEncodeError, leaving no output (and a rerun died the same way). Now the row is kept, unscored, its text
    with the escape spelled out; a proper pair (an emoji written as two escapes) is read as its character."""
    src = tmp_path / "surrogates.jsonl"
    src.write_text('{"id": 1, "reference": "Ok.", "candidate": "Bad \\ud800 char."}\n'
                   '{"id": 2, "reference": "Ok.", "candidate": "Fine \\ud83d\\ude00."}\n'
                   '{"id": 3, "reference": "Ok \\udc00.", "candidate": "Ok."}\n', encoding="ascii")
    with FakeOpenAIServer(analysis_for) as server:
        out = score(server, src, tmp_path / "o.jsonl", tmp_path)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    rows = read_jsonl(tmp_path / "o.jsonl")
    assert [r["id"] for r in rows] == [1, 2, 3]
    assert rows[0]["candidate"] == "Bad \\ud800 char." and rows[0]["green"] is None
    assert "escape without its pair" in rows[0]["reason"] and rows[0]["reason"].startswith("input line 1")
    assert rows[1]["candidate"] == "Fine \U0001F600." and rows[1]["green"] is not None
    assert rows[2]["reference"] == "Ok \\udc00." and "input line 3" in rows[2]["reason"]


def test_a_key_given_twice_with_different_values_is_an_unscored_row_not_the_last_value(tmp_path):
    """Review 14 (F9): json keeps the last of two values for one key without a word, so a line naming "candidate"
    twice was judged on whichever came last. Now the row is unscored with why, and never judged; a key repeated with
    the same value is not ambiguous and is read."""
    src = tmp_path / "twice.jsonl"
    src.write_text('{"id": 1, "reference": "Left effusion.", "candidate": "No effusion.", "candidate": "Left '
                   'effusion."}\n'
                   '{"id": 2, "reference": "Heart normal.", "reference": "Heart normal.", "candidate": "Heart ok."}\n'
                   # review 16: a key the run does not read cannot change a score; NaN twice is the same NaN
                   '{"id": 3, "reference": "Lungs clear.", "candidate": "Lungs ok.", "note": "x", "note": "y", '
                   '"w": NaN, "w": NaN}\n')
    with FakeOpenAIServer(analysis_for) as server:
        out = score(server, src, tmp_path / "o.jsonl", tmp_path)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    rows = read_jsonl(tmp_path / "o.jsonl")
    assert [r.get("id") for r in rows] == [1, 2, 3]  # the unscored row keeps its columns
    assert rows[0]["green"] is None and rows[0]["reason"] == (
        "input line 1: key 'candidate' given twice with different values: which is meant is unknown; keep one")
    assert rows[1]["green"] is not None and rows[2]["green"] is not None and rows[2]["note"] == "y"
    assert sorted(judged_pairs(server)) == [("Heart normal.", "Heart ok."), ("Lungs clear.", "Lungs ok.")]


def test_a_file_whose_rows_are_all_unreadable_says_why_the_first_is_not_no_columns(tmp_path):
    """A CSV named .txt (read as JSON Lines) said "no reference column ... columns are: (none)"."""
    from radmetrics.io import read_pairs

    src = tmp_path / "pairs.txt"
    src.write_text("id,reference,candidate\nr1,a,b\n")
    with pytest.raises(InputError, match=r"pairs.txt: no row could be read; the first, line 1: not JSON .*a CSV or "
                                         r"TSV file\? radmetrics reads a file by its suffix"):
        read_pairs(src)


def test_a_key_given_twice_in_a_column_chosen_later_is_refused(tmp_path):
    """Review 17 (I1): where the reader does not know the columns yet (compare picks them after reading), a key given
    twice with different values is refused whatever its name: compare --candidate-column cand_text took the last."""
    from radmetrics.meta.compare import load_systems

    a = tmp_path / "a.jsonl"
    a.write_text('{"id": "1", "reference": "Heart normal.", "cand_text": "Heart ok."}\n')
    b = tmp_path / "b.jsonl"
    b.write_text('{"id": "1", "cand_text": "Heart ok.", "cand_text": "Effusion."}\n')
    with pytest.raises(InputError, match=r"b.jsonl line 1: key 'cand_text' given twice with different values"):
        load_systems({"A": a, "B": b}, candidate_column="cand_text")


def test_jsonl_whose_lines_end_in_a_lone_cr_is_named_for_what_it_is(tmp_path):
    """Review 29c: a JSONL file with classic-Mac line endings (a lone \\r after each row) is one line to a reader
    that splits on \\n only; the error said "the last line has no newline: was the file still being written?",
    which sends the user looking for a writer that does not exist. It now names the line endings and the fix."""
    rows = (REPO / "radmetrics" / "sample_data" / "pairs.jsonl").read_text().splitlines()[:2]
    src = tmp_path / "mac.jsonl"
    src.write_bytes(("\r".join(rows) + "\r").encode())
    out = cli("score", "-m", "green", "-i", src, "-o", tmp_path / "o.jsonl", "--replay", REPO / "radmetrics" /
              "sample_data" / "green_replay.jsonl")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "lines end in a lone \\r (old Mac line endings)" in out.stderr and "tr '\\r' '\\n'" in out.stderr
    assert "still being written" not in out.stderr and not (tmp_path / "o.jsonl").exists()
