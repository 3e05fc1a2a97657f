"""Constant-memory scoring: the running summary equals the systems' own aggregate; `radmetrics score` writes
chunk by chunk in input order, the same rows and summary as one big chunk; an interrupted run continues after
the rows it wrote (the part file), and a run with other settings starts over."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import SAMPLE

import radmetrics
from radmetrics import runner
from radmetrics.cli import cli
from radmetrics.streaming import RunningSummary


def _replay_judgments(metric: str) -> list:
    system = radmetrics.get_scoring_system(metric)
    replay = [json.loads(x)["response"] for x in (SAMPLE / "green_replay.jsonl").read_text().splitlines()]
    pairs = [json.loads(x) for x in (SAMPLE / "pairs.jsonl").read_text().splitlines()]
    own = [system.sample_answer(p["reference"], p["candidate"]) for p in pairs]  # scored in every system's format
    texts = replay * 3 + own + ["", "garbage", "[Matched Findings]:\n2."]
    return system, [system.parse(t) for t in texts] + [radmetrics.Judgment.unscored("row 7: candidate is empty")]


@pytest.mark.parametrize("metric", ["green", "green_f1", "vert", "finerad_score", "radcliq"])
def test_running_summary_equals_aggregate(metric):
    system, judgments = _replay_judgments(metric)
    judgments = judgments * 200  # past the rows the totals are checked on
    running = RunningSummary(system)
    for j in judgments:
        running.add(j)
    expected = runner.aggregate(system, judgments)
    assert running.result() == expected
    assert expected["num_scored"] >= len(judgments) // 5  # the system's own format is read, not only unscored rows
    assert running.mode == "totals" and running.kept is None  # nothing per row is held



def test_a_judge_that_gives_every_row_its_own_reason_keeps_the_summary_bounded():
    """Review 33: a reason may quote the judge's line ("item (c) has no count in line '(c) ...'"), so a judge that
    drifts differently on every row gave every row its own reason: 3,000 rows, 3,000 entries in the summary and
    in the streaming run's memory. Now the first MAX_REASONS distinct reasons are counted one by one, the rest
    together, the same way whether the judgments are streamed or aggregated."""
    from radmetrics.cli.exit_status import FailureTally
    from radmetrics.scoring import MAX_REASONS, OTHER_REASONS

    from green_answers import green_answer

    system = radmetrics.get_scoring_system("green")
    answer, counted = green_answer({"a": 1}, {}, 2), "(c) Misidentification of a finding's anatomic location/position: 0."
    judgments = [system.parse(answer.replace(counted, f"(c) Misidentification of the opacity seen on image {k}."))
                 for k in range(MAX_REASONS + 500)] + [system.parse("garbage")] * 3
    assert len({j.reason for j in judgments}) == MAX_REASONS + 501 and all(j.score is None for j in judgments)
    running, tally = RunningSummary(system), FailureTally()
    for j in judgments:
        running.add(j)
        tally.add(j)
    reasons = running.result()["unscored_reasons"]
    assert reasons == runner.aggregate(system, judgments)["unscored_reasons"]
    assert len(reasons) == MAX_REASONS + 1 and reasons[OTHER_REASONS] == 503  # "garbage" came after the cap
    assert sum(reasons.values()) == len(judgments)
    assert len(tally.reasons) == MAX_REASONS + 1
    assert f"{len(judgments) - 3} more with over {MAX_REASONS - 3:,} other reasons" in tally.message(None)


def _score(tmp_path, out, *extra):
    return CliRunner().invoke(cli, ["score", "--metric", "green", "--input", str(tmp_path / "pairs.jsonl"),
                                     "--output", str(out), "--replay", str(SAMPLE / "green_replay.jsonl"),
                                     "--no-progress", *extra])


@pytest.fixture
def many_pairs(tmp_path):
    lines = (SAMPLE / "pairs.jsonl").read_text().splitlines() * 3
    lines.insert(5, "{not json")
    (tmp_path / "pairs.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_chunks_write_the_same_rows_in_order(many_pairs):
    tmp_path = many_pairs
    one = _score(tmp_path, tmp_path / "one.jsonl", "--chunk-rows", "1000")
    small = _score(tmp_path, tmp_path / "small.jsonl", "--chunk-rows", "4")
    assert one.exit_code == 0 and small.exit_code == 0, small.output
    assert (tmp_path / "one.jsonl").read_text() == (tmp_path / "small.jsonl").read_text()
    rows = [json.loads(x) for x in (tmp_path / "small.jsonl").read_text().splitlines()]
    assert len(rows) == 25 and rows[5]["reason"].startswith("input line 6: not JSON (")
    assert [r.get("id") for r in rows[:5]] == [json.loads(x)["id"] for x in
                                               (SAMPLE / "pairs.jsonl").read_text().splitlines()[:5]]
    one_summary = json.loads((tmp_path / "one.jsonl.summary.json").read_text())["summary"]
    assert json.loads((tmp_path / "small.jsonl.summary.json").read_text())["summary"] == one_summary
    assert not list(tmp_path.glob("*.part*"))  # renamed into place, nothing left over


def test_interrupted_run_continues_after_the_written_rows(many_pairs, monkeypatch):
    from radmetrics import streaming

    tmp_path = many_pairs
    full = _score(tmp_path, tmp_path / "full.jsonl", "--chunk-rows", "4")
    assert full.exit_code == 0

    real_write, writes = streaming.OrderedPartWriter.write, []

    def dies_after_two_chunks(self, rows):
        if len(writes) == 2:
            raise KeyboardInterrupt
        writes.append(len(rows))
        real_write(self, rows)

    monkeypatch.setattr(streaming.OrderedPartWriter, "write", dies_after_two_chunks)
    out = tmp_path / "out.jsonl"
    _score(tmp_path, out, "--chunk-rows", "4")
    assert not out.exists() and (tmp_path / "out.jsonl.part").read_text().count("\n") == 8
    # a crash in the middle of a line: that row is judged again
    with open(tmp_path / "out.jsonl.part", "a") as fh:
        fh.write('{"half a ro')
    monkeypatch.setattr(streaming.OrderedPartWriter, "write", real_write)
    judged = []
    real_judge_pairs = runner.judge_pairs
    monkeypatch.setattr(runner, "judge_pairs",
                        lambda system, judge, refs, *a, **k: judged.append(len(refs)) or
                        real_judge_pairs(system, judge, refs, *a, **k))
    again = _score(tmp_path, out, "--chunk-rows", "4")
    assert again.exit_code == 0, again.output
    assert "8 rows were already written" in again.output
    # the end-of-run warnings count the whole input, the rows read back from the part file too
    warned = [line for line in full.output.splitlines() if line.startswith("Warning:")]
    assert warned and warned == [line for line in again.output.splitlines() if line.startswith("Warning:")]
    assert sum(judged) == 25 - 8  # only the rows not written yet (row 5, bad JSON, was among the 8)
    assert out.read_text() == (tmp_path / "full.jsonl").read_text()
    assert (json.loads((tmp_path / "out.jsonl.summary.json").read_text())["summary"]
            == json.loads((tmp_path / "full.jsonl.summary.json").read_text())["summary"])

    # other settings: the part file is not continued
    monkeypatch.setattr(streaming.OrderedPartWriter, "write", dies_after_two_chunks)
    writes.clear()
    _score(tmp_path, out, "--chunk-rows", "4")
    monkeypatch.setattr(streaming.OrderedPartWriter, "write", real_write)
    other = _score(tmp_path, out, "--chunk-rows", "4", "--max-new-tokens", "99")
    assert other.exit_code == 0 and "already written" not in other.output


def test_a_run_stopped_before_its_first_row_leaves_no_part_file(many_pairs, monkeypatch):
    """Review 40b: `score --engine ray --actors 8` on a 2-CPU cluster is refused once the judge starts, after the part
    file was opened: an empty OUTPUT.part and OUTPUT.part.json were left beside the output. A run stopped before its
    first row now leaves neither; one stopped after rows keeps them to continue."""
    from radmetrics import streaming

    tmp_path = many_pairs
    real_write = streaming.OrderedPartWriter.write

    def refused(self, rows):
        raise KeyboardInterrupt

    monkeypatch.setattr(streaming.OrderedPartWriter, "write", refused)
    out = tmp_path / "out.jsonl"
    _score(tmp_path, out, "--chunk-rows", "4")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out.jsonl")) == []

    def dies_after_one_chunk(self, rows):
        if self.done_rows:
            raise KeyboardInterrupt
        real_write(self, rows)

    monkeypatch.setattr(streaming.OrderedPartWriter, "write", dies_after_one_chunk)
    _score(tmp_path, out, "--chunk-rows", "4")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out.jsonl")) == [
        "out.jsonl.part", "out.jsonl.part.json"]
    assert (tmp_path / "out.jsonl.part").read_text().count("\n") == 4


def test_a_part_files_token_is_kept_by_the_run_that_continues_it_and_no_other(tmp_path):
    """ray43b: `--retry-unscored` records what a chunk asks again under the part file's token, so that a run killed and
    continued reads what the killed one asked again. The continuing run keeps the token (written with the stamp before
    any row, an older radmetrics' two-line stamp given one); every other run has its own: another output, other
    settings, an input edited under its time stamp (`restart`), a run after one that finished."""
    from radmetrics.streaming import OrderedPartWriter

    out = tmp_path / "out.jsonl"

    def killed(identity, rows=1, output=out) -> str:  # opened, rows written, left as a kill leaves it
        writer = OrderedPartWriter(output, identity)
        writer.write([{"row": k} for k in range(rows)])
        writer.close()
        return writer.token

    first = killed({"run": 1})
    assert len(first) == 32 and killed({"run": 1}) == first
    assert killed({"run": 1}, output=tmp_path / "other.jsonl") != first
    stamp = tmp_path / "out.jsonl.part.json"
    assert stamp.read_text().splitlines()[2] == first
    stamp.write_text("\n".join(stamp.read_text().splitlines()[:2]) + "\n")  # as an older radmetrics wrote it
    older = killed({"run": 1})
    assert older not in ("", first) and killed({"run": 1}) == older
    assert killed({"run": 2}) != older
    writer = OrderedPartWriter(out, {"run": 2})
    edited = writer.token
    writer.restart()
    assert writer.token != edited and stamp.read_text().splitlines()[2] == writer.token
    writer.write([{"row": 0}])
    writer.finish()
    assert killed({"run": 2}) != writer.token


def test_parquet_is_written_a_batch_at_a_time_with_the_same_rows(many_pairs, monkeypatch):
    """Parquet from the part file in batches (memory flat at any n): the same rows as the JSONL output, columns
    whose values differ in type across batches (int and float scores, null reasons) promoted to one type."""
    import pyarrow.parquet as pq

    import radmetrics.io

    monkeypatch.setattr(radmetrics.io, "PARQUET_BATCH_ROWS", 4)  # 25 rows: 7 batches, the unscored row in one
    tmp_path = many_pairs
    assert _score(tmp_path, tmp_path / "r.jsonl", "--chunk-rows", "4").exit_code == 0
    done = _score(tmp_path, tmp_path / "r.parquet", "--chunk-rows", "4")
    assert done.exit_code == 0, done.output
    expected = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    table = pq.read_table(tmp_path / "r.parquet")
    got = table.to_pylist()
    assert len(got) == len(expected) == 25
    assert table.schema.field("green").type == "double"
    for want, row in zip(expected, got):
        assert set(row) >= set(want)
        for key, value in want.items():
            if isinstance(value, (dict, list)):
                assert json.loads(row[key]) == value, key
            else:
                assert row[key] == value, key
    assert not (tmp_path / "r.parquet.part").exists()


def test_parquet_holds_input_columns_whose_values_mix_types(tmp_path, monkeypatch):
    """Review 18 (2): ids 1 and "b", a number or true where text was (input columns come as the user wrote them)
    crashed the Parquet writer with a traceback after every row was judged, exit 1, and every rerun crashed the
    same way. Such a column is text (each other value as its JSON); int with float is double; text stays text."""
    import pyarrow.parquet as pq

    import radmetrics.io

    monkeypatch.setattr(radmetrics.io, "PARQUET_BATCH_ROWS", 2)  # the kinds differ within and across batches
    pairs = [json.loads(x) for x in (SAMPLE / "pairs.jsonl").read_text().splitlines()][:5]
    odd = [1, "b", True, 2**70, None]  # int, text, bool, an int past 64 bits, null
    weight = [1, 0.5, 2, None, 3]  # int and float
    rows = [{**p, "id": i, "weight": w, "site": {"name": "A"} if k == 0 else "B"}
            for k, (p, i, w) in enumerate(zip(pairs, odd, weight))]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = _score(tmp_path, tmp_path / "r.parquet")
    assert done.exit_code == 0 and done.exception is None, done.output
    table = pq.read_table(tmp_path / "r.parquet")
    assert [str(table.schema.field(c).type) for c in ("id", "weight", "site")] == ["string", "double", "string"]
    got = table.to_pylist()
    assert [r["id"] for r in got] == ["1", "b", "true", str(2**70), None]
    assert [r["weight"] for r in got] == [1.0, 0.5, 2.0, None, 3.0]
    assert [r["site"] for r in got] == ['{"name": "A"}', "B", "B", "B", "B"]
    assert [r["green"] for r in got] == [json.loads(x)["green"] for x in _jsonl_of(tmp_path)]
    assert not (tmp_path / "r.parquet.part").exists()


def _jsonl_of(tmp_path):
    assert _score(tmp_path, tmp_path / "r.jsonl").exit_code == 0
    return (tmp_path / "r.jsonl").read_text().splitlines()


def test_row_means_by_hand():
    """FineRadScore's and RadCliQ's extra means, streamed or held, over scored rows only (hand-computed)."""
    from radmetrics.finerad_score.system import FineRadJudgment
    from radmetrics.radcliq_rubric.parse import RubricJudgment
    from radmetrics.taxonomy import RADCLIQ_KEYS

    finerad = radmetrics.get_scoring_system("finerad_score")
    rows = [FineRadJudgment(score=7, parsed=True, severity_max=4, corrections=[{"x": 1}]),
            FineRadJudgment(score=0, parsed=True, severity_max=1, corrections=[]),
            FineRadJudgment(score=None, parsed=False, reason="no JSON", severity_max=9)]
    running = RunningSummary(finerad)
    for j in rows:
        running.add(j)
    for summary in (finerad.aggregate(rows), running._totals(list(finerad.aggregate(rows)))):
        assert summary["severity_max_mean"] == 2.5 and summary["share_without_corrections"] == 0.5

    rubric = radmetrics.get_scoring_system("radcliq_rubric")
    first, second = RADCLIQ_KEYS[0], RADCLIQ_KEYS[1]
    counts = [dict.fromkeys(RADCLIQ_KEYS, 0) for _ in range(2)]
    counts[0][first], counts[1][first], counts[1][second] = 3, 1, 2
    rows = [RubricJudgment(score=3, parsed=True, significant=counts[0], insignificant=counts[1]),
            RubricJudgment(score=3, parsed=True, significant=counts[1], insignificant=counts[0]),
            RubricJudgment(score=None, parsed=False, reason="no 'errors' object in the output")]
    summary = rubric.aggregate(rows)
    assert summary["mean_significant"][first] == 2.0 and summary["mean_significant"][second] == 1.0
    assert summary["mean_insignificant"][first] == 2.0 and summary["num_scored"] == 2
    empty = rubric.aggregate(rows[2:])
    assert empty["mean_significant"] == dict.fromkeys(RADCLIQ_KEYS)  # no scored row: None per key, not 0


def test_a_second_run_writing_the_same_output_stops_with_a_clear_error(many_pairs):
    """Two runs with one OUTPUT at once (a double launch, a requeued job whose first copy still runs) appended
    to the same part file: 550 rows for 300 and a crash. The part file's stamp is now locked while a run writes:
    the second run stops at once with exit 2, naming the other run; once it is gone, a run works."""
    import subprocess
    import sys

    tmp_path = many_pairs
    out = tmp_path / "out.jsonl"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from radmetrics.streaming import OrderedPartWriter; "
         f"w = OrderedPartWriter({str(out)!r}, {{'run': 'first'}}); print('ready', flush=True); sys.stdin.read(); "
         "w.close()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        second = subprocess.run(  # the real command line: its exit status and one-line error
            [sys.executable, "-m", "radmetrics.cli", "score", "--metric", "green", "--input",
             str(tmp_path / "pairs.jsonl"), "--output", str(out), "--replay", str(SAMPLE / "green_replay.jsonl"),
             "--no-progress"],
            capture_output=True, text=True)
        assert second.returncode == 2, second.stderr
        assert f"is being written by another radmetrics run (pid {holder.pid})" in second.stderr
        assert "Traceback" not in second.stderr and not out.exists()
        assert (tmp_path / "out.jsonl.part").read_text() == ""  # the first run's part file, untouched
    finally:
        holder.communicate("", timeout=60)
    third = _score(tmp_path, out, "--chunk-rows", "4")
    assert third.exit_code == 0, third.output
    assert len(out.read_text().splitlines()) == 25 and not list(tmp_path.glob("*.part*"))


def test_an_edit_that_keeps_size_and_time_stamp_or_another_input_starts_over_and_says_so(many_pairs, monkeypatch):
    """Review findings: a run resumes when the input's size and time stamp are unchanged, so an edit that kept
    both (`cp -p`, `touch -r`) paired old results with new text; and a changed input dropped the part file with
    no word. Each resumed row is now checked against its input line, and both cases say they start over."""
    import os

    from radmetrics import streaming

    tmp_path = many_pairs
    src, out = tmp_path / "pairs.jsonl", tmp_path / "out.jsonl"
    real_write = streaming.OrderedPartWriter.write

    def interrupted_run():
        calls = []

        def dies_after_two_chunks(self, rows):
            if len(calls) == 2:
                raise KeyboardInterrupt
            calls.append(1)
            real_write(self, rows)

        monkeypatch.setattr(streaming.OrderedPartWriter, "write", dies_after_two_chunks)
        _score(tmp_path, out, "--chunk-rows", "4")
        monkeypatch.setattr(streaming.OrderedPartWriter, "write", real_write)
        assert (tmp_path / "out.jsonl.part").read_text().count("\n") == 8

    interrupted_run()
    stamp = os.stat(src)
    lines = src.read_text().splitlines()
    row = json.loads(lines[2])
    edited = row["candidate"].replace("e", "a", 1)
    assert len(edited) == len(row["candidate"]) and edited != row["candidate"]
    lines[2] = json.dumps({**row, "candidate": edited})
    src.write_text("\n".join(lines) + "\n")
    os.utime(src, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert os.stat(src).st_size == stamp.st_size
    again = _score(tmp_path, out, "--chunk-rows", "4")
    assert again.exit_code == 0, again.output
    assert "Input line 3 differs from the row an interrupted run wrote for it: starting over." in again.output
    assert "already written" not in again.output
    assert json.loads(out.read_text().splitlines()[2])["candidate"] == edited

    # any other column of a written row (its id: what compare and joins match on), size and time kept
    interrupted_run()
    lines = src.read_text().splitlines()
    row = json.loads(lines[1])
    lines[1] = json.dumps({**row, "id": row["id"][:-1] + ("x" if row["id"][-1] != "x" else "y")})
    src.write_text("\n".join(lines) + "\n")
    os.utime(src, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    again = _score(tmp_path, out, "--chunk-rows", "4")
    assert "Input line 2 differs from the row an interrupted run wrote for it: starting over." in again.output
    assert json.loads(out.read_text().splitlines()[1])["id"] == json.loads(lines[1])["id"]

    # fewer rows than were written (the size kept with padding): not resumed
    interrupted_run()
    text = src.read_text()
    kept = text.splitlines()[:6]
    pad = len(text) - len("\n".join(kept) + "\n")
    src.write_text("\n".join([kept[0] + " " * pad, *kept[1:]]) + "\n")  # spaces after a JSON row: the same row
    os.utime(src, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    again = _score(tmp_path, out, "--chunk-rows", "4")
    assert "The input has 6 rows, fewer than the 8 an interrupted run wrote: starting over." in again.output, \
        again.output
    assert len(out.read_text().splitlines()) == 6
    src.write_text("\n".join(lines) + "\n")

    interrupted_run()
    with open(src, "a") as fh:  # another input: the part file is not continued, and the run says why
        fh.write(lines[0] + "\n")
    other = _score(tmp_path, out, "--chunk-rows", "4")
    assert other.exit_code == 0, other.output
    assert "out.jsonl.part was left by an interrupted run with another input or settings: starting over." in other.output
    assert len(out.read_text().splitlines()) == 26


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_results_are_readable_by_their_owner_only(many_pairs, suffix):
    """Result rows hold the reports, as the cache and the summary do (both 0600): so do the results (review)."""
    import stat

    out = many_pairs / f"out{suffix}"
    assert _score(many_pairs, out, "--chunk-rows", "4").exit_code == 0
    for path in (out, many_pairs / f"out{suffix}.summary.json"):
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, oct(path.stat().st_mode)


def _interrupted_line(tmp_path, monkeypatch, *flags, env=None) -> str:
    """`score` run in this process and stopped by Ctrl-C as it starts reading its input; the line `main` prints
    for it (the command's note, else this process's counts)."""
    from radmetrics import streaming
    from radmetrics.cli import exit_status

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(streaming, "open_pairs", ctrl_c)
    result = CliRunner().invoke(cli, ["score", "--metric", "green", "--input", str(SAMPLE / "pairs.jsonl"),
                                      "--output", str(tmp_path / "out.jsonl"), "--no-progress", *flags], env=env)
    assert isinstance(result.exception, exit_status.RunInterrupted), (result.exception, result.output)
    note = getattr(result.exception, "note", None)
    return exit_status.interrupted_line(note) if note else exit_status.interrupted_line()


def test_an_interrupt_note_lives_only_for_the_command_that_set_it(fake_judge, tmp_path, monkeypatch):
    """Review 20 (F6): `score --engine ray` noted what an interrupt means in a module global that nothing cleared:
    a later local run in the same process, interrupted, was told about Ray actors instead of its own counts."""
    pytest.importorskip("ray")
    cache = str(tmp_path / "cache.sqlite")
    ray_line = _interrupted_line(tmp_path, monkeypatch, "--backend", "fake", "--cache", cache, "--engine", "ray")
    assert ray_line.startswith("interrupted: the Ray actors keep each answer in the response cache")
    local_line = _interrupted_line(tmp_path, monkeypatch, "--backend", "fake", "--cache", cache)
    assert local_line.startswith("interrupted: ") and " answered, " in local_line and "Ray" not in local_line


def test_a_ray_run_without_a_cache_is_not_told_its_answers_are_cached(fake_judge, tmp_path, monkeypatch):
    """Review 20 (F6): the Ray line said the actors keep each answer in the response cache also when they had
    none: RADMETRICS_CACHE=off, --no-cache, or the replay backend (not cached by default, as in a local run)."""
    pytest.importorskip("ray")
    runs = [(("--backend", "fake"), {"RADMETRICS_CACHE": "off"}), (("--backend", "fake", "--no-cache"), None),
            (("--replay", str(SAMPLE / "green_replay.jsonl")), None)]
    for flags, env in runs:
        line = _interrupted_line(tmp_path, monkeypatch, *flags, "--engine", "ray", env=env)
        assert line.startswith("interrupted: the Ray actors have no response cache") and "not kept" in line, line
    replay = radmetrics.runner.build_judge("replay", None, {"path": str(SAMPLE / "green_replay.jsonl")},
                                           engine="ray")
    assert replay.cache is None  # the actors open no cache file: the line above is true


def test_the_failure_advice_counts_failed_calls_past_the_reason_cap_and_knows_when_nothing_is_cached():
    """Review 33: failed calls whose reasons are all different (a server's error body with a request id) past
    MAX_REASONS were counted as unreadable answers in the advice; and a run with --no-cache was told its
    unreadable answers "are cached (a plain rerun gives the same)"."""
    from radmetrics.cli.exit_status import FailureTally
    from radmetrics.scoring import MAX_REASONS

    tally = FailureTally()
    for k in range(MAX_REASONS + 10):
        tally.add(radmetrics.Judgment.unscored(f"judge call failed: HTTP 500: request id {k}"))
    assert "rerun to ask again the 1010 rows whose judge call failed" in tally.advice()
    assert "could not be read" not in tally.advice()
    uncached = FailureTally(cached=False)
    uncached.add(radmetrics.Judgment.unscored("no [Matched Findings] section", raw="text"))
    assert "no response cache" in uncached.advice() and "are cached" not in uncached.advice()
    cached = FailureTally()
    cached.add(radmetrics.Judgment.unscored("no [Matched Findings] section", raw="text"))
    assert "1 answer could not be read and is cached (a plain rerun gives the same)" in cached.advice()
