"""API keys never leave the process: a server that echoes the key everywhere, at every fault kind.

The fake server (tests/openai_server.py, echo_key=True) puts the request's Authorization value in a response
header, in every error body, in garbage pages and in a field of every successful body. Some error bodies
place the key across the 200-character cut radmetrics applies to error details, at seeded offsets, so that
redacting after truncating would leave a piece of it. The check: no run of more than 4 characters of the key
appears in the results file, the summary, the cache (database and WAL), the logs (DEBUG, httpx included),
stdout / stderr, the rows' reasons, repr() of the judge, or the text of any exception.
"""
from __future__ import annotations

import json
import re
import logging
import os
import random
import string
import subprocess
import sys
import traceback

import pytest
from conftest import REPO
from green_answers import green_answer
from openai_server import FakeOpenAIServer

import radmetrics

RNG = random.Random(18)  # seeded: the same key and the same cut positions every run
KEY = "sk-" + "".join(RNG.choices(string.ascii_letters + string.digits, k=40))
NUMERIC_KEY = int("".join(RNG.choices("123456789", k=24)))  # `--judge-option api_key=...` parses as a number

ANSWER = green_answer({"a": 1, "f": 1}, {"c": 1}, 3)
FAULTS = ["429", "500", "503", "timeout", "reset", "garbage", "truncated", "empty"]  # retried
CLIENT_ERRORS = ["401", "400", "403", "404"]  # not retried: the body goes into the row's reason
N_ROWS = 12


def leaked_runs(text: str, key: str, run: int = 5) -> list[str]:
    """Every piece of the key of `run` characters that occurs in text. Object addresses in debug lines
    (`at 0x7f2744483490`) and hash digests (the cache keys: 32+ hex characters with a letter among them) are
    left out: a numeric key's digits turn up in them by chance (a flaky failure, once the judge's identity held
    the server's port, so the cache keys changed from run to run). A leaked numeric key has no letters in it."""
    text = re.sub(r"0x[0-9a-fA-F]+", "0x", text)
    text = re.sub(r"(?<![0-9a-fA-F])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{32,}(?![0-9a-fA-F])", "<digest>", text)
    return sorted({key[i: i + run] for i in range(len(key) - run + 1) if key[i: i + run] in text})


def straddling_error_body(cuts):
    """Error bodies whose key starts `k` characters before position 200 (the detail cut), k from `cuts`."""

    def body(auth: str, n: int) -> bytes:
        key_at = 200 - cuts[n % len(cuts)]
        head = '{"error": {"message": "'
        pad = "x" * (key_at - len(head) - len("Bearer "))
        return (head + pad + auth + '", "type": "invalid_request_error"}}').encode()

    return body


def script():
    """Row 1 meets every retried fault in turn, then a 401; then 400, 403, 404; then 500 until it gives up;
    the remaining rows are answered."""
    return FAULTS + CLIENT_ERRORS + ["500"] * 9


def pairs():
    return [(f"Reference {i}: small left effusion.", f"Candidate {i}: small effusion.") for i in range(N_ROWS)]


def key_cuts(key: str) -> list[int]:
    """Seeded cut positions inside the key, each leaving at least 5 of its characters before the cut."""
    rng = random.Random(len(key))
    return [rng.randint(5, len(key) - 1) for _ in range(8)]


@pytest.mark.parametrize("key, key_from", [(KEY, "environment"), (KEY, "option"), (str(NUMERIC_KEY), "option")],
                         ids=["env", "option", "numeric-option"])
