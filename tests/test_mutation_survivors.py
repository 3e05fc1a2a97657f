"""Tests written to kill mutants that survived tools/mutation.py (see TESTING.md, "Mutation testing")."""
from __future__ import annotations

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
    return f"{socket.gethostname()}:{os.getppid()}:other"


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
    assert cache_module._owner_alive(f"{host}:1:x")  # pid 1 exists, owned by root: PermissionError -> alive


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
                                   json.dumps({"prompt": "p1", "response": "r1 again"})])
    judge = ReplayJudge(path=str(path))
    seen = []
    assert judge.generate(["p2", "p1"], on_result=lambda i, text: seen.append((i, text))) == ["r2", "r1 again"]
    assert seen == [(0, "r2"), (1, "r1 again")]  # the last line for a prompt wins
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


def test_replay_missing_prompt_names_its_start(tmp_path):
    path = _replay_file(tmp_path, [json.dumps({"prompt": "p", "response": "r"})])
    prompt = "".join(chr(ord("a") + i % 26) for i in range(100))
    with pytest.raises(RadmetricsError) as info:
        ReplayJudge(path=str(path)).generate(["p", prompt])
    assert str(info.value) == (f"replay file {path} has no response for this row's prompt (starting "
                               f"{prompt[:60]!r}...); prompts must match exactly, including whitespace.")
    assert info.value.prompt_index == 1


def test_replay_file_is_read_as_utf8_whatever_the_locale(tmp_path):
    """A recorded answer with non-ASCII text (e.g. '5 × 4 mm') under a C/ASCII locale (Windows: cp1252)."""
    path = _replay_file(tmp_path, [json.dumps({"prompt": "Größe", "response": "5 × 4 mm"}, ensure_ascii=False)])
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
    (H + "0.5 * 2 " + "c" * 60, "[Overall Accuracy Score] has no readable number: '0.5 * 2 " + "c" * 52 + "'"),
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
    # the score line is the first: a number further down (a count of findings) is not read as the score
    with pytest.raises(VertParseError, match="has no readable number"):
        read_bare_score("Score:\n2 findings missed\n0.7")


def test_vert_reads_green_counts_when_the_judge_wrote_them():
    text = green_answer({"a": 2, "f": 1}, {"b": 1}, 3)
    counts = read_counts(text)
    assert set(counts) == {"significant", "insignificant", "matched_findings", "green_leniency"}
    assert counts["significant"] == {"a": 2, "b": 0, "c": 0, "d": 0, "e": 0, "f": 1}
    assert counts["insignificant"] == {"a": 0, "b": 1, "c": 0, "d": 0, "e": 0, "f": 0}
    assert counts["matched_findings"] == 3 and counts["green_leniency"] == []
    assert read_counts(H + "0.5") == {}
