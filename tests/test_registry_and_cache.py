"""Plugin registry (built-ins, run-time plugins, an installed entry-point distribution) and the cache."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
from conftest import REPO
from fake_judge import expected_score

import radmetrics
from radmetrics.judge import get_judge

REFS = [f"finding {i} left lung effusion" for i in range(12)]
CANDS = [f"finding {i} right lung" for i in range(12)]


def test_import_radmetrics_is_light():
    code = ("import sys, radmetrics; heavy = [m for m in ('torch', 'transformers', 'evaluate', 'datasets', "
            "'sentence_transformers', 'httpx') if m in sys.modules]; print(heavy); assert not heavy")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_builtins_are_registered():
    assert "green" in radmetrics.list_scoring_systems()
    assert {"transformers", "openai", "replay"} <= set(radmetrics.list_judge_backends())
    system = radmetrics.get_scoring_system("green")
    assert system.name == "green" and callable(system.build_prompt) and callable(system.parse)


def test_unknown_names_suggest_the_fix():
    with pytest.raises(radmetrics.UnknownNameError, match="Unknown scoring system 'gren'. Did you mean 'green'"):
        radmetrics.get_scoring_system("gren")
    with pytest.raises(radmetrics.UnknownNameError, match="Did you mean 'openai'"):
        radmetrics.get_judge("opnai", model="x")


def test_a_known_plugin_that_is_not_installed_is_named_with_how_to_install_it():
    # "mrscore" is close to "er2score" by letters: suggesting it would send the user to another metric
    for ask in (lambda: radmetrics.get_scoring_system("mrscore"), lambda: radmetrics.evaluate_module_path("mrscore")):
        with pytest.raises(radmetrics.UnknownNameError) as info:
            ask()
        assert "pip install ./plugins/radmetrics-mrscore" in str(info.value) and "er2score'?" not in str(info.value)


def test_installed_plugin_distribution_is_discovered(tmp_path):
    """pip-installs tests/plugin_pkg (entry point group "radmetrics") into a folder and lists it."""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(REPO / "tests" / "plugin_pkg")], check=True)
    code = ("import radmetrics; print(radmetrics.list_scoring_systems()); "
            "s = radmetrics.get_scoring_system('word_overlap'); "
            "print(s.parse('Score: 7').score, s.parse('none').reason)")
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True).stdout
    assert "'word_overlap'" in out and "'green'" in out
    assert "0.7 no 0-10 score in the output" in out


def test_fake_judge_through_plugin_manager(fake_judge, tmp_path):
    result = radmetrics.score("green", REFS, CANDS, backend="fake", cache=False, progress=False)
    assert result.scores == pytest.approx([expected_score(r, c) for r, c in zip(REFS, CANDS)])
    assert result.fingerprint["judge"]["backend"] == "fake"
    assert result.fingerprint["prompt_version"] == "green-official-d72c195"


def test_same_backend_and_model_share_one_instance(fake_judge, tmp_path):
    a = get_judge("fake", model="m", cache=tmp_path / "c.sqlite")
    b = get_judge("fake", model="m", cache=tmp_path / "c.sqlite")
    c = get_judge("fake", model="m", cache=False)
    assert a is b and a.backend is c.backend
    assert get_judge("fake", model="other", cache=False).backend is not a.backend


def test_second_run_makes_no_model_calls(fake_judge, tmp_path):
    cache = tmp_path / "cache.sqlite"
    first = radmetrics.score("green", REFS, CANDS, backend="fake", cache=cache, progress=False)
    assert fake_judge.calls == len(REFS)
    radmetrics.judge.clear_judges()  # a new process, as far as the judge is concerned
    second = radmetrics.score("green", REFS, CANDS, backend="fake", cache=cache, progress=False)
    assert fake_judge.calls == len(REFS)
    assert second.scores == first.scores
    # Other generation settings are another cache entry.
    radmetrics.score("green", REFS[:2], CANDS[:2], backend="fake", cache=cache, progress=False,
                     config=radmetrics.GenerationConfig(max_new_tokens=7))
    assert fake_judge.calls == len(REFS) + 2


def test_interrupted_run_resumes_keeping_every_finished_judgment(fake_judge, tmp_path):
    cache = tmp_path / "cache.sqlite"
    fake_judge.fail_after = 5
    with pytest.raises(KeyboardInterrupt):
        radmetrics.score("green", REFS, CANDS, backend="fake", cache=cache, progress=False)
    fake_judge.fail_after = None
    radmetrics.judge.clear_judges()
    result = radmetrics.score("green", REFS, CANDS, backend="fake", cache=cache, progress=False)
    assert fake_judge.calls == len(REFS)  # 5 before the interruption + 7 after: each prompt once
    assert result.summary["num_scored"] == len(REFS)


def test_cache_file_is_private_and_sound(fake_judge, tmp_path):
    cache = tmp_path / "sub" / "cache.sqlite"
    radmetrics.score("green", REFS, CANDS, backend="fake", cache=cache, progress=False)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    judge = get_judge("fake", cache=cache)
    assert len(judge.cache) == len(REFS) and judge.cache.integrity_ok()


def test_cache_can_be_turned_off_by_env(fake_judge, monkeypatch):
    monkeypatch.setenv("RADMETRICS_CACHE", "off")
    radmetrics.score("green", REFS[:3], CANDS[:3], backend="fake", progress=False)
    radmetrics.judge.clear_judges()
    radmetrics.score("green", REFS[:3], CANDS[:3], backend="fake", progress=False)
    assert fake_judge.calls == 6


def test_a_read_only_cache_an_older_radmetrics_wrote_is_still_read_and_its_answers_checked(tmp_path, monkeypatch):
    """Review 37: a cache file an older radmetrics wrote (only `responses` and `claims`), shared read-only, was
    read before session 31; opening it then created the `answers_within_context` table and failed with
    "cannot be used (attempt to write a readonly database): ... delete the file". It is read again, and with no
    marks every answer is one an older radmetrics wrote: checked against the context
    (`get_many_marked`). A file root owns cannot be made read-only by its mode, so the file is opened
    read-only by SQLite's own URI."""

    from radmetrics.judge.cache import ResponseCache

    path = tmp_path / "old.sqlite"
    _an_older_cache(path)
    _open_read_only(monkeypatch, path)
    cache = ResponseCache(path)
    assert cache.get_many(["k", "other"]) == {"k": "an answer"}
    assert cache.get_many_marked(["k", "other"]) == {"k": ("an answer", False, None)}
    assert cache.written(["k"], batch="b") == {"k": 1.0}  # no record can be kept there: what is written now