def test_cli_run_with_a_key_echoing_server_leaks_nothing(tmp_path, key, key_from):
    src, out, cache = tmp_path / "pairs.jsonl", tmp_path / "out.jsonl", tmp_path / "cache.sqlite"
    src.write_text("".join(json.dumps({"reference": r, "candidate": c}) + "\n" for r, c in pairs()))
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    if key_from == "environment":
        env["OPENAI_API_KEY"] = key
    with FakeOpenAIServer(lambda prompt: ANSWER, script=script(), echo_key=True,
                          error_body=straddling_error_body(key_cuts(key))) as server:
        args = ["score", "-m", "green", "-i", str(src), "-o", str(out), "--backend", "openai", "--base-url",
                server.base_url, "--judge", "judge-model", "--cache", str(cache), "--no-progress",
                "--judge-option", "concurrency=1", "--judge-option", "max_retries=8",
                "--judge-option", "backoff=0.001", "--judge-option", "timeout=0.5"]
        if key_from == "option":
            args += ["--judge-option", f"api_key={key}"]
        # DEBUG logging for every logger (httpx, httpcore, radmetrics) onto stderr
        code = ("import logging, sys; logging.basicConfig(level=logging.DEBUG); from radmetrics.cli import main; "
                "sys.argv = ['radmetrics'] + sys.argv[1:]; main()")
        run = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True, env=env)
    leaks = {name: leaked_runs(text, key) for name, text in [("stdout", run.stdout), ("stderr", run.stderr)]}
    if key_from == "option" and key.isdigit() and run.returncode == 2:
        # a numeric key may be refused as an option value; then it is one line, with no part of the key
        assert "Traceback" not in run.stderr and run.stderr.strip().count("\n") < 3, run.stderr[-2000:]
        assert leaks == {"stdout": [], "stderr": []}, "the key leaked into the error"
        return
    assert run.returncode == 0, run.stderr[-3000:]
    assert all(r["headers"]["Authorization"] == f"Bearer {key}" for r in server.requests)  # the key was used
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    reasons = [r["reason"] for r in rows]
    assert reasons[0].startswith("judge call failed: HTTP 401: ")  # row 1: the 8 retried faults, then 401
    assert [r.split(": ")[1] for r in reasons[1:4]] == ["HTTP 400", "HTTP 403", "HTTP 404"]
    assert reasons[4] == "judge call failed: gave up after 9 attempts: HTTP 500"
    assert all(r["parsed"] for r in rows[5:]) and len(rows) == N_ROWS
    assert "DEBUG" in run.stderr  # the logs were on
    files = [out, tmp_path / "out.jsonl.summary.json", *tmp_path.glob("cache.sqlite*")]
    assert len(files) >= 3
    for f in files:
        leaks[f.name] = leaked_runs(f.read_bytes().decode("utf-8", "replace"), key)
    assert all(v == [] for v in leaks.values()), {k: v for k, v in leaks.items() if v}


@pytest.mark.parametrize("key", [KEY, NUMERIC_KEY], ids=["text", "number"])
def test_python_api_with_a_key_echoing_server_leaks_nothing(tmp_path, caplog, key):
    caplog.set_level(logging.DEBUG)
    refs, cands = zip(*pairs())
    texts: list[str] = []
    options = {"api_key": key, "concurrency": 1, "max_retries": 8, "backoff": 0.001, "timeout": 0.5}
    with FakeOpenAIServer(lambda prompt: ANSWER, script=script(), echo_key=True,
                          error_body=straddling_error_body(key_cuts(str(key)))) as server:
        try:
            result = radmetrics.score("green", refs, cands, backend="openai", judge="judge-model",
                                      cache=tmp_path / "c.sqlite", progress=False,
                                      judge_options={"base_url": server.base_url, **options})
            judge = radmetrics.get_judge("openai", model="judge-model", cache=tmp_path / "c.sqlite",
                                         base_url=server.base_url, **options)
        except radmetrics.RadmetricsError as e:  # a numeric key may be refused: the message must not show it
            result = judge = None
            texts.append("".join(traceback.format_exception(e)))
    texts.append(caplog.text)
    if result is not None:
        assert sum(j.parsed for j in result.judgments) == N_ROWS - 5
        assert all("***" in j.reason for j in result.judgments[:4])  # the echoed key reached the reasons, masked
        texts += [json.dumps([j.to_dict() for j in result.judgments]), json.dumps(result.summary, default=str),
                  json.dumps(result.fingerprint, default=str), repr(judge), repr(judge.backend), str(judge.identity())]
        texts += [p.read_bytes().decode("utf-8", "replace") for p in tmp_path.glob("c.sqlite*")]
    else:
        assert isinstance(key, int) and not server.requests
    leaks = [leaked_runs(text, str(key)) for text in texts]
    assert all(v == [] for v in leaks), leaks


def score_with_debug_log(address: str, src, out, cache, env: dict) -> subprocess.CompletedProcess:
    """`radmetrics score` (GREEN) against the server at ``address``, one request at a time, with DEBUG logging on
    (so that a secret in any log line would show in stderr)."""
    code = ("import logging, sys; logging.basicConfig(level=logging.DEBUG); from radmetrics.cli import main; "
            "sys.argv = ['radmetrics'] + sys.argv[1:]; main()")
    return subprocess.run([sys.executable, "-c", code, "score", "-m", "green", "-i", src, "-o", out,
                           "--backend", "openai", "--base-url", address, "--judge", "judge-model",
                           "--cache", cache, "--no-progress", "--judge-option", "concurrency=1",
                           "--judge-option", "backoff=0.001"], cwd=REPO, capture_output=True, text=True, env=env)


