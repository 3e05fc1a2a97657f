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
    assert f"Scored {len(rows)} rows" in from_csv.stderr
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
        assert "Scored 2 rows" in out.stderr and "reference = 'reference'" in out.stderr
        out2 = score(server, jsonl, tmp_path / "o2.jsonl", tmp_path)
        assert out2.returncode == 0 and "Scored 2 rows" in out2.stderr, out2.stderr[-3000:]
    got = read_jsonl(tmp_path / "o.jsonl")
    assert got[0]["reference"] == "FINDINGS:\nleft effusion.\r\n\nIMPRESSION:\u2028effusion"
    assert got[1]["candidate"] == "heart\x0cnormal" and all(g["parsed"] for g in got)
    got2 = read_jsonl(tmp_path / "o2.jsonl")
    assert [g["reference"] for g in got2] == ["a b", "c d"] and all(g["parsed"] for g in got2)  # row 0 kept


@pytest.mark.parametrize("name,content,expected", [
    ("nul.csv", b"\x00" * 64, "is not a text file (64 NUL bytes)"),
    ("pairs.jsonl", gzip.compress(b'{"reference": "a", "candidate": "b"}\n'), "is not a text file (gzip data)"),
    ("pairs.csv", b"PK\x03\x04" + bytes(range(256)) * 4, "is not a text file (a zip archive"),
    ("random.jsonl", bytes((i * 97 + 13) % 256 for i in range(4000)), "is not UTF-8 text (2000 of 4000 bytes"),
    ("latin.csv", "référence,candidat\n".encode("utf-16"), "is UTF-16 text; save it as UTF-8"),
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