def test_a_batch_done_writes_nothing_when_nothing_was_recorded_under_it(tmp_path, monkeypatch):
    """Review 44: `score --retry-unscored` ends every chunk with `batch_done`, which deleted in a write transaction
    whether or not anything was recorded. On a read-only cache file a radmetrics of now made (it has
    `written_for_batch`), a run with no row to ask again, which reads every answer from the cache and ran to its end
    before session 35, failed: "cache file ... cannot be used (attempt to write a readonly database)". Nothing
    recorded, nothing is written; what was recorded still goes, and a killed run's week-old record with it."""
    import sqlite3
    import time

    from radmetrics.judge.cache import ResponseCache

    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    cache.put_many([("k", "transformers", "judge", "an answer"), ("old", "transformers", "judge", "an answer")])
    cache.written(["k"], batch="b")
    cache.written(["old"], batch="killed")
    with sqlite3.connect(path) as con:
        con.execute("UPDATE written_for_batch SET noted = ? WHERE batch = 'killed'", (time.time() - 8 * 86400,))
    cache.batch_done("b")
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT COUNT(*) FROM written_for_batch").fetchone() == (0,)

    _open_read_only(monkeypatch, path)
    read_only = ResponseCache(path)
    read_only.batch_done("c")  # before: CacheError, the file 'cannot be used'
    assert read_only.rewritten(["k"], "c") == set() and read_only.get_many(["k"]) == {"k": "an answer"}


def _an_older_cache(path, marks_without_context: bool = False) -> None:
    """A cache file an older radmetrics made, holding one answer ('k'): only `responses` and `claims`; with
    ``marks_without_context``, as the radmetrics of b9afb71 made it, with marks of (key, created) and no context."""
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")  # as radmetrics has always opened it
    con.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, backend TEXT, model TEXT, response TEXT NOT NULL, "
                "created REAL)")
    con.execute("CREATE TABLE claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL)")
    con.execute("INSERT INTO responses VALUES ('k', 'transformers', 'judge', 'an answer', 1.0)")
    if marks_without_context:
        con.execute("CREATE TABLE answers_within_context (key TEXT PRIMARY KEY, created REAL NOT NULL)")
        con.execute("INSERT INTO answers_within_context VALUES ('k', 1.0)")
    con.commit()
    con.close()


def _open_read_only(monkeypatch, path) -> None:
    """From here on SQLite opens ``path`` read-only, by its own URI (a file root owns cannot be made read-only by its
    mode)."""
    import sqlite3

    connect = sqlite3.connect

    def read_only(target, *args, **kwargs):
        if os.fspath(target) == os.fspath(path):
            return connect(f"file:{path}?mode=ro", *args, uri=True, **kwargs)
        return connect(target, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", read_only)


def test_a_cache_whose_marks_have_no_context_column_is_read_and_written(tmp_path, monkeypatch):
    """Review 38: marks gained a `context` column in a table made with CREATE TABLE IF NOT EXISTS, so a file made
    before (marks of two columns) failed every read ('no such column: w.context') and write ('2 columns but 3 values
    were supplied') with 'cannot be used ... delete the file', for any backend. The column is added; its marks,
    whose context is not known, are checked; a read-only such file is read with no context."""

    from radmetrics.judge.cache import ResponseCache

    path = tmp_path / "marks.sqlite"
    _an_older_cache(path, marks_without_context=True)
    cache = ResponseCache(path)
    assert cache.get_many_marked(["k", "other"]) == {"k": ("an answer", True, None)}
    cache.put_many([("new", "transformers", "judge", "a new answer")], context=4096)
    assert cache.get_many_marked(["new"]) == {"new": ("a new answer", True, 4096)}
    assert ResponseCache(path).get_many_marked(["new"]) == {"new": ("a new answer", True, 4096)}  # opened again

    read_only_path = tmp_path / "read_only.sqlite"
    _an_older_cache(read_only_path, marks_without_context=True)
    _open_read_only(monkeypatch, read_only_path)
    assert ResponseCache(read_only_path).get_many_marked(["k"]) == {"k": ("an answer", True, None)}