def test_credentials_in_the_server_address_leak_nothing_and_the_query_goes_with_every_request(tmp_path):
    """Review 18 (1): a password in `user:password@` (sent as a Basic Authorization header) and a key in the
    address's query (`?api_key=...`) were shown only without them in radmetrics' own messages, but a server's
    error text that echoes the request (its path, its Authorization header) reached the rows' reasons, the summary
    and the terminal. And the query was glued in front of the path (`/v1?api_key=K/chat/completions`), so the
    server was never reached right. Now both are redacted like an API key, and the query goes with every
    request."""
    import base64

    password, query_key = "pw-" + KEY[3:23], "qk-" + KEY[23:]
    basic = base64.b64encode(f"user:{password}".encode()).decode()
    src, out, cache = tmp_path / "pairs.jsonl", tmp_path / "out.jsonl", tmp_path / "cache.sqlite"
    src.write_text("".join(json.dumps({"reference": r, "candidate": c}) + "\n" for r, c in pairs()))
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    with FakeOpenAIServer(lambda prompt: ANSWER, script=["401", "404", "garbage", "400"], echo_key=True) as server:
        address = server.base_url.replace("http://", f"http://user:{password}@") + f"?api_key={query_key}"
        run = score_with_debug_log(address, src, out, cache, env)
    assert run.returncode == 0, run.stderr[-3000:]
    # the query went with every request, after the path; the password as the Basic header httpx makes of it
    assert {r["path"] for r in server.requests} == {f"/v1/chat/completions?api_key={query_key}"}
    assert all(r["headers"]["Authorization"] == f"Basic {basic}" for r in server.requests)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["reason"].split(": ")[1] for r in rows[:2]] == ["HTTP 401", "HTTP 404"]  # the echoing error bodies
    assert "***" in rows[0]["reason"] and all(r["parsed"] for r in rows[3:])
    texts = {"stdout": run.stdout, "stderr": run.stderr}
    texts.update({f.name: f.read_bytes().decode("utf-8", "replace")
                  for f in [out, tmp_path / "out.jsonl.summary.json", *tmp_path.glob("cache.sqlite*")]})
    for secret in (password, query_key, basic):
        leaks = {name: leaked_runs(text, secret, run=8) for name, text in texts.items()}
        assert all(v == [] for v in leaks.values()), (secret, {k: v for k, v in leaks.items() if v})


def test_plain_query_values_of_the_address_leave_the_judges_answers_as_sent(tmp_path, caplog):
    """Review 20, F2: every value of the address's ?query was redacted out of the judge's answers before they were
    parsed and cached (and out of every log line): with `?stream=false` RadCliQ's `false_prediction` became
    `***_prediction` and the row unscored, `2024-02-15-preview` in the text became `***`. Now only values whose key
    names a credential are: the answers are parsed and cached as the server sent them, and `?api_key=` is still
    hidden when the server echoes it. (Log lines hide every query value: review 21, H2.)"""
    import sqlite3

    from radmetrics.plugins import get_scoring_system

    system = get_scoring_system("radcliq_rubric")
    refs, cands = zip(*pairs()[:3])
    query_key = "qk-" + KEY[10:30]
    note = "Compared with the 2024-02-15-preview study, stream=false: "

    def answer(prompt):
        return note + system.sample_answer(refs[0], cands[0])

    def run(base_url, cache):
        result = radmetrics.score("radcliq_rubric", refs, cands, backend="openai", judge="judge-model", cache=cache,
                                  progress=False, judge_options={"base_url": base_url, "max_retries": 0})
        with sqlite3.connect(cache) as con:
            return result, sorted(r for (r,) in con.execute("SELECT response FROM responses"))

    caplog.set_level(logging.DEBUG)
    with FakeOpenAIServer(answer) as server:
        plain, plain_cached = run(server.base_url, tmp_path / "plain.sqlite")
        query = "?api-version=2024-02-15-preview&stream=false"
        queried, queried_cached = run(server.base_url + query, tmp_path / "query.sqlite")
        sent = answer("")
        assert plain.summary["num_unscored"] == 0 and plain_cached == [sent] * 3
        assert queried.scores == plain.scores and queried_cached == plain_cached
        assert [j.raw for j in queried.judgments] == [sent] * 3
        assert server.requests[-1]["path"] == f"/v1/chat/completions{query}"
        # the HTTP log lines hide every query value, whatever its key (review 21, H2: ?jwt= was in httpx's INFO line)
        assert "completions?***" in caplog.text and "stream=false" not in caplog.text

    with FakeOpenAIServer(lambda prompt: answer(prompt) + f" (served for api_key={query_key})") as server:
        caplog.clear()
        echoed, echoed_cached = run(f"{server.base_url}?api_key={query_key}&stream=false", tmp_path / "key.sqlite")
    assert echoed.scores == plain.scores  # the key is hidden, the answer is read as before
    assert [j.raw for j in echoed.judgments] == [sent + " (served for api_key=***)"] * 3
    texts = [*echoed_cached, json.dumps([j.to_dict() for j in echoed.judgments]), caplog.text]
    assert all(leaked_runs(text, query_key, run=8) == [] for text in texts)


