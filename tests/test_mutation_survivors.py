"""Tests written to kill mutants that survived tools/mutation.py (see TESTING.md, "Mutation testing")."""
from __future__ import annotations

import contextlib
import hashlib
import json

import pytest

from radmetrics.judge.cache import cache_key

IDENTITY = {"backend": "replay", "model": "r.jsonl", "revision": "abc"}
CONFIG = {"max_new_tokens": 8, "stop": []}


def test_cache_key_is_stable_across_versions():
    """Users' caches are keyed by this hash: a change to its layout silently drops every cached answer, so it
    is pinned (sha256 of the sorted JSON of identity, prompt and settings, computed here by hand)."""
    payload = json.dumps({"config": CONFIG, "identity": IDENTITY, "prompt": "Objective: x"}, sort_keys=True)
    assert cache_key(IDENTITY, "Objective: x", CONFIG) == hashlib.sha256(payload.encode()).hexdigest() == (
        "1c18a120e36f55a2da7e0f38d87de80fc7d22185d0fd6b36406e8ddc88db1a37")


def test_cache_key_ignores_dict_order_and_sees_every_part():
    reordered = dict(reversed(list(IDENTITY.items())))
    assert cache_key(reordered, "p", dict(reversed(list(CONFIG.items())))) == cache_key(IDENTITY, "p", CONFIG)
    base = cache_key(IDENTITY, "p", CONFIG)
    assert cache_key({**IDENTITY, "revision": "def"}, "p", CONFIG) != base
    assert cache_key(IDENTITY, "p ", CONFIG) != base
    assert cache_key(IDENTITY, "p", {**CONFIG, "max_new_tokens": 9}) != base


# -- errors.redact: API keys out of every message --------------------------------------------------------------------
from radmetrics.errors import (  # noqa: E402
    SECRET_FRAGMENT,
    JudgeError,
    MissingExtraError,
    UnknownNameError,
    optional_import,
    redact,
)


def test_redact_replaces_the_whole_key_and_every_occurrence():
    key = "sk-abcdefghijklmnop"
    assert redact(f"Bearer {key} and again {key}.", [key]) == "Bearer *** and again ***."
    assert redact("nothing secret here", [key]) == "nothing secret here"
    assert redact("x", [None, key]) == "x"  # an unset key is skipped, the others still apply
    assert redact(f"[{key}]", [None, key]) == "[***]"


def test_redact_threshold_keys_of_four_characters_or_more():
    assert SECRET_FRAGMENT == 8
    assert redact("code abcd here", ["abcd"]) == "code *** here"  # 4 characters: a key
    assert redact("code abc here", ["abc"]) == "code abc here"  # 3: too short to be a key (would eat words)


def test_redact_numeric_key_and_non_text_message():
    key = 123456789012
    assert redact("Bearer 123456789012!", [key]) == "Bearer ***!"
    assert redact(404, ["40400000"]) == "404"  # any object is turned into text first


def test_redact_fragments_of_eight_characters_or_more():
    key = "sk-ABCDEFGHIJKLMNOPQRST"
    # a server cut the key: the first 8 and the last 9 characters are each a fragment
    assert redact("head sk-ABCDE| tail", [key]) == "head ***| tail"  # 8 characters, 'sk-' included
    assert redact("cut at sk-ABCDE", [key]) == "cut at ***"
    assert redact("cut at sk-ABCD.", [key]) == "cut at sk-ABCD."  # 7 characters: below the fragment size
    assert redact("tail MNOPQRST end", [key]) == "tail *** end"
    assert redact("tail NOPQRST end", [key]) == "tail NOPQRST end"
    # overlapping fragments merge into one '***'; separate ones stay separate
    assert redact("a CDEFGHIJKLM b DEFGHIJK c", [key]) == "a *** b *** c"
    # a key of exactly 8 characters is only replaced whole: its 7-character pieces stay
    assert redact("x 12345678 y 1234567", ["12345678"]) == "x *** y 1234567"


def test_redact_fragment_at_the_very_start_and_end_of_the_text():
    key = "ZYXWVUTSRQPONM"
    assert redact("ZYXWVUTS", [key]) == "***"
    assert redact("UTSRQPONM", [key]) == "***"
    assert redact("UTSRQPONM!", [key]) == "***!"
    assert redact("?ZYXWVUTSR", [key]) == "?***"


def test_unknown_name_error_names_the_closest_and_the_available():
    e = UnknownNameError("scoring system", "gren", ["vert", "green"])
    assert str(e) == "Unknown scoring system 'gren'. Did you mean 'green'? Available: green, vert"
    assert isinstance(e, KeyError)
    e = UnknownNameError("backend", "zzz", [])
    assert str(e) == "Unknown backend 'zzz'. Available: (none)"


def test_judge_error_keeps_the_prompt_index():
    e = JudgeError("no answer", prompt_index=3)
    assert (str(e), e.message, e.prompt_index) == ("no answer", "no answer", 3)
    assert JudgeError("x").prompt_index is None


def test_missing_extra_error_message_names_the_distribution_and_the_extra():
    e = MissingExtraError("sklearn.metrics", purpose="for the summary")
    assert str(e) == 'scikit-learn is not installed (needed for the summary): pip install "radmetrics[summary]"'
    assert (e.module, e.extra, e.name) == ("sklearn", "summary", "sklearn")
    assert str(MissingExtraError("somethingelse")) == 'somethingelse is not installed: pip install "radmetrics[all]"'
    assert MissingExtraError("torch", extra="train").extra == "train"
    assert MissingExtraError.from_import_error(ModuleNotFoundError("x")) is None
    found = MissingExtraError.from_import_error(ModuleNotFoundError("x", name="scipy.stats"), purpose="for τ")
    assert str(found) == 'scipy is not installed (needed for τ): pip install "radmetrics[meta]"'


def test_optional_import_returns_the_module_or_names_the_extra(monkeypatch):
    import json as json_module

    assert optional_import("json") is json_module
    with pytest.raises(MissingExtraError) as info:
        optional_import("radmetrics_missing_module_xyz", extra="hub", purpose="to push")
    assert str(info.value) == ('radmetrics_missing_module_xyz is not installed (needed to push): '
                               'pip install "radmetrics[hub]"')
    with pytest.raises(ModuleNotFoundError) as own:
        optional_import("radmetrics.no_such_submodule")
    assert not isinstance(own.value, MissingExtraError)  # radmetrics' own missing module is a bug, not an extra


# -- judge/cache.py: where the cache lives, what it keeps, how runs share it -----------------------------------------
import os  # noqa: E402
import socket  # noqa: E402
import sqlite3  # noqa: E402
import stat  # noqa: E402
from pathlib import Path  # noqa: E402

from radmetrics.judge import cache as cache_module  # noqa: E402
from radmetrics.judge.cache import CacheError, ResponseCache, default_cache_path, usable_answer  # noqa: E402


@pytest.mark.parametrize("value", ["", "off", "OFF", " Off ", "0", "false", "False", "none", "NONE"])
def test_cache_env_switches_it_off(monkeypatch, value):
    monkeypatch.setenv("RADMETRICS_CACHE", value)
    assert default_cache_path() is None