@pytest.mark.parametrize("with_password", [False, True], ids=["token-as-user", "user-and-password"])
def test_a_user_name_in_the_server_address_leaks_nothing(tmp_path, with_password):
    """Review 20, F3: a key given as the address's user name (`http://TOKEN@host/v1`, as some gateways take it) is
    sent by httpx as Basic auth, base64("TOKEN:"), but only a password was redacted: a server echoing the
    Authorization header or the user put both into the rows, the summary and the logs. Now a user name without a
    password is secret; beside a password the password, `user:password` and its base64 are."""
    import base64

    token, password = ("u-" + KEY[5:10] if with_password else "tk-" + KEY[5:30]), "pw-" + KEY[30:]
    userinfo = f"{token}:{password}" if with_password else token
    basic = base64.b64encode((userinfo if with_password else f"{token}:").encode()).decode()
    src, out, cache = tmp_path / "pairs.jsonl", tmp_path / "out.jsonl", tmp_path / "cache.sqlite"
    src.write_text("".join(json.dumps({"reference": r, "candidate": c}) + "\n" for r, c in pairs()))
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    def error_body(auth, n):  # the Authorization header and the user it names, as a careless gateway says them
        user = base64.b64decode(auth.removeprefix("Basic ")).decode().partition(":")[0]
        return json.dumps({"error": {"message": f"no access for user {user} ({auth})"}}).encode()

    with FakeOpenAIServer(lambda prompt: ANSWER, script=["401", "404", "garbage", "400"], echo_key=True,
                          error_body=error_body) as server:
        address = server.base_url.replace("http://", f"http://{userinfo}@")
        run = score_with_debug_log(address, src, out, cache, env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert all(r["headers"]["Authorization"] == f"Basic {basic}" for r in server.requests)  # what httpx sends
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["reason"].split(": ")[1] for r in rows[:2]] == ["HTTP 401", "HTTP 404"]  # the echoing error bodies
    assert "***" in rows[0]["reason"] and all(r["parsed"] for r in rows[3:]) and "DEBUG" in run.stderr
    texts = {"stdout": run.stdout, "stderr": run.stderr}
    texts.update({f.name: f.read_bytes().decode("utf-8", "replace")
                  for f in [out, tmp_path / "out.jsonl.summary.json", *tmp_path.glob("cache.sqlite*")]})
    # beside a password the user name is no secret (hiding "admin" would blank that word in the judge's answers)
    for secret in ([basic, password, userinfo] if with_password else [token, basic]):
        leaks = {name: leaked_runs(text, secret, run=min(8, len(secret))) for name, text in texts.items()}
        assert all(v == [] for v in leaks.values()), (secret, {k: v for k, v in leaks.items() if v})


JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyYWQifQ." + KEY[3:27]  # a JSON web token: header.payload.signature


@pytest.mark.parametrize("name, value, in_answer", [("jwt", JWT, True), ("sid", "s" + KEY[27:36], True),
                                                    ("state", "q7" + KEY[36:41], False)],
                         ids=["jwt", "sid", "short-value-any-key"])
def test_every_query_value_of_the_address_stays_out_of_logs_reasons_and_the_cache(tmp_path, name, value, in_answer):
    """Review 21, H2: after review 20 narrowed redaction to query keys named in a word list, `?jwt=<token>` (and
    `?sid=`, `?session_id=`...) went into httpx's own INFO line (`HTTP Request: POST .../completions?jwt=...`), the
    runner's WARNING about unscored rows and the rows' reasons (a server's error body echoing the request's path).
    Now every query value is kept out of logs, warnings and reasons, whatever its key; in the judge's answers (which
    are cached) a value that is plausibly a credential is hidden too. `?stream=false` stays in the answers."""
    src, out, cache = tmp_path / "pairs.jsonl", tmp_path / "out.jsonl", tmp_path / "cache.sqlite"
    src.write_text("".join(json.dumps({"reference": r, "candidate": c}) + "\n" for r, c in pairs()))
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    echo = f"[Note]: served for {name}={value}; stream=false.\n\n" if in_answer else "[Note]: stream=false.\n\n"
    with FakeOpenAIServer(lambda prompt: echo + ANSWER, script=["401", "404", "garbage", "400"],
                          echo_key=True) as server:
        query = f"?{name}={value}&stream=false"
        run = score_with_debug_log(server.base_url + query, src, out, cache, env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert {r["path"] for r in server.requests} == {f"/v1/chat/completions{query}"}  # the query went with each
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["reason"].split(": ")[1] for r in rows[:2]] == ["HTTP 401", "HTTP 404"]  # the echoing error bodies
    assert "***" in rows[0]["reason"] and all(r["parsed"] for r in rows[3:])
    assert "INFO:httpx:HTTP Request: POST" in run.stderr and "Warning: 3 of 12" in run.stderr  # the lines it was in
    # the answers keep their words ("stream=false"); an echoed credential is hidden from them (and the cache)
    kept = echo.replace(value, "***") if in_answer else echo
    assert all(r["judge_output"] == kept + ANSWER for r in rows[3:]), rows[3]["judge_output"][:200]
    texts = {"stdout": run.stdout, "stderr": run.stderr}
    texts.update({f.name: f.read_bytes().decode("utf-8", "replace")
                  for f in [out, tmp_path / "out.jsonl.summary.json", *tmp_path.glob("cache.sqlite*")]})
    leaks = {where: leaked_runs(text, value, run=min(8, len(value))) for where, text in texts.items()}
    assert all(v == [] for v in leaks.values()), {k: v for k, v in leaks.items() if v}



def test_the_runners_warning_and_the_rows_hide_a_token_under_any_query_key(caplog):
    """Review 21, H2 in the Python API: with `?jwt=<token>` and a server whose 401 body echoes the request's path,
    the token was in httpx's INFO line, in the runner's WARNING about unscored rows and in the row's reason."""
    caplog.set_level(logging.INFO)
    with FakeOpenAIServer(lambda prompt: ANSWER, script=["401"], echo_key=True) as server:
        result = radmetrics.score("green", ["No effusion."], ["Small effusion."], backend="openai", judge="m",
                                  cache=None, progress=False,
                                  judge_options={"base_url": f"{server.base_url}?jwt={JWT}", "max_retries": 0})
    assert result.judgments[0].reason.startswith("judge call failed: HTTP 401: ")
    assert "HTTP Request: POST" in caplog.text and "the judge gave no answer" in caplog.text
    texts = [caplog.text, json.dumps([j.to_dict() for j in result.judgments]), json.dumps(result.summary, default=str)]
    assert all(leaked_runs(text, JWT, run=8) == [] for text in texts), caplog.text[-2000:]


@pytest.mark.parametrize("query, secret", [("api_key=s3cr3t P4ss w0rd!", "P4ss w0rd!"),
                                           ("pwd=Hx7!kQ2$mZ9*pL4(", "Hx7!kQ2$mZ9*pL4("),
                                           ("sig=k9Qz+Ab3/Xy7Lm0pQ=", "k9Qz+Ab3/Xy7Lm0pQ="),
                                           # review 23 (H3): urlsplit cut the query at "#" and dropped tabs, while
                                           # the backend sends all after "?"; mixed-case escapes left a piece
                                           ("api_key=Hx7#kQ2#mZ9#pL4", "Hx7#kQ2#mZ9#pL4"),
                                           ("key=tab\tsecret99", "tab\tsecret99"),
                                           ("key=ab%2fcd%2Fef!gh", "ab/cd/ef!gh")],
                         ids=["blanks", "punctuation", "plus-and-slash", "hash", "tab", "mixed-case-escapes"])