def test_cache_env_path_and_default_locations(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RADMETRICS_CACHE", "~/answers.sqlite")
    assert default_cache_path() == tmp_path / "home" / "answers.sqlite"
    monkeypatch.delenv("RADMETRICS_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "xdg" / "radmetrics" / "judgments.sqlite"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_path() == tmp_path / "home" / ".cache" / "radmetrics" / "judgments.sqlite"


def test_usable_answer_bounds():
    limit = cache_module.MAX_CACHED_CHARS
    assert limit == 1_000_000
    assert usable_answer("x" * limit) and not usable_answer("x" * (limit + 1))
    assert usable_answer(" a ") and not usable_answer(" \n\t") and not usable_answer("")
    assert not usable_answer(None) and not usable_answer(b"bytes") and not usable_answer(["a"])


def test_cache_file_is_private_and_round_trips(tmp_path):
    path = tmp_path / "deep" / "er" / "c.sqlite"
    cache = ResponseCache(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    keys = [f"k{i}" for i in range(1203)]  # more than two 500-key chunks
    cache.put_many([(k, "replay", "m", f"answer {k}") for k in keys] + [("blank", "b", None, "  ")])
    assert len(cache) == 1203
    found = cache.get_many(keys + ["missing", "blank"])
    assert found == {k: f"answer {k}" for k in keys}
    cache.put_many([("k0", "replay", "m", "newer")])  # a newer answer replaces the old one
    assert cache.get_many(["k0"]) == {"k0": "newer"}
    cache.put_many([])
    cache.put_many([("only-junk", "b", "m", "")])
    assert len(cache) == 1203
    cache.delete(["k0", "k1"])
    assert cache.get_many(["k0", "k1", "k2"]) == {"k2": "answer k2"}
    assert cache.integrity_ok()
    con = sqlite3.connect(path)
    assert con.execute("SELECT backend, model, response FROM responses WHERE key='k2'").fetchone() == (
        "replay", "m", "answer k2")
    # the connection's settings: WAL (a kill leaves every committed answer), NORMAL sync, a long busy wait
    mine = cache._connect()
    assert mine.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert mine.execute("PRAGMA synchronous").fetchone()[0] == 1
    assert mine.execute("PRAGMA busy_timeout").fetchone()[0] == 60000
    assert mine.isolation_level is None  # autocommit: every write is its own explicit transaction


def test_cache_reopens_an_existing_file_with_its_answers(tmp_path):
    path = tmp_path / "c.sqlite"
    ResponseCache(path).put_many([("a", "b", "m", "kept")])
    assert ResponseCache(path).get_many(["a"]) == {"a": "kept"}


def test_cache_refuses_unusable_files_in_one_line(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(CacheError) as info:
        ResponseCache(folder)
    assert str(info.value) == (f"cache file {folder} cannot be used (it is a folder): run with --no-cache, or delete "
                               "the file (or pass --cache NEW_FILE) to start a new cache")
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"hello, this is not a database" * 10)
    with pytest.raises(CacheError, match=r"\(not an SQLite file\)"):
        ResponseCache(junk)
    short = tmp_path / "short.sqlite"
    short.write_bytes(b"SQLite format 3\x00" + b"\x00" * 20)
    with pytest.raises(CacheError, match=r"\(truncated\)"):
        ResponseCache(short)
    good = tmp_path / "good.sqlite"
    con = sqlite3.connect(good)
    con.execute("CREATE TABLE t (x TEXT)")
    con.executemany("INSERT INTO t VALUES (?)", [("x" * 3000,) for _ in range(20)])
    con.commit()
    con.close()
    data = good.read_bytes()
    page_size = int.from_bytes(data[16:18], "big")
    pages = int.from_bytes(data[28:32], "big")
    assert pages > 2
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(data[: (pages - 1) * page_size])
    with pytest.raises(CacheError) as info:
        ResponseCache(cut)
    assert f"(truncated: {(pages - 1) * page_size} bytes, its header records {pages * page_size})" in str(info.value)
    exact = tmp_path / "exact.sqlite"
    exact.write_bytes(data[: pages * page_size])  # exactly the recorded size: fine
    assert ResponseCache(exact).integrity_ok()


def test_cache_header_page_size_one_means_65536(tmp_path):
    """SQLite writes page size 65536 as 1 in the 2-byte header field: a file 2 pages of 64 KiB long is whole."""
    header = bytearray(100)
    header[:16] = b"SQLite format 3\x00"
    header[16:18] = (1).to_bytes(2, "big")
    header[28:32] = (2).to_bytes(4, "big")
    whole = tmp_path / "whole.sqlite"
    whole.write_bytes(bytes(header) + b"\x00" * (2 * 65536 - 100))
    ResponseCache._check_header(type("C", (), {"path": whole, "unusable": ResponseCache.unusable})())
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(bytes(header) + b"\x00" * (65536 - 100))
    with pytest.raises(CacheError, match="truncated: 65536 bytes, its header records 131072"):
        ResponseCache._check_header(type("C", (), {"path": cut, "unusable": ResponseCache.unusable})())


def test_cache_sqlite_errors_become_one_line_but_busy_is_raised(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")

    class Broken:
        def execute(self, *a):
            raise sqlite3.DatabaseError("database disk image is malformed")

    class Busy:
        def execute(self, *a):
            raise sqlite3.OperationalError("database is locked")

    class Busy2:
        def execute(self, *a):
            raise sqlite3.OperationalError("database busy")

    cache._local.con = Broken()
    with pytest.raises(CacheError, match=r"\(database disk image is malformed\): run with --no-cache"):
        len(cache)
    for con in (Busy(), Busy2()):
        cache._local.con = con
        with pytest.raises(sqlite3.OperationalError):
            len(cache)


def _other_live_owner() -> str:
    # another run, alive: this very process under another token (never signal a process the test did not start)
    return f"{socket.gethostname()}:{os.getpid()}:other"


def test_claims_share_work_between_runs(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put_many([("done", "b", "m", "answer")])
    me, other = f"{socket.gethostname()}:{os.getpid()}:me", _other_live_owner()
    claimed, others = cache.claim(["done", "a", "b", "c"], other, ttl=60)
    assert (claimed, others) == (["a", "b", "c"], ["done"])
    # another live run holds a, b, c: I wait for them
    assert cache.claim(["a", "b", "c", "d"], me, ttl=60) == (["d"], ["a", "b", "c"])
    # my own claim can be taken again
    assert cache.claim(["d"], me, ttl=60) == (["d"], [])
    # limit: keys after the limit-th claim are not looked at
    assert cache.claim(["e", "f", "a", "g"], me, ttl=60, limit=2) == (["e", "f"], [])
    assert cache.claim(["a", "h", "i"], me, ttl=60, limit=1) == (["h"], ["a"])
    assert cache.claim(["j"], me, ttl=60, limit=0) == ([], [])
    # an answer ends the claim on its key
    cache.put_many([("a", "b", "m", "answer a")])
    assert cache.claim(["a"], me, ttl=60) == ([], ["a"])
    con = sqlite3.connect(tmp_path / "c.sqlite")
    assert con.execute("SELECT owner FROM claims WHERE key='a'").fetchone() is None
    # release of some keys, then of all
    cache.release(other, ["b"])
    assert cache.claim(["b", "c"], me, ttl=60) == (["b"], ["c"])
    cache.release(other)
    assert cache.claim(["c"], me, ttl=60) == (["c"], [])
    assert con.execute("SELECT COUNT(*) FROM claims WHERE owner=?", (other,)).fetchone()[0] == 0
    cache.release(me, ["c"])
    assert con.execute("SELECT key FROM claims WHERE owner=? ORDER BY key", (me,)).fetchall() == [
        ("b",), ("d",), ("e",), ("f",), ("h",)]


def test_claims_expire_and_renew(tmp_path):
    import time

    cache = ResponseCache(tmp_path / "c.sqlite")
    other, me = _other_live_owner(), "me-host:1:me"
    cache.claim(["k"], other, ttl=-1)  # already expired
    assert cache.claim(["k"], me, ttl=60) == (["k"], [])
    cache.claim(["r"], other, ttl=-1)
    before = time.time()
    cache.renew(other, 100)
    expires = sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT expires FROM claims WHERE key='r'").fetchone()[0]
    assert before + 99 < expires < time.time() + 101
    assert cache.claim(["r"], me, ttl=60) == ([], ["r"])  # renewed: held again
    cache.claim(["m"], me, ttl=5)
    written = sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT expires FROM claims WHERE key='m'").fetchone()[0]
    assert time.time() + 4 < written <= time.time() + 5


def test_owner_liveness():
    host = socket.gethostname()
    assert cache_module._owner_alive(f"{host}:{os.getpid()}:x")
    assert cache_module._owner_alive(f"other-{host}:999999999:x")  # another host: trusted until its lease ends
    assert cache_module._owner_alive(f"{host}:notapid:x")
    dead = 2**22 + 12345  # above the kernel's pid_max default: no such process
    assert not cache_module._owner_alive(f"{host}:{dead}:x")


def test_dead_owner_on_this_host_holds_nothing(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    dead = f"{socket.gethostname()}:{2**22 + 12345}:gone"
    cache.claim(["k"], dead, ttl=600)
    assert cache.claim(["k"], "me:1:me", ttl=60) == (["k"], [])


def test_lease_owner_ttl_renewal_and_release(tmp_path, monkeypatch):
    import time

    cache = ResponseCache(tmp_path / "c.sqlite")
    monkeypatch.setenv("RADMETRICS_LEASE_SECONDS", "0.3")
    with cache.lease() as lease:
        assert lease.ttl == 0.3
        host, pid, token = lease.owner.split(":")
        assert (host, pid, len(token)) == (socket.gethostname(), str(os.getpid()), 8)
        assert lease.claim(["a", "b", "c"], limit=2) == (["a", "b"], [])
        lease.release(["a"])
        time.sleep(0.6)  # two renewals at ttl/3 keep the claim alive beyond its first ttl
        expires = sqlite3.connect(tmp_path / "c.sqlite").execute(
            "SELECT expires FROM claims WHERE key='b'").fetchone()[0]
        assert expires > time.time()
        assert cache.claim(["a"], "x:1:other", ttl=1) == (["a"], [])
    assert sqlite3.connect(tmp_path / "c.sqlite").execute(
        "SELECT COUNT(*) FROM claims WHERE owner=?", (lease.owner,)).fetchone()[0] == 0
    with cache.lease(ttl=7) as lease:
        assert lease.ttl == 7
    monkeypatch.delenv("RADMETRICS_LEASE_SECONDS")
    with cache.lease() as lease:
        assert lease.ttl == 60


def test_interrupted_write_rolls_back(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    with pytest.raises(KeyboardInterrupt):
        with cache._write() as con:
            con.execute("INSERT INTO responses VALUES ('k', 'b', 'm', 'r', 0)")
            raise KeyboardInterrupt
    assert len(cache) == 0 and not cache._connect().in_transaction
    assert isinstance(Path(cache.path), Path)


# -- judge/replay.py: answers matched on the exact prompt ------------------------------------------------------------
import subprocess  # noqa: E402
import sys  # noqa: E402

from radmetrics.errors import RadmetricsError  # noqa: E402
from radmetrics.judge.replay import ReplayJudge  # noqa: E402


def _replay_file(tmp_path, lines: list[str], name: str = "answers.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_replay_answers_every_prompt_after_blank_lines_and_reports_each(tmp_path):
    path = _replay_file(tmp_path, [json.dumps({"prompt": "p1", "response": "r1"}), "", "   ",
                                   json.dumps({"prompt": "p2", "response": "r2"}),
                                   json.dumps({"prompt": "p1", "response": "r1"})])
    judge = ReplayJudge(path=str(path))
    seen = []
    assert judge.generate(["p2", "p1"], on_result=lambda i, text: seen.append((i, text))) == ["r2", "r1"]
    assert seen == [(0, "r2"), (1, "r1")]  # an identical repeat is the same answer (two different ones: unscored)
    assert judge.model == str(path) and repr(judge) == f"<ReplayJudge model={str(path)!r}>"
    assert judge.settings.path == str(path)


def test_replay_file_by_each_name(tmp_path):
    path = _replay_file(tmp_path, [json.dumps({"prompt": "p", "response": "r"})])
    for judge in (ReplayJudge(path=str(path)), ReplayJudge(replay=str(path)), ReplayJudge(str(path))):
        assert judge.generate(["p"]) == ["r"]
    assert ReplayJudge(replay=str(path)).settings.replay == str(path)


def test_replay_identity_is_the_file_name_and_content_digest(tmp_path):
    path = _replay_file(tmp_path, [json.dumps({"prompt": "p", "response": "r"})])
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    assert ReplayJudge(path=str(path)).identity() == {"backend": "replay", "model": "answers.jsonl",
                                                      "revision": digest}


def test_replay_errors_name_the_file_and_line(tmp_path):
    with pytest.raises(RadmetricsError) as info:
        ReplayJudge()
    assert str(info.value) == "The replay backend needs a JSONL file: get_judge('replay', path='answers.jsonl')."
    with pytest.raises(RadmetricsError) as info:
        ReplayJudge(path=str(tmp_path / "nope.jsonl"))
    assert str(info.value) == f"Replay file not found: {tmp_path / 'nope.jsonl'}"
    with pytest.raises(RadmetricsError) as info:
        ReplayJudge(path=str(tmp_path), pth="x")
    assert str(info.value).startswith("Unknown option 'pth' for the replay backend. Did you mean 'path'?")
    good = json.dumps({"prompt": "p", "response": "r"})
    bad = _replay_file(tmp_path, [good, "", "{not json"], "bad.jsonl")
    with pytest.raises(RadmetricsError) as info:
        ReplayJudge(path=str(bad))
    assert str(info.value).startswith(f"{bad}:3: not a {{'prompt', 'response'}} JSON line (")
    for row in ({"prompt": "p", "response": 1}, {"prompt": 1, "response": "r"}):
        typed = _replay_file(tmp_path, [good, json.dumps(row)], "typed.jsonl")
        with pytest.raises(RadmetricsError) as info:
            ReplayJudge(path=str(typed))
        assert str(info.value) == f"{typed}:2: 'prompt' and 'response' must be strings"
    for lines in ([], ["", "  "]):  # review 29c: every row was judged "no response", then exit 1
        empty = _replay_file(tmp_path, lines, "empty.jsonl")
        with pytest.raises(RadmetricsError) as info:
            ReplayJudge(path=str(empty))
        assert str(info.value) == (f"Replay file {empty} holds no answers (no {{'prompt', 'response'}} line): is it "
                                   "the file you meant?")


def test_replay_missing_prompt_fails_that_prompt_only(tmp_path):
    from radmetrics.types import GenerationFailure

    path = _replay_file(tmp_path, [json.dumps({"prompt": "p", "response": "r"})])
    prompt = "".join(chr(ord("a") + i % 26) for i in range(100))
    seen = []
    answers = ReplayJudge(path=str(path)).generate(["p", prompt, "p"], on_result=lambda i, t: seen.append((i, t)))
    assert answers == ["r", "", "r"] and [i for i, _ in seen] == [0, 1, 2]
    assert [isinstance(a, GenerationFailure) for a in answers] == [False, True, False]
    assert answers[1].reason == (f"replay file {path} has no response for this row's prompt; prompts must match "
                                 "exactly, including whitespace")
    assert seen[1][1] is answers[1]


@contextlib.contextmanager
def _ascii_locale():
    """Files opened without an encoding get ASCII, as under a C locale (pathlib asks io.text_encoding)."""
    import io

    real = io.text_encoding
    io.text_encoding = lambda encoding, stacklevel=2: real(encoding, stacklevel) if encoding else "ascii"
    try:
        yield
    finally:
        io.text_encoding = real


def test_replay_file_is_read_as_utf8_whatever_the_locale(tmp_path):
    """A recorded answer with non-ASCII text (e.g. '5 × 4 mm') under a C/ASCII locale (Windows: cp1252)."""
    path = _replay_file(tmp_path, [json.dumps({"prompt": "Größe", "response": "5 × 4 mm"}, ensure_ascii=False)])
    assert ReplayJudge(path=str(path)).generate(["Größe"]) == ["5 × 4 mm"]
    with _ascii_locale():  # in this process, as an ASCII locale would default it; then for real, under C:
        assert ReplayJudge(path=str(path)).generate(["Größe"]) == ["5 × 4 mm"]
    code = ("import sys; from radmetrics.judge.replay import ReplayJudge; "
            "print(ReplayJudge(path=sys.argv[1]).generate(['Gr\\u00f6\\u00dfe']) == ['5 \\u00d7 4 mm'])")
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    run = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env,
                         cwd=Path(__file__).resolve().parents[1])
    assert run.stdout.strip() == "True", run.stderr[-2000:]


def test_redact_applies_every_secret_whatever_comes_before_it():
    key = "sk-ABCDEFGHIJKLMNOPQRST"
    # an unset key, a too-short one and a short (8-character) one before the real key do not stop redaction
    for before in ([None], ["abc"], ["12345678"], [None, "abc", "12345678"]):
        assert redact(f"x {key} y sk-ABCDEFGH z", [*before, key]) == "x *** y *** z"


def test_exceptions_carry_their_message_in_args():
    """`e.args[0]` is the message (logging, pickling and `except ... as e: e.args` read it)."""
    for e in (UnknownNameError("backend", "zzz", ["openai"]), JudgeError("no answer"), MissingExtraError("yaml")):
        assert e.args == (str(e),) and str(e)


def test_missing_module_of_radmetrics_itself_is_a_bug_not_an_extra():
    assert MissingExtraError.from_import_error(ModuleNotFoundError("x", name="radmetrics.nope")) is None
    assert MissingExtraError.from_import_error(ModuleNotFoundError("x", name="radmetrics")) is None


def test_optional_import_names_the_missing_dependency_not_the_module(tmp_path, monkeypatch):
    (tmp_path / "radmetrics_test_wrapper.py").write_text("import radmetrics_test_missing_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingExtraError) as info:
        optional_import("radmetrics_test_wrapper", extra="hub", purpose="to push")
    # the dependency is what is missing, and the extra given for the wrapper is not claimed for it
    assert str(info.value) == ('radmetrics_test_missing_dependency is not installed (needed to push): '
                               'pip install "radmetrics[all]"')
    with pytest.raises(MissingExtraError) as info:
        optional_import("radmetrics_test_missing_pkg.sub", extra="hub")
    assert str(info.value) == 'radmetrics_test_missing_pkg is not installed: pip install "radmetrics[hub]"'


class _LockedAtFirst:
    """A real connection whose first `failures` `PRAGMA journal_mode=WAL` calls raise `error` (another process
    switching the same new file to WAL at that moment)."""

    def __init__(self, con, failures: int, error: str):
        self.con, self.failures, self.error = con, failures, error

    def execute(self, sql, *args):
        if "journal_mode" in sql and self.failures:
            self.failures -= 1
            raise sqlite3.OperationalError(self.error)
        return self.con.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.con, name)


def _fake_connect(monkeypatch, failures: int, error: str):
    real = sqlite3.connect
    made = []

    def connect(*args, **kwargs):
        made.append(_LockedAtFirst(real(*args, **kwargs), failures, error))
        return made[-1]

    monkeypatch.setattr(cache_module.sqlite3, "connect", connect)
    return made


def test_switching_to_wal_waits_while_another_process_holds_the_lock(tmp_path, monkeypatch):
    made = _fake_connect(monkeypatch, 3, "database is locked")
    sleeps = []
    monkeypatch.setattr(cache_module.time, "sleep", lambda s: sleeps.append(s))
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put_many([("k", "b", "m", "answer")])
    assert cache.get_many(["k"]) == {"k": "answer"}
    assert sleeps == [0.05, 0.05, 0.05] and made[0].failures == 0
    assert len(made) == 1 and cache._connect() is made[0]  # one connection per thread, reused


def test_switching_to_wal_fails_at_once_on_other_errors(tmp_path, monkeypatch):
    _fake_connect(monkeypatch, 2, "disk I/O error")
    monkeypatch.setattr(cache_module.time, "sleep", lambda s: None)
    with pytest.raises(CacheError, match=r"\(disk I/O error\)"):
        ResponseCache(tmp_path / "c.sqlite")


def test_switching_to_wal_gives_up_after_a_minute(tmp_path, monkeypatch):
    _fake_connect(monkeypatch, 10**6, "database is locked")
    clock = [1000.0]
    monkeypatch.setattr(cache_module.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(cache_module.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        ResponseCache(tmp_path / "c.sqlite")
    assert 1060.0 < clock[0] <= 1060.1  # waited one minute in 0.05 s steps, then gave up


def test_cache_folder_that_cannot_be_made_is_one_line(tmp_path):
    (tmp_path / "file").write_text("x")
    path = tmp_path / "file" / "c.sqlite"
    with pytest.raises(CacheError) as info:
        ResponseCache(path)
    assert str(info.value) == (f"cache file {path} cannot be used (File exists): run with --no-cache, or delete "
                               "the file (or pass --cache NEW_FILE) to start a new cache")


def test_cache_header_reads_the_full_four_byte_page_count(tmp_path):
    """A header recording 2**24 + 1 pages: a reader of three bytes would see 1 page and miss the truncation."""
    header = bytearray(100)
    header[:16] = b"SQLite format 3\x00"
    header[16:18] = (4096).to_bytes(2, "big")
    header[28:32] = (2**24 + 1).to_bytes(4, "big")
    path = tmp_path / "c.sqlite"
    path.write_bytes(bytes(header) + b"\x00" * (2 * 4096))
    with pytest.raises(CacheError, match="truncated"):
        ResponseCache(path)


def test_a_process_that_cannot_be_signalled_is_alive(monkeypatch):
    def denied(pid, sig):
        raise PermissionError

    monkeypatch.setattr(cache_module.os, "kill", denied)
    assert cache_module._owner_alive(f"{socket.gethostname()}:12345:x")


def test_lease_renewer_is_a_named_daemon_thread(tmp_path):
    import threading

    cache = ResponseCache(tmp_path / "c.sqlite")
    with cache.lease(ttl=30):
        renewers = [t for t in threading.enumerate() if t.name == "radmetrics-lease"]
        # a daemon: a run that dies without reaching close() is not kept alive by its renewer
        assert len(renewers) == 1 and renewers[0].daemon


# -- vert/parse.py: the overall score, every way judges write it -----------------------------------------------------
from green_answers import green_answer  # noqa: E402

from radmetrics.vert.parse import (  # noqa: E402
    VertParseError,
    check_range,
    read_bare_score,
    read_counts,
    read_overall_score,
    read_overall_score_with_form,
)

H = "[Overall Accuracy Score]: "


@pytest.mark.parametrize("text, expected", [
    (H + "0", (0.0, "plain")),  # both ends of [0, 1] are scores
    (H + "1", (1.0, "plain")),
    (H + ",85", (0.85, "decimal-comma")),
    (H + "**Score: 0.85**", (0.85, "plain")),
    (H + "Score: **0.85**", (0.85, "plain")),
    (H + "`Score: 0.85`", (0.85, "plain")),  # markdown code and emphasis around "Score: ..." are dropped first
    (H + "_Score: 0.85_", (0.85, "plain")),
    (H + "X 0.5", (0.5, "in-sentence")),  # a letter before the number: read in the sentence
    (H + "3/(3+2) =0.60", (0.6, "worked")),
    ("[Overall Accuracy Score]:\n0.8\n[Explanation]: 2 of 3 findings", (0.8, "plain")),
])
def test_vert_score_and_how_it_was_written(text, expected):
    assert read_overall_score_with_form(text) == expected
    assert read_overall_score(text) == expected[0]


@pytest.mark.parametrize("text, message", [
    (None, "empty judge output"),
    ("  \n", "empty judge output"),
    ("The report is fine.", "no [Overall Accuracy Score] in the output (truncated or another format)"),
    (H + "(see below)\n[Notes]: 0.2", "[Overall Accuracy Score] has no readable number"),
    (H + "−0.2", "overall score -0.2 outside [0, 1]"),  # a unicode minus is a minus
    (H + "−0,5", "overall score -0.5 outside [0, 1] (decimal-comma)"),
    (H + "−1,000", "overall score '-1,000' has no single reading (decimal or thousands comma?)"),
    (H + "1.5", "overall score 1.5 outside [0, 1]"),
    (H + "I would rate it 1.5", "overall score 1.5 outside [0, 1] (in-sentence)"),
    (H + "3/(3+2) = 7/5 - which is " + "a" * 60,
     "worked score '3/(3+2) = 7/5 - which is " + "a" * 35 + "' does not end in a number"),
    (H + "between 0.5 and 0.7 " + "b" * 60,
     "[Overall Accuracy Score] has no single number: 'between 0.5 and 0.7 " + "b" * 40 + "'"),
    (H + "0.5 * 2 " + "c" * 60, "[Overall Accuracy Score] has no readable number (a fraction, range, hedge or "
                               "percentage): '0.5 * 2 " + "c" * 52 + "'"),
])
def test_vert_unreadable_scores_say_why(text, message):
    with pytest.raises(VertParseError) as info:
        read_overall_score_with_form(text)
    assert str(info.value) == message


def test_vert_range_message_names_how_the_number_was_written():
    with pytest.raises(VertParseError, match=r"^overall score 2 outside \[0, 1\]$"):
        check_range(2.0, "plain")
    with pytest.raises(VertParseError, match=r"^overall score -1 outside \[0, 1\] \(worked\)$"):
        check_range(-1.0, "worked")
    check_range(0.0, "plain")
    check_range(1.0, "plain")


def test_vert_bare_score_reads_the_first_line_only():
    assert read_bare_score("0.7\nThe candidate misses 2 findings.") == (0.7, "plain")
    assert read_bare_score("**Overall Accuracy Score:**\n0.7") == (0.7, "plain")
    with pytest.raises(VertParseError, match="^empty judge output$"):
        read_bare_score(" ")
    with pytest.raises(VertParseError, match=r"^overall score 1.2 outside \[0, 1\]$"):
        read_bare_score("1.2")
    with pytest.raises(VertParseError, match=r"\(in-sentence\)$"):
        read_bare_score("I give it 1.2")
    # the score is the first number: a count of findings before it is no score, and one after it no other score
    with pytest.raises(VertParseError, match="gives a count, not a score"):
        read_bare_score("Score:\n2 findings missed\n0.7")
    assert read_bare_score("Score:\n0.7") == (0.7, "plain")
    # review 15 (V1): a second score after the first has no single reading (the first was read)
    for text in ("0.8, revised to 0.6", "0.7 (or 0.8)", "0.6, 0.7", "0.7\n0.9", "Answer: 0.3\nAnswer: 0.5"):
        with pytest.raises(VertParseError, match=r"gives more than one score \(0\.\d, then '0\.\d'\): no single"):
            read_bare_score(text)
    assert read_bare_score("0.80 (0.8 rounded)") == (0.8, "plain")  # the same score again


def test_vert_reads_green_counts_when_the_judge_wrote_them():
    text = green_answer({"a": 2, "f": 1}, {"b": 1}, 3)
    counts = read_counts(text)
    assert set(counts) == {"significant", "insignificant", "matched_findings", "green_leniency"}
    assert counts["significant"] == {"a": 2, "b": 0, "c": 0, "d": 0, "e": 0, "f": 1}
    assert counts["insignificant"] == {"a": 0, "b": 1, "c": 0, "d": 0, "e": 0, "f": 0}
    assert counts["matched_findings"] == 3 and counts["green_leniency"] == []
    assert read_counts(H + "0.5") == {}


# -- finerad_score/parse.py: corrections, severities, categories -----------------------------------------------------
from radmetrics.finerad_score.parse import (  # noqa: E402
    Correction,
    FineRadParseError,
    apply_corrections,
    parse_corrections,
    read_corrections,
)


def _entry(corrections="Fixed.", severity="Urgent error", **extra) -> dict:
    return {"corrections": corrections, "clinical severity": severity, **extra}


def _answer(*pairs) -> str:
    return "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in pairs) + "}"


def test_finerad_entries_in_order_with_labels_comments_and_categories():
    text = _answer(
        ("0", _entry("Small effusion.", "Urgent error.", comments="size", **{"error category": [
            "4. Incorrect severity of finding", "omission of finding", "Some other problem"]})),
        ("1", _entry("[delete]", "No error")),  # not a correction: skipped, and the next one still read
        ("[3]", _entry("Line three.", "Not actionable", **{"error category": "2. Omission of finding"})),
        ("None", _entry("New line.", "Emergent", **{"error category": ""})),
    )
    corrections, notes = read_corrections(text)
    assert notes == []
    assert [(c.line, c.corrections, c.severity, c.severity_label, c.comments, c.categories) for c in corrections] == [
        (0, "Small effusion.", 3, "Urgent error.", "size",
         ["Incorrect severity of finding", "Omission of finding", "Some other problem"]),
        (3, "Line three.", 1, "Not actionable", "", ["Omission of finding"]),
        (None, "New line.", 4, "Emergent", "", []),
    ]
    assert parse_corrections(text) == corrections


def test_finerad_identical_duplicates_count_once_and_reading_goes_on():
    text = _answer(("None", _entry("New.", "Urgent")), ("None", _entry("New.", "Urgent")),
                   ("2", _entry("Two.", "Emergent error")))
    corrections, notes = read_corrections(text)
    assert [c.line for c in corrections] == [None, 2]
    assert notes == ["line None: the same entry given twice, counted once"]


@pytest.mark.parametrize("text, message, retryable", [
    (None, "empty judge output", True),
    ("   ", "empty judge output", True),
    ("{1, 2}", "JSON is a set, not an object keyed by line id", True),
    (_answer(("first", _entry())), "key 'first' is neither a line id nor 'None'", True),
    (_answer(("0", {"corrections": "x."})), "line 0: needs 'corrections' and 'clinical severity'", True),
    (_answer(("0", {"clinical severity": "Urgent"})), "line 0: needs 'corrections' and 'clinical severity'", True),
    (_answer(("0", 5)), "line 0: needs 'corrections' and 'clinical severity'", True),
    (_answer(("0", _entry("Fix.", "Serious"))), "line 0: unknown clinical severity 'Serious'", True),
])
def test_finerad_unreadable_answers_say_why_and_whether_to_ask_again(text, message, retryable):
    with pytest.raises(FineRadParseError) as info:
        read_corrections(text)
    assert str(info.value) == message
    assert info.value.retryable is retryable


def test_apply_corrections_keeps_substitutes_deletes_and_appends():
    lines = ["Heart normal.", "Small effusion.", "No pneumothorax.", "Old line."]
    corrections = [Correction(1, "Large effusion. ", 3, "Urgent error", ""),
                   Correction(3, "[delete]", 1, "Not actionable", ""),
                   Correction(None, " New finding.", 2, "Actionable nonurgent error", ""),
                   Correction(None, "delete", 1, "Not actionable", "")]
    assert apply_corrections(lines, corrections) == "Heart normal. Large effusion. No pneumothorax. New finding."
    with pytest.raises(ValueError, match="^line 1 has two different corrections$"):
        apply_corrections(lines, corrections + [Correction(1, "Other.", 3, "Urgent error", "")])


# -- hub/privacy.py: what may be pushed publicly, and which cards may be replaced -------------------------------------
from radmetrics.hub.privacy import (  # noqa: E402
    PushRefused,
    card_with_marker,
    check_public_allowed,
    restricted_reasons,
    write_card,
    written_by_user,
)


@pytest.mark.parametrize("card, word", [("From PhysioNet.", "PhysioNet"), ("credentialed access", "credentialed"),
                                        ("MIMIC-CXR reports", "MIMIC-CXR"), ("mimic-iv notes", "mimic-iv"),
                                        ("MIMIC III", "MIMIC III"), ("mimic_iii", "mimic_iii"),
                                        ("mimiciii", "mimiciii")])
def test_a_card_naming_credentialed_data_keeps_the_folder_private(tmp_path, card, word):
    (tmp_path / "README.md").write_text(f"# Data\n\n{card}\n")
    assert restricted_reasons(tmp_path) == [f"its card (README.md) says '{word}'"]
    with pytest.raises(PushRefused) as info:
        check_public_allowed(tmp_path, "the folder to lab/x")
    assert str(info.value) == (f"Refusing to push the folder to lab/x publicly: its card (README.md) says '{word}'. "
                               "PhysioNet's credentialed-data licence forbids redistribution; push it private (the "
                               "default), optionally --gated.")


def test_rows_from_physionet_datasets_keep_the_folder_private(tmp_path):
    (tmp_path / "README.md").write_text("# Open data\n")
    sub = tmp_path / "splits"
    sub.mkdir()
    (sub / "test.jsonl").write_text("not json\n" + json.dumps(["a list"]) + "\n" + json.dumps({"dataset": 3}) + "\n"
                                    + json.dumps({"dataset": "rexval"}) + "\n" + json.dumps({"dataset": "mine"}) + "\n")
    (tmp_path / "more.jsonl").write_text(json.dumps({"dataset": "radeval", "text": "x"}) + "\n")
    # review 21, H1: the line that is not JSON is no longer skipped: the file counts as unreadable too
    assert restricted_reasons(tmp_path) == ["its rows come from radeval, rexval (PhysioNet credentialed data)",
                                            "splits/test.jsonl could not be read to check where its rows come from"]
    (sub / "test.jsonl").write_text(json.dumps({"dataset": "mine"}) + "\n")
    (tmp_path / "more.jsonl").unlink()
    assert restricted_reasons(tmp_path) == []
    check_public_allowed(tmp_path, "x")  # nothing restricted: allowed


@pytest.mark.parametrize("as_dict", [False, True], ids=["Dataset", "DatasetDict"])
def test_saved_datasets_from_physionet_keep_the_folder_private(tmp_path, as_dict):
    import datasets

    rows = datasets.Dataset.from_dict({"dataset": ["refisco", "mine"], "text": ["a", "b"]})
    saved = datasets.DatasetDict({"test": rows}) if as_dict else rows
    saved.save_to_disk(str(tmp_path / "ds"))
    assert restricted_reasons(tmp_path / "ds") == ["its rows come from refisco (PhysioNet credentialed data)"]
    datasets.Dataset.from_dict({"text": ["a"]}).save_to_disk(str(tmp_path / "plain"))
    assert restricted_reasons(tmp_path / "plain") == []


def test_every_data_file_a_push_uploads_is_read_for_its_provenance(tmp_path):
    """Review 19 (5): ReXVal rows pushed public when stored as Parquet or CSV (the Hub's own layouts; only
    save_to_disk folders and JSONL were read), or when their dataset column said "MIMIC-CXR" (only the four
    converter names matched, case-sensitively). A data file the gate cannot read keeps the push private."""
    import datasets

    rows = datasets.Dataset.from_dict({"dataset": ["ReXVal", "mine"], "text": ["a", "b"]})
    for name, write in (("parquet", lambda d, f: d.to_parquet(str(f / "data" / "test-00000-of-00001.parquet"))),
                        ("csv", lambda d, f: d.to_csv(str(f / "rexval.csv"), index=False)),
                        ("json", lambda d, f: d.to_json(str(f / "rows.json"))),
                        ("arrow", lambda d, f: d.save_to_disk(str(f / "nested" / "saved")))):
        folder = tmp_path / name
        (folder / "data").mkdir(parents=True)
        write(rows, folder)
        assert restricted_reasons(folder) == ["its rows come from ReXVal (PhysioNet credentialed data)"], name
        with pytest.raises(PushRefused):
            check_public_allowed(folder, "x")
    mimic = tmp_path / "mimic"
    mimic.mkdir()
    datasets.Dataset.from_dict({"dataset": ["MIMIC-CXR"], "text": ["a"]}).to_parquet(str(mimic / "t.parquet"))
    assert restricted_reasons(mimic) == ["its rows come from MIMIC-CXR (PhysioNet credentialed data)"]
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "t.parquet").write_bytes(b"PAR1 not really")
    assert restricted_reasons(broken) == ["t.parquet could not be read to check where its rows come from"]
    own = tmp_path / "own"
    own.mkdir()
    datasets.Dataset.from_dict({"dataset": ["mine"], "text": ["a"]}).to_parquet(str(own / "t.parquet"))
    (own / "notes.csv").write_text("id,text\n1,a\n")
    assert restricted_reasons(own) == []  # open data, and files with no dataset column: allowed


def test_a_data_file_named_after_credentialed_data_stays_private(tmp_path):
    """Review 24 (left then, closed in session 20): ReXVal rows in rexval.csv with no dataset column went public;
    the file's name (or a folder's above it) says what the rows are. Only data files count: a model's
    config.json or a script named after the dataset it evaluates on is not rows."""
    named = tmp_path / "named"
    (named / "mimic_cxr").mkdir(parents=True)
    (named / "rexval.csv").write_text("id,reference,candidate\n1,r,c\n")
    assert restricted_reasons(named) == ["rexval.csv is named after PhysioNet credentialed data"]
    with pytest.raises(PushRefused):
        check_public_allowed(named, "x")
    (named / "rexval.csv").unlink()
    (named / "mimic_cxr" / "train.jsonl.gz").write_bytes(__import__("gzip").compress(b'{"text": "a"}\n'))
    (named / "ReXVal_v1.parquet~").write_bytes(b"")
    assert restricted_reasons(named)[0] == ("ReXVal_v1.parquet~ is named after PhysioNet credentialed data "
                                            "(and 1 other data file)")
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "eval_on_rexval.py").write_text("print(1)\n")  # code, not rows
    (plain / "mimicry.csv").write_text("id,text\n1,a\n")  # another word
    (plain / "config.json").write_text('{"model_type": "llama"}')
    assert restricted_reasons(plain) == []


_REXVAL_ROW = {"id": "1", "dataset": "rexval", "reference": "r", "candidate": "c"}


def _zipped(name: str, text: str) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(name, text)
    return buf.getvalue()


def _compressed(module: str, text: str) -> bytes:
    import importlib

    return importlib.import_module(module).compress(text.encode())


def _parquet(columns: dict) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = pa.BufferOutputStream()
    pq.write_table(pa.table(columns), buf)
    return buf.getvalue().to_pybytes()


_OPEN_ROW = {"id": "2", "dataset": "radgraph", "reference": "r", "candidate": "c"}


def _arrow_stream(columns: dict) -> bytes:
    import pyarrow as pa

    table, buf = pa.table(columns), pa.BufferOutputStream()
    with pa.ipc.new_stream(buf, table.schema) as writer:
        writer.write_table(table)
    return buf.getvalue().to_pybytes()


def _sqlite(*statements: str) -> bytes:
    import sqlite3
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        db = sqlite3.connect(Path(folder) / "x.db")
        for statement in statements:
            db.execute(statement)
        db.commit()
        db.close()
        return (Path(folder) / "x.db").read_bytes()


_REXVAL_DB = _sqlite("CREATE TABLE rows (id TEXT, Dataset TEXT)", "INSERT INTO rows VALUES ('1', 'rexval')")


def _notebook(*outputs: dict) -> str:
    return json.dumps({"nbformat": 4, "metadata": {}, "cells": [
        {"cell_type": "code", "source": ["df.head()"], "metadata": {}, "outputs": list(outputs)}]})


@pytest.mark.parametrize("name, data", [
    pytest.param("train.csv", "\ufeffdataset,reference,candidate\nrexval,r,c\n", id="csv-utf8-bom"),
    pytest.param("train.csv", " Dataset ;reference\nrexval;r\n", id="csv-semicolons-and-spelling"),
    pytest.param("train.txt", "\ufeffid\tdataset\n1\trexval\n".encode("utf-16"), id="txt-excel-unicode-text"),
    pytest.param("train.json", json.dumps({"id": ["1", "2"], "dataset": ["rexval", "mine"]}), id="json-columns"),
    pytest.param("train.json", json.dumps({"version": 1, "data": [_REXVAL_ROW]}), id="json-rows-under-a-field"),
    pytest.param("train.json", json.dumps({"data": {"Dataset": ["rexval"]}}), id="json-columns-under-a-field"),
    pytest.param("train.jsonl", "\ufeff" + json.dumps(_REXVAL_ROW) + "\n", id="jsonl-utf8-bom"),
    pytest.param("train.jsonl.gz", _compressed("gzip", json.dumps(_REXVAL_ROW) + "\n"), id="jsonl-gz"),
    pytest.param("train.json.gz", _compressed("gzip", json.dumps([_REXVAL_ROW])), id="json-gz"),
    pytest.param("train.csv.gz", _compressed("gzip", "dataset,reference\nrexval,r\n"), id="csv-gz"),
    pytest.param("train.jsonl.bz2", _compressed("bz2", json.dumps(_REXVAL_ROW) + "\n"), id="jsonl-bz2"),
    pytest.param("train.tsv.xz", _compressed("lzma", "dataset\treference\nrexval\tr\n"), id="tsv-xz"),
    pytest.param("train.tsv", "id\tdataset\treference\n1\trexval\tr\n", id="tsv"),
    pytest.param("train.ndjson", json.dumps(_REXVAL_ROW) + "\n", id="ndjson"),
    pytest.param("train.txt", "id\tdataset\n1\trexval\n", id="txt-table"),
    # review 21, H1: layouts `datasets` loads that the gate read as "nothing restricted"
    pytest.param("train.jsonl", json.dumps([_OPEN_ROW, _REXVAL_ROW]) + "\n", id="jsonl-line-holding-an-array"),
    *(pytest.param("train.jsonl", json.dumps(_OPEN_ROW) + "\n"
                   + json.dumps({**_REXVAL_ROW, "candidate": f"a{sep}b"}, ensure_ascii=False) + "\n",
                   id=f"jsonl-row-text-holding-{name}") for sep, name in (("\u2028", "u2028"), ("\u2029", "u2029"),
                                                                         ("\x85", "nel"))),
    pytest.param("train.jsonl", json.dumps(_REXVAL_ROW, indent=2) + "\n" + json.dumps(_OPEN_ROW) + "\n",
                 id="jsonl-pretty-printed-objects"),
    pytest.param("train.json", json.dumps({"data": {"train": [_OPEN_ROW, _REXVAL_ROW]}}), id="json-two-fields-down"),
    pytest.param("train.json", json.dumps({"a": [{"b": {"c": [[_REXVAL_ROW]]}}]}), id="json-deeper"),
    pytest.param("train.jsonl", json.dumps({"id": "1", "meta": {"dataset": "rexval"}}) + "\n", id="jsonl-nested"),
    pytest.param("train.csv", "\ndataset,candidate\nrexval,c\n", id="csv-blank-first-line"),
    pytest.param("train.csv", "\r\n\r\ndataset;candidate\r\nrexval;c\r\n", id="csv-blank-lines-semicolons"),
    pytest.param("train.csv", '"candidate\ntext",dataset\nc,rexval\n', id="csv-header-with-a-quoted-newline"),
    pytest.param("train.csv", 'dataset,candidate\n1,rexval,"c"\n', id="csv-r-write-table-row-names"),
    pytest.param("train.tsv", 'id\tdataset\tcandidate\n"r1"\t"1"\t"rexval"\t"c"\n', id="tsv-r-write-table"),
    pytest.param("train.jsonl.lzma", _compressed("lzma", json.dumps(_REXVAL_ROW) + "\n"), id="jsonl-lzma"),
    pytest.param("train.jsonl.gzip", _compressed("gzip", json.dumps(_REXVAL_ROW) + "\n"), id="jsonl-gzip"),
    pytest.param("train.CSV.GZ", _compressed("gzip", "dataset\nrexval\n"), id="csv-gz-upper-case"),
    pytest.param("data/dataset=rexval/part-0.parquet", _parquet({"candidate": ["c"]}), id="hive-partition"),
    pytest.param("data/year=2024/Dataset=rex%76al/part-0.csv", "candidate\nc\n", id="hive-partition-deeper"),
    # review 24: UTF-32 was decoded as UTF-16 (its mark begins with UTF-16's), UTF-16/32 without a mark as UTF-8
    pytest.param("train.csv", "dataset,text\nrexval,a\n".encode("utf-32"), id="csv-utf32"),
    pytest.param("train.jsonl", (json.dumps(_REXVAL_ROW) + "\n").encode("utf-32"), id="jsonl-utf32"),
    pytest.param("train.csv", "dataset,text\nrexval,a\n".encode("utf-16-le"), id="csv-utf16le-without-a-mark"),
    pytest.param("train.tsv", "dataset\ttext\nrexval\ta\n".encode("utf-16-be"), id="tsv-utf16be-without-a-mark"),
    pytest.param("train.csv", "dataset,text\nrexval,a\n".encode("utf-32-be"), id="csv-utf32be-without-a-mark"),
    pytest.param("train.jsonl", (json.dumps(_REXVAL_ROW) + "\n").encode("utf-32-le"), id="jsonl-utf32le-no-mark"),
    # review 24: Excel's "sep=;" first line was read as the header
    pytest.param("train.csv", "sep=;\ndataset;text\nrexval;a,b\n", id="csv-excel-sep-semicolon"),
    pytest.param("train.csv", "\ufeffsep=\t\r\ntext\tdataset\r\na\trexval\r\n", id="csv-excel-sep-tab-after-a-mark"),
    pytest.param("train.csv", "sep=|\ntext|dataset\na|rexval\n", id="csv-excel-sep-pipe"),
    # review 24: a file with no suffix was never read, nor JSON Lines in a .txt (read as a header and no rows)
    pytest.param("data/train", json.dumps(_OPEN_ROW) + "\n" + json.dumps(_REXVAL_ROW) + "\n", id="jsonl-no-suffix"),
    pytest.param("rows", "id,dataset\n1,rexval\n", id="csv-no-suffix"),
    pytest.param("data/test", "text\tdataset\na\trexval\n".encode("utf-16"), id="tsv-utf16-no-suffix"),
    pytest.param("rows", _parquet({"dataset": ["rexval"]}), id="parquet-no-suffix"),
    pytest.param("train.gz", _compressed("gzip", json.dumps(_REXVAL_ROW)), id="gz-of-json-with-no-inner-suffix"),
    pytest.param("train.txt", json.dumps(_REXVAL_ROW) + "\n", id="txt-of-json-lines"),
    pytest.param("train.txt", "[PAD]\n" + json.dumps([_REXVAL_ROW]) + "\n", id="txt-of-json-arrays-after-text"),
    pytest.param("train.csv", json.dumps({"data": [_REXVAL_ROW]}, indent=2), id="csv-holding-pretty-printed-json"),
    pytest.param("rows", json.dumps([_OPEN_ROW, _REXVAL_ROW], indent=2), id="pretty-printed-array-no-suffix"),
    pytest.param("train.txt", "[PAD]\n" + json.dumps([_REXVAL_ROW], indent=1),
                 id="txt-pretty-printed-array-after-text"),
    # review 24: YAML was never read
    pytest.param("train.yaml", "- id: '1'\n  dataset: rexval\n", id="yaml-rows"),
    pytest.param("train.yml", "---\nversion: 1\n---\ndata: {dataset: [mine, rexval]}\n", id="yml-documents"),
    pytest.param("train.yaml", "!!python/object:x.Y\nrows: [{dataset: !custom rexval}]\n", id="yaml-tags"),
    pytest.param("train.yaml.gz", _compressed("gzip", "dataset: rexval\n"), id="yaml-gz"),
    # review 24: SQLite databases and notebooks' outputs were never read
    pytest.param("train.sqlite", _REXVAL_DB, id="sqlite"),
    pytest.param("data/rows", _REXVAL_DB, id="sqlite-with-no-suffix"),
    pytest.param("cache.db", _sqlite('CREATE TABLE "a ""b" (x TEXT, dataset TEXT)', 'CREATE TABLE c (y)',
                                     "INSERT INTO \"a \"\"b\" VALUES ('x', 'rexval')", "INSERT INTO c VALUES (1)"),
                 id="db-quoted-table-name"),
    pytest.param("eda.ipynb", _notebook({"output_type": "execute_result", "execution_count": 1, "metadata": {},
                                         "data": {"text/plain": ["  id dataset\n", "0  1  rexval"],
                                                  "text/html": ["<table><td>1</td><td>rexval</td></table>"],
                                                  "image/png": "iVBORw0KGgo="}}), id="notebook-table"),
    pytest.param("eda.ipynb", _notebook({"output_type": "stream", "name": "stdout", "text": "{'dataset': 'rexval'}"}),
                 id="notebook-printed-row"),
    # review 24: a dataset field inside a struct column, and pandas' orient="split" JSON, were never read
    pytest.param("train.parquet", _parquet({"meta": [{"dataset": "mine"}, {"dataset": "rexval"}], "x": [1, 2]}),
                 id="parquet-struct-column"),
    pytest.param("train.parquet", _parquet({"rows": [[{"Dataset": "rexval"}]]}), id="parquet-list-of-structs"),
    pytest.param("data-00000.arrow", _arrow_stream({"meta": [{"dataset": "rexval"}]}), id="arrow-struct-column"),
    pytest.param("train.parquet", _parquet({"dataset": [b"rexval"]}), id="parquet-binary-column"),
    pytest.param("train.json", json.dumps({"columns": ["id", "dataset"], "index": [0], "data": [["1", "rexval"]]}),
                 id="json-pandas-orient-split"),
    # review 24: only a column named "dataset" itself was read
    pytest.param("train.jsonl", json.dumps({"id": "1", "dataset_name": "rexval"}) + "\n", id="jsonl-dataset-name"),
    pytest.param("train.csv", "dataset,Source Dataset\nmine,rexval\n", id="csv-second-dataset-column"),
    pytest.param("train.parquet", _parquet({"hf_dataset": ["rexval"]}), id="parquet-hf-dataset"),
    pytest.param("train.tab", "id\tData Set\n1\trexval\n", id="tab-data-set"),
    pytest.param("train.psv", "id|data_set\n1|rexval\n", id="psv-data-set"),
    pytest.param("data/dataset_name=rexval/part-0.csv", "candidate\nc\n", id="hive-partition-dataset-name"),
    pytest.param("dataset_info.json", json.dumps({"dataset_name": "rexval", "description": ""}),
                 id="save-to-disk-dataset-info"),
    # review 24: a header after an export's title rows, and a suffix followed by an editor's mark, went public
    pytest.param("train.csv", "Export of 2024-01-01\nNotes: none\n\nid,dataset\n1,rexval\n", id="csv-title-rows"),
    pytest.param("train.jsonl~", json.dumps(_REXVAL_ROW) + "\n", id="jsonl-editor-backup"),
    pytest.param("train.csv#", "dataset\nrexval\n", id="csv-autosave-mark"),
    pytest.param("train.jsonl ", json.dumps(_REXVAL_ROW) + "\n", id="jsonl-suffix-with-a-blank-after-it"),
    pytest.param("train.jsonl.gz~", _compressed("gzip", json.dumps(_REXVAL_ROW) + "\n"), id="jsonl-gz-backup"),
    # review 24: layouts `datasets` 5 loads (XML, .geoparquet, .gpq) and a common Parquet spelling were not read
    pytest.param("train.xml", '<?xml version="1.0"?><data><row><id>1</id><dataset>rexval</dataset></row></data>',
                 id="xml-elements"),
    pytest.param("train.xml.gz", _compressed("gzip", '<rows xmlns:r="urn:r"><row r:Dataset="rexval"/></rows>'),
                 id="xml-attributes-gz"),
    *(pytest.param(f"train{suffix}", _parquet({"dataset": ["rexval"]}), id=suffix[1:])
      for suffix in (".geoparquet", ".gpq", ".pq")),
])
def test_rexval_rows_in_every_layout_the_hub_loads_keep_the_folder_private(tmp_path, name, data):
    """Review 20 (F4): ReXVal rows went public from a CSV with a byte-order mark (Excel's "CSV UTF-8"), from
    column-oriented or field-nested JSON, from compressed files (train.jsonl.gz, which the Hub and `datasets` load
    directly) and from .tsv/.ndjson/.txt tables: none of them was read, nor counted as unreadable. Review 21 (H1):
    nor were layouts `datasets` and pyarrow load as well (below the review 21 line)."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data) if isinstance(data, bytes) else path.write_text(data, encoding="utf-8")
    assert restricted_reasons(tmp_path) == ["its rows come from rexval (PhysioNet credentialed data)"]
    with pytest.raises(PushRefused):
        check_public_allowed(tmp_path, "x")


def test_zstd_compressed_rexval_rows_are_read_where_a_zstd_module_imports(tmp_path):
    """.zst data files are read with the standard library's zstd (Python 3.14) or `zstandard` (a dev dependency,
    so CI runs this); without either they keep the push private as unreadable (the test below)."""
    zstandard = pytest.importorskip("zstandard")
    (tmp_path / "train.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(
        (json.dumps({**_REXVAL_ROW, "id": "2", "dataset": "mine"}) + "\n" + json.dumps(_REXVAL_ROW) + "\n").encode()))
    assert restricted_reasons(tmp_path) == ["its rows come from rexval (PhysioNet credentialed data)"]
    (tmp_path / "train.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(b'{"dataset": "mine"}\n'))
    assert restricted_reasons(tmp_path) == []


@pytest.mark.parametrize("name, data", [
    pytest.param("train.jsonl.zst", b"\x28\xb5\x2f\xfd not a real frame", id="zst"),  # zstd: read only with a module
    pytest.param("train.parquet.gz", _compressed("gzip", "PAR1 not really"), id="broken-inside-gzip"),
    pytest.param("train.gz", _compressed("gzip", "\x00\x01 binary"), id="gz-of-unknown-kind"),
    pytest.param("data.tar.gz", _compressed("gzip", "rows"), id="tar-gz"),
    pytest.param("train.zip", _zipped("train.jsonl", json.dumps(_REXVAL_ROW)), id="zip"),
    pytest.param("train.xlsx", b"PK\x03\x04 a workbook", id="spreadsheet"),
    pytest.param("train.json", "{not json at all", id="json-that-is-not-json"),
    # review 21, H1: a line that does not parse is never skipped, even when the others do
    pytest.param("train.jsonl", json.dumps(_OPEN_ROW) + "\n{broken\n", id="jsonl-with-a-broken-line"),
    pytest.param("train.jsonl", "not json\n" + json.dumps(_OPEN_ROW) + "\n", id="jsonl-with-a-line-of-text"),
    pytest.param("train.json", json.dumps(_OPEN_ROW) + " trailing text", id="json-with-text-after-it"),
    # review 21, H1: a table under a suffix the gate has no reader for is unreadable, never uploaded unread
    *(pytest.param(f"train.jsonl{suffix}", _compressed("gzip", json.dumps(_REXVAL_ROW)), id=f"jsonl{suffix}")
      for suffix in (".lz4", ".z", ".bz", ".snappy", ".br", ".bak", ".part")),
    pytest.param("train.lz4", b"\x04\x22\x4d\x18 frame", id="lz4-of-unknown-kind"),
    # review 24: NUL bytes no text encoding explains were decoded as UTF-8 and the file read as a table of nothing
    pytest.param("train.csv", bytes(range(256)) * 8, id="csv-of-binary-bytes"),
    # review 24: a compressed or packed file under a later suffix was not taken for data, nor was one with no suffix
    pytest.param("train.jsonl.gz.part", _compressed("gzip", json.dumps(_REXVAL_ROW) + "\n"), id="jsonl-gz-part"),
    pytest.param("data.zip.001", _zipped("train.jsonl", json.dumps(_REXVAL_ROW)), id="split-zip"),
    pytest.param("data/train", _zipped("train.jsonl", json.dumps(_REXVAL_ROW)), id="zip-with-no-suffix"),
    pytest.param("rows", _compressed("gzip", json.dumps(_REXVAL_ROW)), id="gzip-with-no-suffix"),
    pytest.param("rows", bytes(range(256)) * 8, id="binary-with-no-suffix"),
    pytest.param("rows", json.dumps(_OPEN_ROW) + "\n{broken\n", id="json-lines-with-no-suffix-and-a-broken-line"),
    pytest.param("train.yaml", "- dataset: mine\n- [broken\n", id="yaml-that-does-not-parse"),
    pytest.param("train.db", b"not a database at all" * 100, id="db-that-is-no-sqlite-database"),
    pytest.param("train.sqlite-wal", b"\x37\x7f\x06\x82 a write-ahead log", id="sqlite-write-ahead-log"),
    pytest.param("train.sqlite.gz", _compressed("gzip", "SQLite format 3"), id="compressed-sqlite"),
    *(pytest.param(f"train{suffix}", b"PK\x03\x04 rows", id=suffix[1:]) for suffix in (".xlsm", ".ods", ".orc")),
    pytest.param("eda.ipynb", "{broken", id="notebook-that-is-not-json"),
    pytest.param("train.xml", "<rows><row>", id="xml-that-does-not-parse"),
    *(pytest.param(f"train{suffix}", b"\x00 rows", id=suffix[1:]) for suffix in (".lance", ".eval")),
])
def test_data_files_the_gate_cannot_read_keep_the_folder_private(tmp_path, name, data):
    """Review 20 (F4): the gate promised to fail closed, but skipped data files it had no reader for."""
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_bytes(data) if isinstance(data, bytes) else (tmp_path / name).write_text(data)
    assert restricted_reasons(tmp_path) == [f"{name} could not be read to check where its rows come from"]


def test_an_ordinary_model_folder_may_go_public(tmp_path):
    """Review 24: files with no suffix are sniffed now, and text files read for JSON lines too; a model folder's own
    files (weights, tokenizer, licence, build and git files) hold no rows and must not keep a push private."""
    files = {
        "config.json": json.dumps({"architectures": ["X"]}), "tokenizer_config.json": "{}",
        "tokenizer.json": json.dumps({"model": {"vocab": {"dataset": 1}}}), "special_tokens_map.json": "{}",
        "vocab.txt": "[PAD]\n[UNK]\n{\n}\n[\n]\n1\n\"\nthe\n" + "".join(f"[unused{i}]\n" for i in range(100)),
        "merges.txt": "#version: 0.2\nĠ t\n", "model.safetensors": b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ",
        "training_args.bin": b"PK\x03\x04\x00\x00 a pickle", "README.md": "---\nlicense: mit\n---\n# Model\n",
        ".gitattributes": "*.bin filter=lfs diff=lfs merge=lfs -text\n", ".gitignore": "*.pyc\n",
        "LICENSE": "MIT License\n\nCopyright (c) 2024\n\n1. Permission is hereby granted, free of charge, to any",
        "Makefile": "all:\n\tpython train.py --dataset=mine\n", "NOTICE": "",
        "runs/x/events.out.tfevents.1700000000.ip-10-0-0-1.ec2.internal.1.0": b"\x18\x00\x00\x00\x00\xa3\x7fK",
        "spiece.model": b"\n\x0e\n\x05<unk>\x15\x00\x00", "eval_results.txt": "eval_loss = 0.5\n",
        # a config of its own tags, and the one dataset it names is open
        ".hydra/config.yaml": "model: !ENV ${MODEL}\ndata: {dataset: mine, when: 2024-01-01}\n",
        "CITATION.cff": "x: 1\n",
        # text that names ReXVal holds no rows of it; prose is no header ("dataset" is in it)
        "notes.txt": "It was trained on a private dataset.\nIt scores 0.7 on ReXVal.\n",
        "README": "# Model\n\nThis model was trained on a private dataset, not MIMIC-CXR.\nIt scores 0.7 on ReXVal.\n",
        # a Space's files
        "app.py": "import gradio\n", "requirements.txt": "gradio==4.0\n", "packages.txt": "ffmpeg\n", ".env": "A=1\n",
        "index.html": "<table><tr><td>dataset</td></tr><tr><td>mimic</td></tr></table>", "style.css": "td {}\n",
        "openvino_model.xml": '<?xml version="1.0"?><net name="m"><layers><layer id="0"/></layers></net>',
        "data_args.json": json.dumps({"dataset_text_field": "text", "datasets": [{"path": "lab/my_reports"}]}),
        "demo.ipynb": _notebook({"output_type": "stream", "name": "stdout", "text": ["Loss 0.5 on my_reports\n"]}),
    }
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data) if isinstance(data, bytes) else (tmp_path / name).write_text(data)
    assert restricted_reasons(tmp_path) == []


def test_compressed_and_text_files_of_open_data_may_go_public(tmp_path):
    import gzip

    (tmp_path / "train.jsonl.gz").write_bytes(gzip.compress(b'{"dataset": "mine", "text": "a"}\n'))
    (tmp_path / "test.tsv").write_text("dataset\ttext\nmine\ta\n")
    # its text names ReXVal, its dataset column does not: a header split at the wrong delimiter is not one
    (tmp_path / "scores.csv").write_text("id;dataset;text\n1;mine;compared with rexval, better\n")
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\nthe\n")  # a tokenizer's files are not tables
    (tmp_path / "merges.txt").write_text("#version: 0.2\n" + "x" * 200_000 + "\n")  # a long line is no error
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["X"], "id2label": {"0": "a"}}))
    (tmp_path / "empty.jsonl").write_text("")
    assert restricted_reasons(tmp_path) == []
    (tmp_path / "a.zip").write_bytes(_zipped("a.txt", "x"))
    (tmp_path / "b.jsonl.zst").write_bytes(b"\x28\xb5\x2f\xfd cut short")  # unreadable with a zstd module or without
    assert restricted_reasons(tmp_path) == ["a.zip could not be read to check where its rows come from (and 1 "
                                            "other data file)"]


_MARKDOWN_ROWS = "|    | id | dataset | reference |\n|---:|---:|:--------|:----------|\n|  0 |  1 | rexval  | r |\n"


@pytest.mark.parametrize("name, data", [
    pytest.param("rows.md", _MARKDOWN_ROWS, id="markdown-table"),  # pandas' df.to_markdown()
    pytest.param("docs/sample.markdown", "# Rows\n\n" + json.dumps(_REXVAL_ROW) + "\n", id="markdown-json-lines"),
    pytest.param("README.md", "# My data\n\n" + _MARKDOWN_ROWS, id="a-card-written-by-hand"),
    pytest.param("rows.html", "<html><body><pre>\n" + json.dumps(_REXVAL_ROW) + "\n</pre></body></html>\n",
                 id="html-json-lines"),
    pytest.param("rows.htm.gz", _compressed("gzip", "<pre>\n" + json.dumps(_REXVAL_ROW) + "\n</pre>\n"),
                 id="htm-gz"),
    pytest.param("settings.toml", 'title = "x"\n[data]\ndataset = "rexval"\n', id="toml-key"),
    pytest.param("rows.toml", '[[rows]]\nid = "1"\ndataset = "rexval"\nreference = "r"\n', id="toml-rows"),
])
def test_markdown_html_and_toml_files_are_read_for_rows(tmp_path, name, data):
    """Markdown, HTML and TOML files were not taken for data: ReXVal rows in them went public unread. Markdown and
    HTML are read as a .txt file is (a JSON value a line, a delimited table: a Markdown table's "|"), TOML as YAML
    is (parsed, `dataset` keys however deep)."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data) if isinstance(data, bytes) else path.write_text(data, encoding="utf-8")
    assert restricted_reasons(tmp_path) == ["its rows come from rexval (PhysioNet credentialed data)"]


def test_hdf5_and_numpy_files_and_broken_toml_are_not_read_and_keep_the_folder_private(tmp_path):
    """HDF5 and NumPy files (binary arrays, which may hold rows: `datasets` loads HDF5) went public unchecked; the
    gate has no reader for them: each is named as a file it could not read, as an .xlsx is. So is TOML that does not
    parse."""
    import numpy as np

    np.save(tmp_path / "rows.npy", np.array(["rexval", "r", "c"]))
    assert restricted_reasons(tmp_path) == ["rows.npy could not be read to check where its rows come from"]
    (tmp_path / "rows.npy").unlink()
    np.savez(tmp_path / "rows.npz", dataset=np.array(["rexval"]))
    assert restricted_reasons(tmp_path) == ["rows.npz could not be read to check where its rows come from"]
    (tmp_path / "rows.npz").unlink()
    (tmp_path / "data.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(504))  # HDF5's signature and superblock room
    assert restricted_reasons(tmp_path) == ["data.h5 could not be read to check where its rows come from"]
    (tmp_path / "data.h5").unlink()
    (tmp_path / "pyproject.toml").write_text("[project\nname = 'x'\n")
    assert restricted_reasons(tmp_path) == ["pyproject.toml could not be read to check where its rows come from"]


def test_open_markdown_html_and_toml_files_and_radmetrics_own_card_may_go_public(tmp_path):
    """What a model or Space folder holds as Markdown, HTML and TOML is read and passes: prose, a table of open data,
    a pyproject.toml; and radmetrics' own card, unedited, whose evaluation table names ReXVal as the set the judge
    was scored on (not where any row comes from)."""
    from radmetrics.hub.cards import evaluation_table
    from radmetrics.hub_cards import card_with_marker

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text("It was trained on a private dataset.\nIt scores 0.7 on ReXVal.\n")
    (tmp_path / "docs" / "open.md").write_text(_MARKDOWN_ROWS.replace("rexval", "radgraph"))
    (tmp_path / "index.html").write_text("<table><tr><td>dataset</td></tr><tr><td>rexval</td></tr></table>\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "space"\ndependencies = ["gradio"]\n')
    evaluation = [{"dataset": "rexval", "dataset_name": "ReXVal (lm-eval task rexval_judge)", "metric": "kendall_tau",
                   "value": 0.5, "source": "lm-eval"}]
    (tmp_path / "README.md").write_text(card_with_marker("# Judge\n\n" + evaluation_table(evaluation) + "\n"))
    assert restricted_reasons(tmp_path) == []
    # the card edited by its owner (a paragraph added): its evaluation table is results, not rows, all the same
    card = tmp_path / "README.md"
    card.write_text(card.read_text().replace("# Judge\n", "# Judge\n\nOur lab's judge, fine-tuned for chest CT.\n"))
    assert restricted_reasons(tmp_path) == []


@pytest.mark.parametrize("value", ["RaTE-Eval", "rate-eval", "RATE EVAL", "mimic_cxr", "MIMIC CXR", "mimiccxr",
                                   "mimic_iv", "MIMIC-III", "mimic3", "rexval_v1", "ReXVal-1.0.0", "rexval2",
                                   "ReFISco", "physionet/mimic-cxr", "lab/rexval"])
def test_every_spelling_of_a_credentialed_dataset_keeps_the_folder_private(tmp_path, value):
    """Review 21 (H1): "RaTE-Eval", "mimic_cxr", "rexval_v1"... went public: only the exact converter names (any
    case) and the card's words matched."""
    (tmp_path / "train.jsonl").write_text(json.dumps({"dataset": value}) + "\n")
    assert restricted_reasons(tmp_path) == [f"its rows come from {value} (PhysioNet credentialed data)"]
    (tmp_path / "train.jsonl").unlink()
    partition = tmp_path / f"dataset={value.replace('/', '_')}"  # a Hive partition names it too
    partition.mkdir()
    (partition / "part.csv").write_text("candidate\nc\n")
    assert restricted_reasons(tmp_path) == [f"its rows come from {partition.name[8:]} (PhysioNet credentialed data)"]


@pytest.mark.parametrize("value", ["PhysioNetMIMIC", "ReXValMIMIC", "RadEvalTest", "xphysionet", "ReX-Val",
                                   "Rad-Eval", "re-fisco", "Re_FiS-co", "RaTE.Eval", "my_rexval", "mimic-cxr-jpg",
                                   "OpenMIMIC", "MIMICData", "lab-mimic-iv2", "rexvalidation", "myReXVal",
                                   "2023rexval",
                                   # review 23 (L1)
                                   "mimicv2", "MIMICv2", "MIMICdata", "CXRradeval", "myrexval", "ｒｅｘｖａｌ",
                                   "ＭＩＭＩＣ-ＣＸＲ",
                                   # review 24: a word start after "ß" (case-folded to "ss") was looked for one
                                   # letter early
                                   "StraßeCXRradeval", "ßßCXRradeval", "GroßCXRrateeval"])
def test_glued_or_hyphenated_credentialed_names_keep_the_folder_private(tmp_path, value):
    """Review 22 (L1): names glued to another word or split by a separator went public ("PhysioNetMIMIC" was
    private before review 21's fix). Distinctive names are found anywhere once separators are dropped, so an open
    name that contains one ("rexvalidation") stays private too: privacy comes first."""
    (tmp_path / "train.jsonl").write_text(json.dumps({"dataset": value}) + "\n")
    assert restricted_reasons(tmp_path) == [f"its rows come from {value} (PhysioNet credentialed data)"]


# "rexvalidation" is no longer here: review 22 (L1) matches restricted names with separators removed where a word
# starts ("physionet" anywhere), so it is private now (see the test above); names that only hold a restricted
# name's letters inside or across words stay open; the generic "mimic" still needs word boundaries
@pytest.mark.parametrize("value", ["mine", "my_reports", "radgraph", "open-i", "mimicry", "Mimicry", "MIMICRY",
                                   "mimicked", "rate_limits", "chexpert-plus", "separate", "evaluation", "radiology-eval",
                                   "accurate-evaluation", "upgradevalue", "corporate-eval", "AccurateEvaluation",
                                   "UpgradeValue", "MIMICRY", "mimicked"])
def test_open_dataset_names_may_go_public(tmp_path, value):
    (tmp_path / "train.jsonl").write_text(json.dumps({"dataset": value}) + "\n")
    (tmp_path / f"dataset={value}").mkdir()
    (tmp_path / f"dataset={value}" / "part.csv").write_text("candidate\nc\n")
    assert restricted_reasons(tmp_path) == []


def test_the_gate_checks_a_hf_local_dir_download_as_upload_folder_uploads_it(tmp_path):
    """Review 22 (M2): `hf download --local-dir` leaves .cache/huggingface/download/<file>.metadata and .lock files,
    which upload_folder never uploads (DEFAULT_IGNORE_PATTERNS); the gate called them unreadable data."""
    (tmp_path / "train.csv").write_text("text,label\nhi,1\n")
    (tmp_path / "config.json").write_text("{}")
    download = tmp_path / ".cache" / "huggingface" / "download"
    download.mkdir(parents=True)
    (download / "train.csv.metadata").write_text("a1b2c3\n4d5e6f\n1700000000.0\n")
    (download / "config.json.metadata").write_text("a1b2c3\n4d5e6f\n1700000000.0\n")
    (download / "config.json.lock").write_text("")
    (tmp_path / ".cache" / "huggingface" / ".gitignore").write_text("*")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "rexval.jsonl").write_text("not json")  # never uploaded either
    sub = tmp_path / "sub" / ".cache" / "huggingface"  # **/.cache/huggingface/** is ignored at any depth
    sub.mkdir(parents=True)
    (sub / "x.jsonl.metadata").write_text("{")
    assert restricted_reasons(tmp_path) == []
    # what is uploaded is still read: rows beside the cache, and a .cache folder that is not huggingface's
    (tmp_path / ".cache" / "other.jsonl").write_text(json.dumps(_REXVAL_ROW) + "\n")
    assert restricted_reasons(tmp_path) == ["its rows come from rexval (PhysioNet credentialed data)"]


@pytest.mark.parametrize("name, text", [
    pytest.param("train.csv.metadata", "a1b2c3\n4d5e6f\n1700000000.0\n", id="download-metadata"),
    pytest.param("train.csv.lock", "", id="empty-lock"),
    pytest.param("config.json.metadata", "1700000000.0\n12\n0\nabc\nregular\n\n1\n0\n", id="upload-metadata"),
])
def test_the_gate_takes_download_sidecars_beside_data_for_no_tables(tmp_path, name, text):
    """Review 22 (M2): huggingface_hub's .metadata/.lock sidecars, copied beside the data, are not tables; a file
    with any other content under such a name is still read for names or kept private."""
    (tmp_path / name).write_text(text)
    assert restricted_reasons(tmp_path) == []
    (tmp_path / name).write_text("dataset\nrexval\n")  # one column of single words: its words are read
    assert restricted_reasons(tmp_path) == ["its rows come from rexval (PhysioNet credentialed data)"]
    (tmp_path / name).write_text(json.dumps(_REXVAL_ROW) + "\n")  # anything else: unreadable, as train.jsonl.bak
    assert restricted_reasons(tmp_path) == [f"{name} could not be read to check where its rows come from"]


def test_a_text_file_whose_first_record_opens_a_long_quote_is_read(tmp_path):
    """Review 22 (L3): a vocab.txt whose first line is '"' ran csv's quoted field past its 131,072-character limit,
    and the file was called unreadable; the limit is raised inside the gate only, and restored after."""
    import csv

    limit = csv.field_size_limit()
    (tmp_path / "vocab.txt").write_text('"\n' + "\n".join(f"tok{i}" for i in range(30000)) + "\n")
    assert restricted_reasons(tmp_path) == []
    assert csv.field_size_limit() == limit
    (tmp_path / "vocab.txt").unlink()
    (tmp_path / "rows.csv").write_text('dataset,text\nrexval,"' + "x" * 200_000 + '"\n')  # a long field in a row
    assert restricted_reasons(tmp_path) == ["its rows come from rexval (PhysioNet credentialed data)"]
    assert csv.field_size_limit() == limit


@pytest.mark.parametrize("value", [{"name": "rexval"}, ["mine", {"name": "ReXVal"}], {"source": {"id": "rexval"}}])
def test_a_dataset_value_that_is_an_object_is_read(tmp_path, value):
    """Review 22 (L6): {"dataset": {"name": "rexval"}} went public: only string values were read."""
    (tmp_path / "train.jsonl").write_text(json.dumps({"dataset": value, "candidate": "c"}) + "\n")
    reasons = restricted_reasons(tmp_path)
    assert len(reasons) == 1 and reasons[0].startswith("its rows come from ") and "credentialed" in reasons[0]


@pytest.mark.parametrize("files", [
    pytest.param({"state.json": "{}", "data-00000-of-00001.arrow": b"xx"}, id="corrupt-arrow"),
    pytest.param({"state.json": "{}"}, id="arrow-files-missing"),
    pytest.param({"dataset_dict.json": '{"splits": ["train"]}'}, id="dataset-dict-without-splits"),
])
def test_a_broken_save_to_disk_folder_keeps_the_folder_private_without_a_traceback(tmp_path, files):
    """Review 21 (M3): datasets.load_from_disk's error escaped the gate as a traceback."""
    for name, data in files.items():
        (tmp_path / name).write_bytes(data) if isinstance(data, bytes) else (tmp_path / name).write_text(data)
    reasons = restricted_reasons(tmp_path)
    assert reasons[0].startswith("the saved dataset (save_to_disk) could not be read to check where its rows")
    with pytest.raises(PushRefused):
        check_public_allowed(tmp_path, "x")


def test_cards_written_by_hand_are_told_apart_from_rendered_ones(tmp_path):
    rendered = card_with_marker("# Judge\n\nScores reports.\n")
    assert not written_by_user(rendered)
    assert written_by_user(rendered.replace("Scores", "Rates"))  # edited after rendering
    assert not written_by_user("# Model card\n\n[More Information Needed]\n")  # a library's placeholder
    assert written_by_user("# My own card\n")
    card = tmp_path / "README.md"
    write_card(card, "# New\n", overwrite=False)  # no card yet
    assert card.read_text() == card_with_marker("# New\n")
    write_card(card, "# Newer\n", overwrite=False)  # an unedited rendered card is refreshed
    assert card.read_text() == card_with_marker("# Newer\n")
    card.write_text("# Mine\n")
    with pytest.raises(PushRefused) as info:
        write_card(card, "# Rendered\n", overwrite=False)
    assert str(info.value) == (f"{card} was written or edited by hand: not replacing it (pass --overwrite-card to "
                               "replace it with the rendered card)")
    assert card.read_text() == "# Mine\n"
    write_card(card, "# Rendered\n", overwrite=True)
    assert card.read_text() == card_with_marker("# Rendered\n")


# -- hub/__init__.py: push_folder, in this process, against a Hub-compatible server on 127.0.0.1 ------------------------
@pytest.fixture
def hub_here(tmp_path, monkeypatch):
    """A Hub-compatible server, with huggingface_hub (already imported, offline) pointed at it in this process."""
    from huggingface_hub import constants
    from hub_server import HubServer

    with HubServer(tmp_path / "hub") as server:
        monkeypatch.setattr(constants, "ENDPOINT", server.endpoint)
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                            server.endpoint + "/{repo_id}/resolve/{revision}/{filename}")
        monkeypatch.setenv("HF_TOKEN", "hf_test_token")
        yield server


def _judge_folder(tmp_path, card: str | None = None) -> Path:
    folder = tmp_path / "judge"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text("{}")
    if card is not None:
        (folder / "README.md").write_text(card)
    return folder


def test_push_folder_is_private_by_default_and_reports_what_it_did(tmp_path, hub_here):
    from radmetrics.hub import describe_push, push_folder

    folder = _judge_folder(tmp_path)
    result = push_folder(folder, "lab/judge")
    assert hub_here.repos[("model", "lab/judge")]["private"] is True
    assert result == {"url": f"{hub_here.endpoint}/lab/judge", "commit": result["commit"], "private": True,
                      "gated": False, "card_kept": False, "public_requested": False, "base_renamed": {}}
    assert isinstance(result["commit"], str) and result["commit"]
    assert describe_push(folder, result) == [
        f"Pushed {folder} to {hub_here.endpoint}/lab/judge (private; visibility read back from the Hub)"]
    data = push_folder(folder, "lab/data", repo_type="dataset", gated="manual", public=True)
    assert data["url"] == f"{hub_here.endpoint}/datasets/lab/data" and data["private"] is False
    assert hub_here.repos[("dataset", "lab/data")]["gated"] == "manual"
    assert describe_push(folder, data) == [
        f"Pushed {folder} to {hub_here.endpoint}/datasets/lab/data (public, gated manual; visibility read back "
        "from the Hub)"]


def test_push_folder_refuses_a_base_model_id_for_a_dataset_or_space_before_any_request(tmp_path, hub_here):
    """Review 47: `hub push --type dataset --base-model ID` is refused, but push_folder(repo_type="dataset",
    base_model_id=ID) pushed the data and dropped the id without a word."""
    from radmetrics.hub import push_folder

    folder = _judge_folder(tmp_path)
    for repo_type in ("dataset", "space"):
        with pytest.raises(RadmetricsError, match=f"base_model_id names a model's base: a {repo_type} push has none"):
            push_folder(folder, "lab/data", repo_type=repo_type, base_model_id="lab/base")
    assert not hub_here.requests


def test_push_folder_refuses_to_add_to_a_public_repo_unless_asked(tmp_path, hub_here):
    from radmetrics.hub import push_folder

    folder = _judge_folder(tmp_path)
    push_folder(folder, "lab/open", public=True)
    with pytest.raises(PushRefused) as info:
        push_folder(folder, "lab/open")
    assert str(info.value) == (f"lab/open is a public model repository on the Hub: pushing {folder} into it would "
                               "publish it. Pass --public to add to a public repository, or push to a new (private) "
                               "repo.")
    again = push_folder(folder, "lab/open", public=True)
    assert again["private"] is False and again["public_requested"] is True
    push_folder(folder, "lab/closed")
    kept_private = push_folder(folder, "lab/closed", public=True)  # an existing private repo stays private
    assert kept_private["private"] is True
    from radmetrics.hub import describe_push

    assert describe_push(folder, kept_private)[1] == (
        "Note: the repository already existed as private and stays private; change its visibility on the Hub if you "
        "mean to publish it.")


def test_push_folder_keeps_a_hand_written_card_on_the_hub(tmp_path, hub_here):
    from radmetrics.hub import describe_push, push_folder

    folder = _judge_folder(tmp_path, card="---\nlicense: mit\n---\n# Mine, by hand\n")
    push_folder(folder, "lab/carded")
    (folder / "README.md").write_text(card_with_marker("---\nlicense: mit\n---\n# Rendered\n"))
    kept = push_folder(folder, "lab/carded")
    assert kept["card_kept"] is True
    assert describe_push(folder, kept)[-1] == ("Note: kept the README.md on the Hub (written by hand); pass "
                                               "--overwrite-card to replace it.")
    replaced = push_folder(folder, "lab/carded", overwrite_card=True)
    assert replaced["card_kept"] is False


def test_push_folder_bad_arguments_are_one_line(tmp_path, hub_here):
    from radmetrics.hub import push_folder

    with pytest.raises(RadmetricsError, match=r"^Nothing to push: .*nope is not a folder$"):
        push_folder(tmp_path / "nope", "lab/x")
    with pytest.raises(RadmetricsError, match=r"^gated must be 'auto' or 'manual', not 'yes'$"):
        push_folder(_judge_folder(tmp_path), "lab/x", gated="yes")
    physionet = _judge_folder(tmp_path, card="# Derived from MIMIC-CXR\n")
    with pytest.raises(PushRefused, match=f"^Refusing to push {physionet} to lab/x publicly"):
        push_folder(physionet, "lab/x", public=True)
    assert not hub_here.repos


# -- meta/stats.py: small statistics, checked by hand and with scipy --------------------------------------------------
import math  # noqa: E402
import warnings  # noqa: E402

from radmetrics.meta import stats as meta_stats  # noqa: E402


def test_correlation_to_dict_has_every_field():
    c = meta_stats.Correlation(0.5, 0.1, 0.9, 0.04, 10, 100)
    assert c.to_dict() == {"value": 0.5, "ci_low": 0.1, "ci_high": 0.9, "p_value": 0.04, "n": 10, "resamples": 100}


def test_mae_of_nothing_is_nan_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "Mean of empty slice" would reach the user's screen
        out = meta_stats.mae([None], [1.0])
    assert math.isnan(out["mae"]) and math.isnan(out["std"]) and out["n"] == 0


def test_category_accuracy_is_per_category_not_per_report():
    # 3 reports x 2 categories; expert means 0.4 -> 0, 1.6 -> 2, 2.5 -> 2 (numpy rounds half to even: 3 is wrong)
    predicted = [[0, 2], [1, 2], [3, 3]]
    expert = [[0.4, 1.6], [1.0, 2.0], [2.5, 3.0]]
    assert meta_stats.category_accuracy(predicted, expert) == [2 / 3, 1.0]


def test_error_type_f1_recall_when_tp_equals_fn():
    # one category: human 2, model 1 -> TP 1, FP 0, FN 1: precision 1, recall 1/2, F1 2/3
    (row,) = meta_stats.error_type_f1([[2]], [[1]])
    assert row == {"precision": 1.0, "recall": 0.5, "f1": 2 / 3, "tp": 1.0, "fp": 0.0, "fn": 1.0}


def test_preference_accuracy_ties_and_empty():
    # pair 1 tied (wrong), pair 2 right, pair 3 wrong: 1/3
    assert meta_stats.preference_accuracy([0.5, 0.9, 0.1], [0.5, 0.2, 0.3], [True, True, True]) == 1 / 3
    assert meta_stats.preference_accuracy([1, 2], [2, 1], [True, True], higher_is_better=False) == 0.5
    assert math.isnan(meta_stats.preference_accuracy([], [], []))


def test_paired_randomization_defaults_to_1000_trials():
    out = meta_stats.paired_randomization_test([1, 2, 3, 4, 5], [1, 2, 3, 5, 4], [1, 2, 3, 4, 5], method="spearman")
    assert out["trials"] == 1000
    assert out["difference"] == pytest.approx(1 - 0.9)  # spearman 1.0 vs 0.9 (one swap of neighbours)


def test_rexamine_site_tests_equal_scipy_and_bonferroni():
    from scipy import stats as sp

    original = {"bleu": {"a": [0.1, 0.4, 0.3, 0.8], "b": [0.5, 0.5, 0.2, 0.9]},
                "errors": {"a": [3, 1, 2, 0], "b": [1, 1, 4, 2]}}
    standardized = {"bleu": {"a": [0.3, 0.5, 0.35, 0.9], "b": [0.4, 0.6, 0.1, 0.95]},
                    "errors": {"a": [2, 1, 1, 0], "b": [1, 0, 4, 1]}}
    rows = meta_stats.rexamine_site_tests(original, standardized, alpha=0.08, higher_is_better={"errors": False})
    assert [(r["metric"], r["site"]) for r in rows] == [("bleu", "a"), ("bleu", "b"), ("errors", "a"), ("errors", "b")]
    for r in rows:
        x, y = original[r["metric"]][r["site"]], standardized[r["metric"]][r["site"]]
        sign = -1 if r["metric"] == "bleu" else 1  # oriented so that higher = worse
        expected = sp.ttest_rel([sign * v for v in y], [sign * v for v in x])
        assert r == {"metric": r["metric"], "site": r["site"], "mean_original": pytest.approx(sum(x) / 4),
                     "mean_standardized": pytest.approx(sum(y) / 4), "t": pytest.approx(expected.statistic),
                     "p_value": pytest.approx(expected.pvalue), "threshold": 0.02,
                     "significant": bool(expected.pvalue < 0.02), "t_convention": "paper"}
    raw = meta_stats.rexamine_site_tests(original, standardized, convention="raw")
    assert raw[2]["t"] == pytest.approx(sp.ttest_rel(original["errors"]["a"], standardized["errors"]["a"]).statistic)
    assert meta_stats.rexamine_site_tests({}, {}) == []
    with pytest.raises(ValueError, match=r"^unknown convention 'other': 'paper' or 'raw'$"):
        meta_stats.rexamine_site_tests(original, standardized, convention="other")


def test_per_site_spearman_equals_scipy_within_each_site():
    from scipy import stats as sp

    scores = [0.1, 0.5, 0.3, 0.9, 0.2, 0.8, 0.4, 0.6]
    expert = [1, 3, 2, 4, 4, 1, 3, 3]  # site a: rho 0.32, site b: 0.40 (different, so a swapped site shows)
    sites = ["b", "a", "b", "a", "b", "a", "b", "a"]
    out = meta_stats.per_site_spearman(scores, expert, sites, resamples=20, seed=1)
    assert list(out) == ["a", "b"]
    for site in "ab":
        idx = [i for i, s in enumerate(sites) if s == site]
        expected = sp.spearmanr([scores[i] for i in idx], [expert[i] for i in idx])
        assert out[site]["value"] == pytest.approx(expected.statistic) and out[site]["n"] == 4
        assert out[site]["resamples"] == 20
    assert out["a"]["value"] != pytest.approx(out["b"]["value"])


def test_correlation_defaults_kendall_1000_resamples_seed_0():
    from scipy import stats as sp

    x, y = [1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5]
    default = meta_stats.correlation(x, y)
    assert default.value == pytest.approx(sp.kendalltau(x, y).statistic) and default.resamples == 1000
    seeded = meta_stats.correlation(x, y, seed=0)
    assert (default.ci_low, default.ci_high) == (seeded.ci_low, seeded.ci_high)
    assert (default.ci_low, default.ci_high) != (lambda c: (c.ci_low, c.ci_high))(meta_stats.correlation(x, y, seed=1))
    short = meta_stats.correlation([1, 2], [2, 1])
    assert all(math.isnan(v) for v in (short.value, short.ci_low, short.ci_high, short.p_value))
    assert (short.n, short.resamples) == (2, 0)


def test_paired_randomization_is_seeded_by_default():
    args = ([1, 2, 3, 4, 5, 6], [2, 1, 3, 5, 4, 6], [1, 2, 3, 4, 6, 5])
    first = meta_stats.paired_randomization_test(*args, trials=200, method="spearman")
    assert first == meta_stats.paired_randomization_test(*args, trials=200, method="spearman", seed=0)
    assert first["p_value"] != meta_stats.paired_randomization_test(*args, trials=200, method="spearman",
                                                                    seed=1)["p_value"]


def test_ensemble_average_with_a_constant_metric():
    # metric 2 is constant: z-scores of 0 (not a division by zero); metric 1 z-scored by its population std
    out = meta_stats.ensemble_average([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])
    z = 1 / math.sqrt(2 / 3)
    assert out == pytest.approx([-z / 2, 0.0, z / 2])
    assert meta_stats.ensemble_average([[1.0, 3.0], [3.0, 5.0]], standardize=False) == [2.0, 4.0]


def test_privacy_gate_reads_cards_and_rows_that_are_not_utf8(tmp_path):
    """A card or a JSONL file with bytes that are not UTF-8 is still read (replaced), never a crash."""
    (tmp_path / "README.md").write_bytes(b"# Data \xff\xfe\n\nFrom PhysioNet.\n")
    (tmp_path / "rows.jsonl").write_bytes(b'{"dataset": "rate_eval", "text": "\xff"}\n\xfe\xff\n')
    reasons = restricted_reasons(tmp_path)
    assert reasons == ["its card (README.md) says 'PhysioNet'",
                       "its rows come from rate_eval (PhysioNet credentialed data)",
                       "rows.jsonl could not be read to check where its rows come from"]  # its line of \xfe\xff
    with pytest.raises(PushRefused) as info:
        check_public_allowed(tmp_path, "data")
    assert str(info.value).startswith(f"Refusing to push data publicly: {'; '.join(reasons)}. PhysioNet's")
    card = tmp_path / "README.md"
    with pytest.raises(PushRefused, match="written or edited by hand"):
        write_card(card, "# Rendered\n", overwrite=False)


@pytest.mark.parametrize("text", ["# Judge  \nTwo spaces end the line above.  \n", "# Model X\n"])
def test_rendered_cards_ending_in_spaces_or_any_letter_are_recognised(text):
    assert not written_by_user(card_with_marker(text))


def test_rendered_cards_are_written_and_recognised_as_utf8_whatever_the_locale(tmp_path):
    card = tmp_path / "README.md"
    code = ("import sys; from radmetrics.hub.privacy import write_card; "
            "write_card(sys.argv[1], '# Gr\\u00f6\\u00dfe \\u00d7 2\\n', overwrite=False); "
            "write_card(sys.argv[1], '# Gr\\u00f6\\u00dfe \\u00d7 3\\n', overwrite=False)")
    write_card(card, "# Größe × 1\n", overwrite=False)
    with _ascii_locale():  # in this process, as an ASCII locale would default it; then for real, under C:
        write_card(card, "# Größe × 1\n", overwrite=False)
        assert not written_by_user(card.read_bytes().decode("utf-8"))
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    run = subprocess.run([sys.executable, "-c", code, str(card)], capture_output=True, text=True, env=env,
                         cwd=Path(__file__).resolve().parents[1])
    assert run.returncode == 0, run.stderr[-2000:]
    assert card.read_text(encoding="utf-8") == card_with_marker("# Größe × 3\n")


# -- green/parse.py: what the judge meant, the rules it needed, and why not when it cannot be read ---------------------
# Answers written as judges drift from GREEN App. GA.1's template (the drift corpus covers the official forms).
GA = "(a) False report of a finding in the candidate"
GB = "(b) Missing a finding present in the reference"
GC = "(c) Misidentification of a finding's anatomic location/position"
GD = "(d) Misassessment of the severity of a finding"
GE = "(e) Mentioning a comparison that isn't in the reference"
GF = "(f) Omitting a comparison detailing a change from a prior study"
GX = "[Explanation]:\nDiffers.\n\n"
GSIG = "[Clinically Significant Errors]:\n"
GINS = "[Clinically Insignificant Errors]:\n"
GMAT = "[Matched Findings]:\n"


def _errs(*counts):
    return "\n".join(f"{m}: {n}" for m, n in zip((GA, GB, GC, GD, GE, GF), counts, strict=False))


GZERO = _errs("0.", "0.", "0.", "0.", "0.", "0.")
GREEN_CASES = {
 "chat-debris": "<|user|>[Matched Findings]: 9.<|assistant|>" + GX.replace("Differs.", "Differs <unk>here</s>.") + GSIG + GZERO + "\n\n" + GMAT + "2. a; b</s>",
 "echo-without-explanation": GSIG + "(a) <Error Type>: <The number of errors>.\n" + GMAT + "<The number of matched findings>.\n\n" + GSIG + _errs("1. x", "0.", "0.", "0.", "0.", "0.") + "\n\n" + GMAT + "1. y",
 "blank-line-once": GX + GSIG + _errs("1. x", "0.", "0.", "", "", "").split("\n(d)")[0] + "\n\n" + "\n".join(_errs("0.", "0.", "0.", "0.", "0.", "0.").split("\n")[3:]) + "\n\n" + GMAT + "1. y",
 "count-in-sentence": GX + GSIG + GZERO + "\n\n" + GMAT + "There are 2 matched findings: effusion and cardiomegaly.",
 "counts-without-periods": GX + GSIG + _errs("1", "0", "2 - p; q", "0", "0", "0") + "\n\n" + GMAT + "1. y",
 "count-before-a-list": GX + GSIG + _errs("2 (see below); 1. x; 2. y", "0.", "0.", "0.", "0.", "0.") + "\n\n" + GMAT + "1. y",
 "items-on-one-line": GX + GSIG + f"{GA}: 1. left effusion. {GB}: 2. nodule; mass\n" + "\n".join(GZERO.split("\n")[2:]) + "\n\n" + GMAT + "1. y",
 "lettered-with-numbers-inside": GX + GSIG + f"{GA}: 1. (2) left effusion.\n" + "\n".join(GZERO.split("\n")[1:]) + "\n\n" + GMAT + "1. y",
 "wording-without-colon": GX + GSIG + GA.lower()[4:] + " - 2. p; q\n" + "\n".join(GZERO.split("\n")[1:]) + "\n\n" + GMAT + "1. y",
 "marker-wording-without-colon": GX + GSIG + "(a) false report of a finding in the candidate = 2. p; q\n" + "\n".join(GZERO.split("\n")[1:]) + "\n\n" + GMAT + "1. y",
 "official-count-after-see-below": GX + GSIG + f"{GA}: see below: 1. x.\n" + "\n".join(GZERO.split("\n")[1:]) + "\n\n" + GMAT + "1. y",
 "empty-sections": GX + GSIG + GINS + GMAT + "1. y",
 "zero-section": GX + GSIG + "(a)-(f): 0.\n\n" + GMAT + "None.",
 "matched-empty": GX + GMAT + GSIG + GZERO,
 "no-errors-sentence": GX + GSIG + "No clinically significant errors.\n\n" + GMAT + "1. y",
 "matched-stated-then-listed": GX + GSIG + GZERO + "\n\n" + GMAT + "2.\n1. effusion\n2. cardiomegaly",
 "matched-word": GX + GSIG + GZERO + "\n\n" + GMAT + "two: effusion and cardiomegaly",
 "matched-bold": GX + GSIG + GZERO + "\n\n" + GMAT + "**2**\neffusion, cardiomegaly",
 "matched-counted": GX + GSIG + GZERO + "\n\n" + GMAT + "2 matched: effusion, cardiomegaly",
 "matched-numbered-list": GX + GSIG + GZERO + "\n\n" + GMAT + "1) effusion\n2) cardiomegaly\n3) nodule",
 "matched-intro-then-list": GX + GSIG + GZERO + "\n\n" + GMAT + "The matched findings are:\n1. effusion\n2. nodule",
 "matched-one-with-dash": GX + GSIG + GZERO + "\n\n" + GMAT + "1 - effusion",
 "header-forms": "**Explanation**:\nDiffers.\n\n### Clinically Significant Errors\n" + GZERO + "\n\n**Matched Findings**:\n1. y",
 "template-then-filled-matched": GX + GSIG + GZERO + "\n\n" + GMAT + "<The number of matched findings>.\n" + GMAT + "2. y; z",
}
GREEN_ERRORS = {
 "not-text": 5,
 "empty": " </s> ",
 "no-sections": "The candidate is fine.",
 "count-cut-off": GX + GMAT + "1. y\n\n" + GSIG + _errs("0.", "0.", "0.", "0.", "0.", "1"),
 "no-count-cut-off": GX + GMAT + "1. y\n\n" + GSIG + _errs("0.", "0.", "0.", "0.", "0.", "").rstrip(),
 "no-count-mid": GX + GSIG + _errs("", "0.", "0.", "0.", "0.", "0.") + "\n\n" + GMAT + "1. y",
 "numbers-neither": GX + GSIG + _errs("3 (x); 1. a; 3. b", "0.", "0.", "0.", "0.", "0.") + "\n\n" + GMAT + "1. y",
 "two-counts": GX + GSIG + GA + ": 2. " + "a" * 70 + "\n" + GZERO + "\n\n" + GMAT + "1. y",
 "no-but-counts": GX + GSIG + "No significant errors, as far as I can tell after reading both reports carefully.\n" + _errs("1. x", "0.", "0.", "0.", "0.", "0.") + "\n\n" + GMAT + "1. y",
 "matched-cut-off": GX + GSIG + GZERO + "\n\n" + GMAT + "2)",
 "matched-not-whole": GX + GSIG + GZERO + "\n\n" + GMAT + "1.5 findings, more or less, given how the two reports describe it",
 "matched-zero-then-list": GX + GSIG + GZERO + "\n\n" + GMAT + "There are no matched findings between the two reports, none at all.\n1. effusion",
 "matched-stated-disagrees": GX + GSIG + GZERO + "\n\n" + GMAT + "There are 3 matched findings:\n1. effusion\n2. nodule",
 "two-sections-differ": GX + GSIG + GZERO + "\n\n" + GMAT + "1. y\n\n" + GMAT + "2. y; z",
 "significant-only-template": GX + GSIG + "(a) <Error Type>: <The number of errors>.\n\n" + GMAT + "1. y",
}
GREEN_EXPECTED = {
    'chat-debris': ('000000', None, 2, 'Differs here.', []),
    'echo-without-explanation': ('100000', None, 1, '', ['template-echo']),
    'blank-line-once': ('100000', None, 1, 'Differs.', ['blank-line-in-section']),
    'count-in-sentence': ('000000', None, 2, 'Differs.', ['count-in-sentence']),
    'counts-without-periods': ('102000', None, 1, 'Differs.', ['count-form']),
    'count-before-a-list': ('200000', None, 1, 'Differs.', ['count-form']),
    'items-on-one-line': ('120000', None, 1, 'Differs.', ['items-on-one-line']),
    'lettered-with-numbers-inside': ('100000', None, 1, 'Differs.', []),
    'wording-without-colon': ('200000', None, 1, 'Differs.', ['category-wording']),
    'marker-wording-without-colon': ('200000', None, 1, 'Differs.', []),
    'official-count-after-see-below': ('100000', None, 1, 'Differs.', []),
    'empty-sections': ('000000', '000000', 1, 'Differs.', ['empty-section']),
    'zero-section': ('000000', None, 0, 'Differs.', ['zero-section']),
    'matched-stated-then-listed': ('000000', None, 2, 'Differs.', []),
    'matched-word': ('000000', None, 2, 'Differs.', ['count-word']),
    'matched-bold': ('000000', None, 2, 'Differs.', ['count-form']),
    'matched-counted': ('000000', None, 2, 'Differs.', ['count-form']),
    'matched-numbered-list': ('000000', None, 3, 'Differs.', ['numbered-list']),
    'matched-intro-then-list': ('000000', None, 2, 'Differs.', ['count-after-sentence', 'numbered-list']),
    'matched-one-with-dash': ('000000', None, 1, 'Differs.', ['count-form']),
    'header-forms': ('000000', None, 1, 'Differs.', ['header-form']),
    'template-then-filled-matched': ('000000', None, 2, 'Differs.', ['template-echo']),
    'matched-empty': ('000000', None, 0, 'Differs.', ['empty-section']),
    'no-errors-sentence': ('000000', None, 1, 'Differs.', []),
}
GREEN_MESSAGES = {
    'not-text': 'judge output is int, not text',
    'empty': 'empty judge output',
    'no-sections': 'no [Clinically Significant Errors] section and no [Matched Findings] section (truncated or not GREEN format)',
    'count-cut-off': "[Clinically Significant Errors] item (f): the count 1 ends the output (cut off?) in line '(f) Omitting a comparison detailing a change from a prior study: 1'",
    'no-count-cut-off': "[Clinically Significant Errors] item (f) has no count (cut off?) in line '(f) Omitting a comparison detailing a change from a prior study:'",
    'no-count-mid': "[Clinically Significant Errors] item (a) has no count in line '(a) False report of a finding in the candidate:'",
    'numbers-neither': "[Clinically Significant Errors] item (a): numbers 3, 1, 3 are neither one count nor a list 1..n in line '(a) False report of a finding in the candidate: 3 (x); 1. a; 3. b'",
    'two-counts': "[Clinically Significant Errors] gives two counts for (a): '(a) False report of a finding in the candidate: 2. aaaaaaaaa' and '(a) False report of a finding in the candidate: 0.'",
    'no-but-counts': "[Clinically Significant Errors] starts with 'No significant errors, as far as I can tell after reading bo' but its items count errors",
    'matched-cut-off': '[Matched Findings]: the count 2 ends the output (cut off?)',
    'matched-not-whole': "[Matched Findings]: '1.5 findings, more or less, given how th' is not a whole count",
    'matched-zero-then-list': "[Matched Findings] says 'There are no matched findings between the two reports, none ' and then lists '1. effusion'",
    'matched-stated-disagrees': "[Matched Findings] says '3 matched findings' but lists 2",
    'two-sections-differ': 'two [Matched Findings] sections with different counts',
    'significant-only-template': "the output only repeats the template's placeholders, with no filled analysis",
}


from radmetrics.green.parse import GreenParseError, clean_response, parse_green  # noqa: E402


@pytest.mark.parametrize("name", list(GREEN_CASES))
def test_green_reads_drifted_answers_and_names_each_rule(name):
    """Counts (a)-(f), insignificant counts, matched findings, explanation, and the exact leniency rules."""
    analysis = parse_green(GREEN_CASES[name])
    significant, insignificant, matched, explanation, leniency = GREEN_EXPECTED[name]
    assert "".join(str(analysis.significant[x]) for x in "abcdef") == significant
    if insignificant is None:
        assert analysis.insignificant is None
    else:
        assert "".join(str(analysis.insignificant[x]) for x in "abcdef") == insignificant
    assert (analysis.matched_findings, analysis.explanation, analysis.leniency) == (matched, explanation, leniency)
    assert analysis.format == ("tolerant" if leniency else "official")


def test_green_error_sentences_of_items_on_one_line_and_of_empty_sections():
    assert {k: v for k, v in parse_green(GREEN_CASES["items-on-one-line"]).significant_sentences.items() if v} == {
        "a": ["left effusion."], "b": ["nodule", "mass"]}
    assert parse_green(GREEN_CASES["empty-sections"]).significant_sentences == {x: [] for x in "abcdef"}
    assert parse_green(GREEN_CASES["zero-section"]).significant_sentences == {x: [] for x in "abcdef"}
    assert parse_green(GREEN_CASES["no-errors-sentence"]).significant_sentences == {x: [] for x in "abcdef"}
    zero_errors = parse_green(GX + GSIG + "0 errors.\n\n" + GMAT + "1. y")
    assert zero_errors.leniency == ["zero-section"] and zero_errors.significant_sentences == {x: [] for x in "abcdef"}


@pytest.mark.parametrize("name", list(GREEN_ERRORS))
def test_green_unreadable_answers_say_why(name):
    with pytest.raises(GreenParseError) as info:
        parse_green(GREEN_ERRORS[name])
    assert str(info.value) == GREEN_MESSAGES[name]


def test_green_clean_response_as_upstream():
    assert clean_response("<|user|>q<|assistant|>[Explanation]: y<unk> z</s>") == " y z"


def test_repo_visibility_fails_closed():
    """A repo_info without a 'private' field is read as public: the gate must never assume private."""
    from radmetrics.hub import repo_visibility

    class Info:
        pass

    class Api:
        def __init__(self, info):
            self.info = info

        def repo_info(self, repo_id, repo_type):
            return self.info

    assert repo_visibility(Api(Info()), "lab/x", "model") is False
    private = Info()
    private.private = True
    assert repo_visibility(Api(private), "lab/x", "model") is True


def test_push_folder_to_a_space_a_token_and_gated_auto(tmp_path, hub_here):
    from radmetrics.hub import push_folder

    folder = _judge_folder(tmp_path)
    space = push_folder(folder, "lab/widget", repo_type="space")
    assert space["url"] == f"{hub_here.endpoint}/spaces/lab/widget" and space["private"] is True
    push_folder(folder, "lab/auto", gated="auto", token="hf_explicit_token")
    assert hub_here.repos[("model", "lab/auto")]["gated"] == "auto"
    sent = [headers.get("Authorization") or headers.get("authorization") for method, path, headers in
            hub_here.requests if "lab/auto" in path or method == "POST"]
    assert "Bearer hf_explicit_token" in sent


def test_push_folder_asks_the_hub_to_check_the_card_before_creating_anything(tmp_path, hub_here):
    from radmetrics.hub import push_folder, validate_card

    folder = _judge_folder(tmp_path, card="---\nlicense: not-a-licence\n---\n# Judge\n")
    with pytest.raises(RadmetricsError) as info:
        push_folder(folder, "lab/refused", repo_type="dataset")
    assert str(info.value) == (f"The Hub refuses the card {folder / 'README.md'}: \"license\" must be one of the Hub "
                               "license identifiers, got 'not-a-licence'")  # the Hub's reply, on one line
    assert hub_here.validated[-1][0] == "dataset" and not hub_here.repos
    (folder / "README.md").write_text("---\nlicense: mit\n---\n# Judge\n")
    validate_card(folder / "README.md", endpoint=hub_here.endpoint + "/")  # a trailing "/" is no "//api"
    assert hub_here.validated[-1] == ("model", [])


def test_a_hand_written_dataset_card_on_the_hub_stays_as_it_is(tmp_path, hub_here):
    from radmetrics.hub import push_folder

    hand = "---\nlicense: mit\n---\n# Größe, by hand\n"
    folder = _judge_folder(tmp_path, card=hand)
    assert push_folder(folder, "lab/ds", repo_type="dataset")["card_kept"] is False
    # the same card again: nothing to keep, also when files are opened as under an ASCII locale
    with _ascii_locale():
        assert push_folder(folder, "lab/ds", repo_type="dataset")["card_kept"] is False
    (folder / "README.md").write_text(card_with_marker("---\nlicense: mit\n---\n# Rendered\n"))
    assert push_folder(folder, "lab/ds", repo_type="dataset")["card_kept"] is True
    on_hub = hub_here.folder("dataset", "lab/ds") / "README.md"
    assert on_hub.read_text(encoding="utf-8") == hand  # not uploaded over
    on_hub.write_bytes(b"---\nlicense: mit\n---\n# Edited on the Hub \xff\n")  # not UTF-8: read, replaced
    assert push_folder(folder, "lab/ds", repo_type="dataset")["card_kept"] is True


def test_correlation_bad_input_and_missing_pairs():
    with pytest.raises(ValueError, match=r"^3 scores but 2 expert values$"):
        meta_stats.correlation([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match=r"^pearson$"):
        meta_stats.correlation([1, 2, 3], [1, 2, 3], method="pearson")
    nothing = meta_stats.correlation([None, None, None], [1, 2, 3])
    assert nothing.n == 0 and math.isnan(nothing.value)


def test_bootstrap_ci_is_the_2_5_and_97_5_percentiles_of_the_resampled_taus():
    """Continuous data (no ties), so that a percentile off by a fraction moves the interval."""
    import numpy as np
    from scipy import stats as sp

    rng = np.random.default_rng(7)
    x = rng.normal(size=15)
    y = x + rng.normal(size=15)
    out = meta_stats.correlation(list(x), list(y), resamples=300, seed=3)
    draw, taus = np.random.default_rng(3), []
    for _ in range(300):  # the percentile bootstrap of pairs, written out here
        idx = draw.integers(0, 15, 15)
        tau = sp.kendalltau(x[idx], y[idx]).statistic
        if not math.isnan(tau):
            taus.append(tau)
    assert (out.ci_low, out.ci_high) == pytest.approx(tuple(np.percentile(taus, [2.5, 97.5])), abs=1e-12)