def test_a_query_credential_is_hidden_in_the_spelling_httpx_logs_it(caplog, query, secret):
    """Review 22, H1: httpx encodes the query again when it sends it (a blank as '+', '!' as '%21'), and its INFO
    request line, the runner's WARNING and the row's reason showed the credential in that spelling
    ('?***+P4ss+w0rd%21'); `url_secrets` holds every form a value is written in."""
    from urllib.parse import quote, quote_plus

    caplog.set_level(logging.INFO)
    with FakeOpenAIServer(lambda prompt: ANSWER, script=["401"], echo_key=True) as server:
        result = radmetrics.score("green", ["No effusion."], ["Small effusion."], backend="openai", judge="m",
                                  cache=None, progress=False,
                                  judge_options={"base_url": f"{server.base_url}?{query}", "max_retries": 0})
    assert "HTTP Request: POST" in caplog.text and "the judge gave no answer" in caplog.text
    texts = [caplog.text, json.dumps([j.to_dict() for j in result.judgments]), json.dumps(result.summary, default=str)]
    for form in {secret, quote_plus(secret), quote(secret, safe="")}:
        assert all(leaked_runs(text, form, run=6) == [] for text in texts), (form, caplog.text[-2000:])
    assert all(leaked_runs(text.replace("***", "\n"), quote_plus(secret), run=4) == [] for text in texts[:1])


def test_words_of_the_address_are_not_blanked_in_the_judges_answers(tmp_path, caplog):
    """Review 21, M1: with `http://radiology:PASSWORD@host` the 8-character pieces of `radiology:PASSWORD` hid the
    user name inside the judge's answers ("The candidate *** report"), before they were parsed and cached; and
    `?auth=none` or `?use_auth=true` (keys holding "auth") blanked every "none" and "true" there. A user name
    beside a password and short plain words are no credential: the answers keep them and score as without them,
    while an echoed password or token is still hidden. Logs and reasons still hide all of them."""
    import sqlite3

    from radmetrics.plugins import get_scoring_system

    password, token = "Zx81-" + KEY[3:11], "9f86d0" + KEY[11:31]
    refs, cands = ["No effusion."] * 2, ["Small effusion."] * 2
    rubric = get_scoring_system("radcliq_rubric").sample_answer(refs[0], cands[0])  # "false_prediction" in it
    vert = ("[Explanation]:\nThe candidate radiology report omits none of the findings; true, it adds an effusion."
            "\n\n[Overall Accuracy Score]:\n0.6")

    def run(system, userinfo, cache, answer, query=""):
        with FakeOpenAIServer(lambda prompt: answer) as server:
            address = server.base_url.replace("http://", f"http://{userinfo}") + query
            result = radmetrics.score(system, refs, cands, backend="openai", judge="judge-model", cache=cache,
                                      progress=False, judge_options={"base_url": address, "max_retries": 0})
        assert {r["path"] for r in server.requests} == {f"/v1/chat/completions{query}"}
        with sqlite3.connect(cache) as con:
            return result, sorted(r for (r,) in con.execute("SELECT response FROM responses"))

    caplog.set_level(logging.DEBUG)
    userinfo = f"radiology:{password}@"
    query = f"?auth=none&use_auth=true&stream=false&sessionid={token}"
    for system, answer in [("vert", vert), ("radcliq_rubric", rubric)]:
        plain, _ = run(system, "", tmp_path / f"{system}-plain.sqlite", answer)
        assert plain.summary["num_unscored"] == 0
        given, cached = run(system, userinfo, tmp_path / f"{system}.sqlite", answer, query)
        assert [j.raw for j in given.judgments] == [answer] * 2 and cached == [answer]
        assert given.scores == plain.scores
        # a server echoing the password and a token-like query value into the answer: those are hidden, no more
        echoed = f"(served for radiology:{password}, sessionid={token})\n" + answer
        result, cached = run(system, userinfo, tmp_path / f"{system}-echo.sqlite", echoed, query)
        assert cached == ["(served for radiology:***, sessionid=***)\n" + answer]
        assert result.scores == plain.scores
    for secret in (password, token):
        assert leaked_runs(caplog.text, secret, run=8) == []


def test_log_secrets_take_every_part_of_the_address_and_answer_secrets_only_credentials():
    """The two sets: url_secrets (logs, messages, reasons) holds every query value, the user name and the password;
    answer_secrets (the judge's answers) no plain word, no user name beside a password, no piece of it."""
    from radmetrics.errors import answer_secrets, looks_like_token, redact, url_secrets

    address = ("http://radiology:Zx81-pq@h/v1?auth=none&use_auth=true&stream=false&api-version=2024-02-15-preview"
               f"&jwt={JWT}&sid=Ab3dE9xy&ref=a8f3k2&model=gpt-4o-mini-2024-07-18")
    logged = url_secrets(address)
    for value in ("radiology", "Zx81-pq", "none", "true", "false", "2024-02-15-preview", JWT, "Ab3dE9xy", "a8f3k2",
                  "ref=a8f3k2", "gpt-4o-mini-2024-07-18"):
        assert value in logged, value
    assert sorted(answer_secrets(address)) == sorted([JWT, "Ab3dE9xy", "Zx81-pq", "cmFkaW9sb2d5Olp4ODEtcHE="])
    text = "The candidate radiology report: none; true; no false_prediction; 2024-02-15-preview."
    assert redact(text, answer_secrets(address)) == text
    assert redact("Answer: none of the errors.", answer_secrets("http://h/v1?auth=none")) == \
        "Answer: none of the errors."
    assert redact(f"x {JWT[:30]} y", answer_secrets(address)) == "x *** y"  # a piece of a token still is one
    # a credential-named key's value is hidden in answers unless it is a setting (review 22, L2: a plain-word
    # password was left in them)
    assert "sunshine" in answer_secrets("http://h/v1?password=sunshine&auth=none")
    assert "none" not in answer_secrets("http://h/v1?password=sunshine&auth=none")
    # a user name alone is the credential, in answers too
    assert "TOKEN1234" in answer_secrets("http://TOKEN1234@h/v1")
    assert [v for v in ("9f86d081884c7d659a2feaa0c55ad015", "123e4567-e89b-12d3-a456-426614174000", JWT)
            if not looks_like_token(v)] == []
    assert [v for v in ("2024-02-15-preview", "gpt-4o-mini-2024-07-18", "radiology-judge-production", "false")
            if looks_like_token(v)] == []


def test_a_credential_among_the_extra_request_fields_stays_out_of_results_cache_and_reasons(tmp_path, caplog):
    """extra_body is written into the judge's identity (every row's fingerprint, the summary, compare's
    results.json, a transformed dataset's provenance) and the cache keys. A gateway's credential sent there
    (LiteLLM's per-request `api_key`, a `user_token`) was written as given; now its value is hidden there and in
    messages, while the request still carries it and the other fields keep their values (they change answers)."""
    caplog.set_level(logging.DEBUG)
    refs, cands = zip(*pairs())
    body_key = "sk-" + "".join(random.Random(33).choices(string.ascii_letters + string.digits, k=40))
    extra = {"api_key": body_key, "metadata": {"user_token": body_key + "-u"}, "max_tokens": 512,
             "reasoning_effort": "low"}
    # a server that refuses the first request and echoes the body's key in its error, then answers
    with FakeOpenAIServer(lambda prompt: ANSWER, script=["401"],
                          error_body=lambda auth, n: json.dumps({"error": f"bad key {body_key}"}).encode()) as server:
        result = radmetrics.score("green", refs, cands, backend="openai", judge="judge-model",
                                  cache=tmp_path / "c.sqlite", progress=False,
                                  judge_options={"base_url": server.base_url, "extra_body": extra,
                                                 "concurrency": 1, "backoff": 0.001})
    assert all(r["body"]["api_key"] == body_key for r in server.requests)  # sent as given
    assert server.requests[-1]["body"]["metadata"] == {"user_token": body_key + "-u"}
    shown = result.fingerprint["judge"]["extra_body"]
    assert shown["max_tokens"] == 512 and shown["reasoning_effort"] == "low"  # settings, not credentials
    texts = [json.dumps(result.fingerprint, default=str), json.dumps([j.to_dict() for j in result.judgments]),
             caplog.text, *(p.read_bytes().decode("utf-8", "replace") for p in tmp_path.glob("c.sqlite*"))]
    assert "***" in result.judgments[0].reason  # the refused row's reason held the echoed key, masked
    assert [leaked_runs(text, body_key) for text in texts] == [[]] * len(texts)
