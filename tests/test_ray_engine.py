"""Scale-out with Ray Data: a run sharded over 2 actors (ray.init(num_cpus=2)), results in input order, the
response cache shared with every actor and with later local runs."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import PACKAGE, REPO, SAMPLE
from tiny_judge import training_pairs

import radmetrics

pytest.importorskip("ray")


@pytest.mark.slow
def test_cli_engine_ray_keeps_order_and_shares_the_cache(tiny_judge, tmp_path):
    pairs = training_pairs() * 2  # 12 rows over 2 actors
    src = tmp_path / "pairs.jsonl"
    src.write_text("\n".join(json.dumps({"n": i, "reference": r, "candidate": c}) for i, (r, c, _) in enumerate(pairs)))
    cache = tmp_path / "cache.sqlite"
    code = ("import ray, sys; ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False); "
            "from radmetrics.cli import main; sys.argv = ['radmetrics'] + sys.argv[1:]; main()")
    out = subprocess.run([sys.executable, "-c", code, "score", "-m", "green", "-i", str(src), "-o", str(tmp_path / "o.jsonl"),
                          "--judge", str(tiny_judge), "--max-new-tokens", "256", "--cache", str(cache), "--engine", "ray",
                          "--actors", "2", "--no-progress"], capture_output=True, text=True, cwd=REPO,
                         env=os.environ.copy(), timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [r["n"] for r in rows] == list(range(12))
    assert [r["green"] for r in rows] == pytest.approx([0.0, 1 / 6, 1 / 3, 0.5, 0.25, 0.75] * 2)
    assert rows[0]["fingerprint"]["judge"]["engine"] == "ray"
    # every answer the actors wrote is in the shared cache: a local run makes no model call
    judge = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=cache)
    system = radmetrics.get_scoring_system("green")
    judge.generate([system.build_prompt(r, c) for r, c, _ in pairs], radmetrics.GenerationConfig(max_new_tokens=256),
                   progress=False)
    assert judge.calls == 0


def test_actors_persist_across_calls_and_answers_stream(tmp_path):
    """Two calls (as the CLI makes per chunk) reuse the same 2 actors; each actor gets an even share of a call
    (not 16-row slivers); every answer reaches on_result as its batch arrives, at its input position."""
    code = f"""
import json, ray, sys
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
from radmetrics.judge.ray_engine import RayShardedJudge
import radmetrics
replay = [json.loads(x) for x in open({str(SAMPLE / "green_replay.jsonl")!r})]
prompts = [r["prompt"] for r in replay] * 5
judge = RayShardedJudge("replay", path={str(SAMPLE / "green_replay.jsonl")!r}, actors=2)
seen = []
first = judge.generate(prompts, on_result=lambda i, t: seen.append(i))
pool = list(judge._pool)
second = judge.generate(prompts[:7])
print(json.dumps({{"ok": first == [r["response"] for r in replay] * 5, "seen": sorted(seen) == list(range(len(prompts))),
                  "same_actors": pool == judge._pool, "second": second == [r["response"] for r in replay * 5][:7]}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env=os.environ.copy(), timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"ok": True, "seen": True, "same_actors": True,
                                                              "second": True}


@pytest.mark.slow
def test_ctrl_c_with_ray_says_the_actors_cached_their_answers(tmp_path):
    """Review 19 (6): Ctrl-C of `score --engine ray` printed "interrupted: 0 answered, 0 cached" (this process's
    counts; the actors answer and cache in theirs) though the actors had cached their answers: the line now says
    where the answers are, and the rerun asks only what is not cached. The rerun has fewer actors (a cluster that
    shrank): the actor count changes no answer, so the run continues its part file; it started over before."""
    import signal
    import time

    from fake_judge import analysis_for, write_finding_pairs
    from openai_server import FakeOpenAIServer

    src, out, cache = tmp_path / "pairs.jsonl", tmp_path / "o.jsonl", tmp_path / "c.sqlite"
    write_finding_pairs(src, 40, ids=False)
    # Ctrl-C as a terminal delivers it: a shell starts background jobs (CI's) with SIGINT ignored and Python then
    # keeps it ignored, so the run went on to the end there (exit 0) while it stopped in an interactive shell
    code = ("import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "import ray, sys; ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False); "
            "from radmetrics.cli import main; sys.argv = ['radmetrics'] + sys.argv[1:]; main()")
    with FakeOpenAIServer(analysis_for, delay=0.2) as server:
        args = [sys.executable, "-c", code, "score", "-m", "green", "-i", str(src), "-o", str(out), "--backend",
                "openai", "--base-url", server.base_url, "--judge", "m", "--cache", str(cache), "--engine", "ray",
                "--actors", "2", "--chunk-rows", "4", "--no-progress"]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
        part = tmp_path / "o.jsonl.part"
        deadline = time.time() + 300
        while time.time() < deadline and (not part.exists() or len(part.read_text().splitlines()) < 8):
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
        asked = len(server.requests)
        fewer_actors = [a if a != "2" else "1" for a in args]
        again = subprocess.run(fewer_actors, capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 130, stderr[-3000:]
    assert "Continued an interrupted run:" in again.stderr, again.stderr[-3000:]
    assert stderr.strip().splitlines()[-1] == ("interrupted: the Ray actors keep each answer in the response cache "
                                               "as it comes; rerun to resume")
    assert again.returncode == 0 and len(server.requests) - asked <= 40 - 8, again.stderr[-3000:]
    assert len(out.read_text().splitlines()) == 40


@pytest.mark.slow
def test_retry_unscored_with_ray_asks_the_unreadable_answer_again(tmp_path):
    """Review 30a: `--retry-unscored --engine ray` asked nothing again: the sharded judge had no `forget`, so the
    run skipped the re-ask without a word and the unreadable answer came back from the actors' cache. The actors
    now forget those prompts' cached answers (each in its node's cache file) and the row is asked once more."""
    from fake_judge import UNREADABLE, analysis_for
    from openai_server import FakeOpenAIServer

    src, out, cache = tmp_path / "pairs.jsonl", tmp_path / "o.jsonl", tmp_path / "c.sqlite"
    src.write_text("".join(json.dumps({"reference": f"Finding {i}: small left effusion.",
                                       "candidate": f"Finding {i}." + (" ONCE" if i == 2 else "")}) + "\n"
                           for i in range(6)))
    asked: list[str] = []

    def first_answer_unreadable(prompt):  # row 3's first answer cannot be read; asked again, it can
        asked.append(prompt)
        return UNREADABLE if "ONCE" in prompt and asked.count(prompt) == 1 else analysis_for(prompt)

    code = ("import ray, sys; ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False); "
            "from radmetrics.cli import main; sys.argv = ['radmetrics'] + sys.argv[1:]; main()")
    with FakeOpenAIServer(first_answer_unreadable) as server:
        args = [sys.executable, "-c", code, "score", "-m", "green", "-i", str(src), "-o", str(out), "--backend",
                "openai", "--base-url", server.base_url, "--judge", "m", "--cache", str(cache), "--engine", "ray",
                "--actors", "2", "--no-progress"]
        first = subprocess.run(args, capture_output=True, text=True, cwd=REPO, timeout=300)
        again = subprocess.run(args + ["--retry-unscored"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert first.returncode == 0 and again.returncode == 0, (first.stderr + again.stderr)[-3000:]
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert rows[2]["parsed"] and rows[2]["details"].get("asked_again"), rows[2]
    assert all(r["parsed"] for r in rows) and len(asked) == 7  # six rows, and row 3 once more


@pytest.mark.slow
def test_a_retry_unscored_run_killed_while_asking_again_gives_its_rerun_what_it_asked(tmp_path):
    """ray43b: `score --engine ray --retry-unscored` killed (the driver and the actors) while the actors asked 40
    unreadable rows again, then rerun: the rerun asked all 40 again (60 asks where an uninterrupted run makes 40; the
    rows it had asked again a third time, and those whose second answer could be read were not marked asked again).
    The actors record what they ask again under the chunk's name, which the rerun shares; the rerun reads the answers
    given since in every actor's cache (any batch, any actor) and asks the rest."""
    import signal
    import time
    from collections import Counter

    from fake_judge import HeldAfter, readable_the_second_time_for_even_rows, write_finding_pairs
    from openai_server import FakeOpenAIServer

    src, out, cache = tmp_path / "pairs.jsonl", tmp_path / "o.jsonl", tmp_path / "c.sqlite"
    write_finding_pairs(src, 40)
    asked: Counter = Counter()
    # 20 rows asked again, the next held until the kill: the run cannot end first on a loaded machine
    held = HeldAfter(readable_the_second_time_for_even_rows(lambda: asked), lambda: sum(asked.values()), 40 + 20)

    def kill_the_run(proc):  # the actors' processes (Ray titles them after the class), then the driver's group
        for p in os.listdir("/proc"):
            try:
                if p.isdigit() and open(f"/proc/{p}/cmdline", "rb").read().startswith(b"ray::_Judge"):
                    os.kill(int(p), signal.SIGKILL)
            except OSError:
                pass
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    code = ("import ray, sys; ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False); "
            "from radmetrics.cli import main; sys.argv = ['radmetrics'] + sys.argv[1:]; main()")
    with FakeOpenAIServer(held) as server:
        args = [sys.executable, "-c", code, "score", "-m", "green", "-i", str(src), "-o", str(out), "--backend",
                "openai", "--base-url", server.base_url, "--judge", "m", "--cache", str(cache), "--engine", "ray",
                "--actors", "2", "--no-progress", "--judge-option", "concurrency=1"]
        first = subprocess.run(args, capture_output=True, text=True, cwd=REPO, timeout=300)
        assert first.returncode == 1 and sum(asked.values()) == 40, first.stderr[-3000:]
        proc = subprocess.Popen(args + ["--retry-unscored"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                cwd=REPO, start_new_session=True)
        assert held.reached(120)
        kill_the_run(proc)
        held.release()
        time.sleep(1)
        before = sum(asked.values())
        again = subprocess.run(args + ["--retry-unscored"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert 60 <= before < 80, sorted(asked.values())
    # + those in flight at the kill: each actor's request asked and, on a loaded machine, one answered but not yet cached
    assert 40 <= (before - 40) + (sum(asked.values()) - before) <= 40 + 4, sorted(asked.values())
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == list(range(40)) and all(r["details"].get("asked_again") for r in rows)
    assert [r["id"] for r in rows if r["parsed"]] == list(range(0, 40, 2))  # as an uninterrupted run's


@pytest.mark.slow
def test_a_prompt_given_twice_is_asked_once_across_the_actors(tmp_path):
    """Review 30a: the sharded judge split the prompts over the actors as given, so a row repeated in the input
    (one pair scored twice, several systems' identical outputs) was asked once per actor that got it: with
    --no-cache twice, where a local run asks it once, and a server that does not answer alike twice could give
    the two rows different scores. Each prompt now goes to one actor; its answer fills every row that asked it."""
    code = f"""
import json, sys
sys.path.insert(0, {str(REPO / "tests")!r})
import ray
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
from fake_judge import analysis_for
from openai_server import FakeOpenAIServer
from radmetrics.judge.ray_engine import RayShardedJudge
prompts = ["p1", "p2", "p3"] * 2
with FakeOpenAIServer(lambda prompt: "answer to " + prompt) as server:
    judge = RayShardedJudge("openai", model="m", base_url=server.base_url, actors=2)
    seen = []
    texts = judge.generate(prompts, progress=False, on_result=lambda i, text: seen.append(i))
    asked = len(server.requests)
print(json.dumps({{"texts": [str(t) for t in texts], "seen": sorted(seen), "asked": asked}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env=os.environ.copy(), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {
        "texts": ["answer to p1", "answer to p2", "answer to p3"] * 2, "seen": list(range(6)), "asked": 3}


@pytest.mark.slow
def test_cut_answers_keep_which_limit_they_reached_across_the_actors(tiny_judge, tmp_path):
    """The actors sent back only whether an answer was cut, and the driver remade it as cut at max_new_tokens: an
    answer that reached the end of the judge's context was told to "raise --max-new-tokens", which gives the same
    cut. Each cut answer now comes back with its limit and context (one actor: its own process, as on a cluster):
    the same answers and reasons as a local run."""
    from test_cut_answers import CANDS, _reference_leaving

    local = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False)
    local.backend.load()
    reference, room = _reference_leaving(local.backend, 6)
    system = radmetrics.get_scoring_system("radcliq_rubric")
    prompts = [system.build_prompt(reference, CANDS[0]), system.build_prompt("Heart size normal.", CANDS[1])]
    config = radmetrics.GenerationConfig(max_new_tokens=24)
    expected = local.generate(prompts, config, progress=False)
    assert expected[0].context and expected[1].limit == 24 and not expected[1].context  # both cut, differently
    code = f"""
import json, ray
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
import radmetrics
from radmetrics.judge.ray_engine import RayShardedJudge
judge = RayShardedJudge("transformers", model={str(tiny_judge)!r}, actors=1)
texts = judge.generate({prompts!r}, radmetrics.GenerationConfig(max_new_tokens=24), progress=False)
print(json.dumps([[str(t), t.reason] for t in texts]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env=os.environ.copy(), timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [[str(t), t.reason] for t in expected]


def _cli_on_a_cluster_started_in(folder, args, cwd, timeout=300):
    """`radmetrics score ARGS` run in `cwd` on a local Ray cluster whose processes were started in `folder`, as
    `ray start` in another directory leaves its workers there."""
    code = (f"import os, ray, sys; os.chdir({str(folder)!r}); "
            "ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False); "
            f"os.chdir({str(cwd)!r}); from radmetrics.cli import main; sys.argv = ['radmetrics'] + sys.argv[1:]; main()")
    return subprocess.run([sys.executable, "-c", code, "score", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)}, timeout=timeout)


@pytest.mark.slow
def test_relative_paths_name_the_drivers_files_on_a_cluster_started_elsewhere(tmp_path):
    """Review 26: the actors opened --replay and --cache as relative to their own folder, the one `ray start` ran
    in: "Replay file not found" in a Ray traceback (exit 1), and a --cache created in the wrong folder."""
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir(), elsewhere.mkdir()
    for name in ("pairs.jsonl", "green_replay.jsonl"):
        (work / name).write_bytes((SAMPLE / name).read_bytes())
    out = _cli_on_a_cluster_started_in(elsewhere, ["-m", "green", "-i", "pairs.jsonl", "-o", "o.jsonl", "--replay",
                                                   "green_replay.jsonl", "--cache", "c.sqlite", "--engine", "ray",
                                                   "--actors", "2", "--no-progress"], cwd=work)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [json.loads(x) for x in (work / "o.jsonl").read_text().splitlines()]
    assert [r["green"] for r in rows][:6] == pytest.approx([0.0, 1 / 6, 1 / 3, 0.5, 0.25, 0.75])
    assert (work / "c.sqlite").is_file() and not (elsewhere / "c.sqlite").exists()


@pytest.mark.slow
def test_more_actors_than_the_cluster_holds_is_refused_not_a_hang(tmp_path):
    """Review 26: `--actors 3` on a 2-CPU cluster waited forever for the third actor, without a word."""
    for name in ("pairs.jsonl", "green_replay.jsonl"):
        (tmp_path / name).write_bytes((SAMPLE / name).read_bytes())
    out = _cli_on_a_cluster_started_in(tmp_path, ["-m", "green", "-i", "pairs.jsonl", "-o", "o.jsonl", "--replay",
                                                  "green_replay.jsonl", "--engine", "ray", "--actors", "3",
                                                  "--no-progress"], cwd=tmp_path, timeout=120)
    assert out.returncode == 2, out.stderr[-3000:]
    assert out.stderr.strip().splitlines()[-1] == ("Error: --actors 3 needs 3 CPUs (one judge each, the cluster has no "
                                                   "GPUs); the Ray cluster has 2: use --actors 2 or fewer, or add nodes")


@pytest.mark.slow
def test_an_actor_whose_judge_cannot_be_built_ends_the_run_in_one_line(tmp_path):
    """Review 26: a judge the actors cannot build (its file missing on their node) ended the run with Ray's
    traceback of ActorDiedError (exit 1); now one line with the actor's own error."""
    replay = tmp_path / "answers.jsonl"
    replay.write_bytes((SAMPLE / "green_replay.jsonl").read_bytes())
    code = f"""
import os, ray
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
from radmetrics.errors import JudgeError
from radmetrics.judge.ray_engine import RayShardedJudge
judge = RayShardedJudge("replay", path={str(replay)!r}, actors=1)
os.remove({str(replay)!r})  # built here, then gone before the actors load it
try:
    judge.generate(["a prompt"])
except JudgeError as e:
    print("JudgeError:", e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env=os.environ.copy(), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == ("JudgeError: a Ray actor failed: radmetrics.errors.JudgeError: "
                                                   f"Replay file not found: {replay}")


def _kill_actors_mid_run(tmp_path, restarts: int, kills: int, anew: bool = False,
                         name: str | None = None) -> tuple[str, str, str]:
    """`generate` of 80 prompts on 2 actors (a judge server answering in 0.1 s, response cache) while both actors'
    processes are killed, ``kills`` times (each time the processes Ray started in their place, once they work); Ray
    restarts an actor ``restarts`` times. The run's end, the cache's size and the server's requests. ``anew``: the 80
    were answered and cached before, and are asked again (`ask_anew`, --retry-unscored); the server's answer to a
    prompt names how often it was asked, "wrong" counts the first answers given back, "requests" those made again.
    ``name``: the caller's name for them (`ask_anew(..., batch=)`, as `score` names a chunk): the records of what to ask
    again, under it in the cache, are printed after the run ("recorded") and after `batch_done` ("done")."""
    cache = tmp_path / "c.sqlite"
    code = f"""
import os, signal, sys, threading, time
sys.path.insert(0, {str(REPO / "tests")!r})
import ray
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
from fake_judge import analysis_for
from openai_server import FakeOpenAIServer
from radmetrics.errors import JudgeError
from radmetrics.judge.cache import ResponseCache
from radmetrics.judge.ray_engine import RayShardedJudge
RayShardedJudge.actor_restarts = {restarts}
asked = {{}}

def answer(prompt):  # with anew: the answer to the first ask told from a later one
    asked[prompt] = asked.get(prompt, 0) + 1
    return f"{{analysis_for(prompt)}} (asked {{asked[prompt]}} times)" if {anew} else analysis_for(prompt)

server = FakeOpenAIServer(answer, delay=0.1).__enter__()
judge = RayShardedJudge("openai", model="m", base_url=server.base_url, cache={str(cache)!r}, actors=2, concurrency=1)
prompts = [f"p{{i}}" for i in range(3, 83)]
judge.generate(["p1", "p2"] + (prompts if {anew} else []), progress=False)  # both actors up
before = len(server.requests) if {anew} else 0
if {anew}:
    judge.ask_anew(prompts, batch={name!r})

def actor_processes():  # the actors' worker processes (Ray titles them after the class), not this one
    found = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and int(p) != os.getpid() and open(f"/proc/{{p}}/cmdline", "rb").read().startswith(b"ray::_Judge"):
                found.append(int(p))
        except OSError:
            pass
    return found

def kill_again():
    gone = set()
    for _ in range({kills}):
        deadline = time.monotonic() + 60
        while len(set(actor_processes()) - gone) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # at work on their batches
        for p in set(actor_processes()) - gone:
            os.kill(p, signal.SIGKILL)
            gone.add(p)
    killed.append(len(gone))

killed = []
threading.Thread(target=kill_again, daemon=True).start()
try:
    texts = judge.generate(prompts, progress=False)
    print("wrong:", sum(str(t).endswith("(asked 1 times)") if {anew} else str(t) != analysis_for(p)
                        for t, p in zip(texts, prompts)))
except JudgeError as e:
    print("JudgeError:", e)
print("cached:", len(ResponseCache({str(cache)!r})))
print("requests:", len(server.requests) - before)
print("killed:", killed)
if {name!r}:
    import sqlite3
    records = "SELECT COUNT(*) FROM written_for_batch"
    print("recorded:", sqlite3.connect({str(cache)!r}).execute(records).fetchone()[0])
    judge.batch_done({name!r})
    print("done:", sqlite3.connect({str(cache)!r}).execute(records).fetchone()[0])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env=os.environ.copy(), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    # the script's lines (Ray's own, on the restarts, come between them)
    ours = [line for line in out.stdout.splitlines() if line.startswith(("wrong:", "JudgeError:", "cached:", "requests:",
                                                                          "killed:"))]
    end, cached, requests, killed = ours[-4:]
    if name:
        # every prompt recorded under the caller's name, kept when the batches ended (a rerun reads it), until batch_done
        assert [line for line in out.stdout.splitlines() if line.startswith(("recorded:", "done:"))] == [
            "recorded: 80", "done: 0"], out.stdout[-3000:]
    assert killed == f"killed: [{2 * kills}]", out.stdout[-3000:]  # every kill found both actors at work
    return end, cached, requests


@pytest.mark.slow
def test_an_actor_killed_mid_run_is_restarted_and_the_run_completes_asking_little_again(tmp_path):
    """An actor whose process dies mid-run (the OOM killer, a kill -9, a preempted node) stopped the whole run, however
    long (review 40a left it: a rerun continued from the cache). Ray now restarts it and asks its batch again; the
    restarted judge reads what the dead one had answered from the response cache, so the run ends with every answer
    right and little asked twice (at most the requests in flight at the kill: concurrency 1 in each actor)."""
    end, cached, requests = _kill_actors_mid_run(tmp_path, restarts=3, kills=1)
    assert end == "wrong: 0", end
    assert int(cached.split()[-1]) == 82
    assert 82 <= int(requests.split()[-1]) <= 84, requests  # at most the 2 requests in flight at the kill, again


@pytest.mark.slow
@pytest.mark.parametrize("name", [None, pytest.param("token:1", id="named-by-score")])
def test_an_actor_restarted_while_asking_again_asks_again_only_what_the_dead_one_had_not(tmp_path, name):
    """Review 42: with --retry-unscored an actor killed mid-batch was given its batch again by Ray, prompts to ask anew
    and all: the restarted judge took the answers the dead one had just given as the ones to ask again and asked those
    a third time (138 requests for 80 prompts, killed 3 s in). The batch now carries a name under which the first try
    recorded, in its node's cache, which answers were to be asked again: the restarted actor reads the new ones. So
    under the name `score --retry-unscored` gives a chunk (ray43b), kept until the chunk is written."""
    end, cached, requests = _kill_actors_mid_run(tmp_path, restarts=3, kills=1, anew=True, name=name)
    assert end == "wrong: 0", end  # every answer the new one: none read back from before the ask
    assert int(cached.split()[-1]) == 82
    assert 80 <= int(requests.split()[-1]) <= 82, requests  # at most the 2 requests in flight at the kill, again


@pytest.mark.slow
def test_an_actor_that_keeps_dying_ends_the_run_saying_the_answers_are_kept_and_a_rerun_continues(tmp_path):
    """Review 40a: one actor killed mid-run ended the run with Ray's text alone ("The actor is dead because its worker
    process has died ... consider enabling resource isolation"), not a word on the work: the answers both actors had
    given were in the response cache and the same command continued after them. Now an actor is restarted (above);
    one that dies more often than that ends the run with a line that says so, as a judge server that went down
    does."""
    end, cached, _ = _kill_actors_mid_run(tmp_path, restarts=1, kills=2)
    assert end.startswith("JudgeError: a Ray actor failed: "), end
    assert end.endswith(" (Ray restarted it 1 time in this run); the answers received are in the response cache: run "
                        "the same command again to continue (cached answers are not asked again)"), end
    assert int(cached.split()[-1]) > 2  # the answers given before the kills, kept


@pytest.mark.slow
def test_a_judge_error_in_every_actor_ends_the_run_in_one_line_without_rays_unhandled_errors(tmp_path):
    """Review 30a: when the judge raised in both actors (the judge server down), the run ended with the first
    actor's line, then Ray printed the other actor's traceback as an "Unhandled error" below it. The other
    batches' errors are now collected (they are the same stop), so the one line is the last word."""
    code = f"""
import sys
sys.path.insert(0, {str(REPO / "tests")!r})
import ray
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
from fake_judge import analysis_for
from openai_server import FakeOpenAIServer
from radmetrics.errors import JudgeError
from radmetrics.judge.ray_engine import RayShardedJudge
server = FakeOpenAIServer(analysis_for).__enter__()
judge = RayShardedJudge("openai", model="m", base_url=server.base_url, actors=2, concurrency=1, max_retries=0)
judge.generate(["p1", "p2"], progress=False)  # both actors up, the server heard
server.__exit__(None, None, None)  # then down: each actor's batch is refused and its judge raises
try:
    judge.generate(["p3", "p4", "p5", "p6"], progress=False)
except JudgeError as e:
    print("JudgeError:", e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env=os.environ.copy(), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1].startswith("JudgeError: a Ray actor failed: "), out.stdout[-3000:]
    assert "Unhandled error" not in out.stderr and "Traceback" not in out.stderr, out.stderr[-3000:]


def test_a_ray_cluster_that_cannot_be_reached_is_named_in_one_line(tmp_path):
    """Review 26 (5): RAY_ADDRESS naming an address where nothing listens ended in the Hub's advice ("Check the
    network, the server URL or HF_ENDPOINT"), nothing about Ray, after minutes of Ray's retries (~14 minutes in Ray
    2.60); one TCP try of the address now says it at once."""
    import socket

    with socket.socket() as free:  # a port nothing listens on once closed
        free.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{free.getsockname()[1]}"
    for name in ("pairs.jsonl", "green_replay.jsonl"):
        (tmp_path / name).write_bytes((SAMPLE / name).read_bytes())
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent), "RAY_ADDRESS": address}
    out = subprocess.run([sys.executable, "-m", "radmetrics", "score", "-m", "green", "-i", "pairs.jsonl", "-o",
                          "o.jsonl", "--replay", "green_replay.jsonl", "--engine", "ray", "--actors", "2",
                          "--no-progress"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert out.returncode == 2, out.stderr[-3000:]
    errors = [line for line in out.stderr.splitlines() if line.startswith("Error:")]
    assert errors == [out.stderr.strip().splitlines()[-1]], out.stderr[-3000:]
    assert errors[0] == (f"Error: cannot connect to the Ray cluster at {address} (RAY_ADDRESS): check that it runs "
                         "(`ray status` on its head node; a cluster with token authentication also needs RAY_AUTH_MODE="
                         "token and RAY_AUTH_TOKEN here), or unset RAY_ADDRESS to run on a local Ray instance")
    assert "HF_ENDPOINT" not in out.stderr and "Traceback" not in out.stderr


CHECK_THE_CLUSTER = ("check that it runs (`ray status` on its head node; a cluster with token authentication also needs "
                     "RAY_AUTH_MODE=token and RAY_AUTH_TOKEN here), or unset RAY_ADDRESS to run on a local Ray instance")


@pytest.mark.parametrize("line, expected", [
    pytest.param(lambda e: e._unreachable_address_line("10.0.0.5:6379"),
                 f"cannot connect to the Ray cluster at 10.0.0.5:6379 (RAY_ADDRESS): {CHECK_THE_CLUSTER}",
                 id="nothing-listens-at-RAY_ADDRESS"),
    pytest.param(lambda e: e._ray_init_failure_line("10.0.0.5:6379", "Failed to connect to Ray cluster at 10.0.0.5:6379"),
                 f"cannot connect to the Ray cluster at 10.0.0.5:6379 (RAY_ADDRESS): {CHECK_THE_CLUSTER}",
                 id="ray-init-gave-up-on-RAY_ADDRESS"),
    pytest.param(lambda e: e._ray_init_failure_line("auto", "Failed to connect to Ray cluster at 10.0.0.7:6379"),
                 f"cannot connect to the Ray cluster at 10.0.0.7:6379 (found by RAY_ADDRESS=auto): {CHECK_THE_CLUSTER}",
                 id="auto"),
    # review 40b: README's own command (RAY_ADDRESS=auto) with no Ray running put Ray's whole message where the
    # address goes: "cannot connect to the Ray cluster at Could not find any running Ray instance. Please specify ..."
    pytest.param(lambda e: e._ray_init_failure_line("auto", "Could not find any running Ray instance. Please specify "
                                                    "the one to connect to by setting `--address` flag or "
                                                    "`RAY_ADDRESS` environment variable."),
                 "RAY_ADDRESS=auto found no running Ray cluster on this machine: start one (`ray start --head`, or "
                 "`ray start --address HEAD:6379` to join a cluster), set RAY_ADDRESS to the cluster's address, or "
                 "unset RAY_ADDRESS to run on a local Ray instance",
                 id="auto-finds-no-cluster"),
    pytest.param(lambda e: e._ray_init_failure_line(None, "Failed to connect to Ray cluster at 127.0.0.1:6379"),
                 "cannot connect to the Ray cluster at 127.0.0.1:6379 (the local cluster Ray last recorded): check it "
                 "with `ray status`, or run `ray stop` so that the next run starts a local Ray instance",
                 id="no-RAY_ADDRESS"),
])
def test_an_unreachable_cluster_line_is_built_from_what_each_path_knows(line, expected):
    """The TCP probe knows only RAY_ADDRESS: its line takes that alone (it was given a placeholder Ray message that it
    never read); a failed ray.init names the address from Ray's message where RAY_ADDRESS did not name it."""
    from radmetrics.judge import ray_engine

    assert line(ray_engine) == expected


@pytest.mark.slow
@pytest.mark.parametrize("call", [
    # the node leaves while the actors answer
    pytest.param('threading.Thread(target=remove, daemon=True).start(); '
                 'judge.generate([f"p{i}" for i in range(3, 83)], progress=False)', id="generate"),
    # the node has left when a resumed --retry-unscored run has the actors drop answers from their caches
    pytest.param('cluster.remove_node(worker); judge.forget(["p1", "p2"])', id="forget"),
])
def test_an_actor_whose_node_is_lost_with_no_room_for_its_restart_ends_the_run_not_a_hang(tmp_path, call):
    """Review 42: since actors are restarted (session 34), one whose node left the cluster (a preempted node) while no
    other node had room for it was waited for by Ray for ever: the run hung without a word (before, it ended at once
    with review 40a's line). A cluster short of the pool for `unplaceable_wait_s` now ends it with one line; in
    `forget` too, which waited for the actors with no such look (review 42's left item)."""
    code = f"""
import os, sys, threading, time
sys.path.insert(0, {str(REPO / "tests")!r})
import ray
from ray.cluster_utils import Cluster
cluster = Cluster(initialize_head=True, head_node_args={{"num_cpus": 1}})
worker = cluster.add_node(num_cpus=1)
ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
from fake_judge import analysis_for
from openai_server import FakeOpenAIServer
from radmetrics.errors import JudgeError
from radmetrics.judge.ray_engine import RayShardedJudge
RayShardedJudge.placement_check_s, RayShardedJudge.unplaceable_wait_s = 1.0, 5.0
server = FakeOpenAIServer(analysis_for, delay=0.1).__enter__()
judge = RayShardedJudge("openai", model="m", base_url=server.base_url, cache={str(tmp_path / "c.sqlite")!r}, actors=2,
                        concurrency=1)
judge.generate(["p1", "p2"], progress=False)  # one actor on each node

def remove():
    time.sleep(1.5)
    cluster.remove_node(worker)

ended = []
def run():
    try:
        {call}
        ended.append("completed")
    except JudgeError as e:
        ended.append(f"JudgeError: {{e}}")
runner = threading.Thread(target=run, daemon=True)
runner.start()
runner.join(120)
print("end:", ended[0] if ended else "hung")
sys.stdout.flush()
# the cluster's processes and its address file go, hung or not: a later ray.init must not find this cluster
# (ray.shutdown only after the run ended: with one still waiting in its thread, it ends this process at once)
for step in ([ray.shutdown] if ended else []) + [ray._common.utils.reset_ray_address, cluster.shutdown]:
    try:
        step()
    except Exception as e:
        print("cleanup:", type(e).__name__, e)
os._exit(0)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env=os.environ.copy(), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    end = [line for line in out.stdout.splitlines() if line.startswith("end:")][-1]
    assert end == ("end: JudgeError: a Ray actor failed: its node left the cluster and Ray has no room to start it "
                   "again (--actors 2 needs 2 CPUs; the cluster has 1 now); the answers received are in the response "
                   "cache: run the same command again with fewer --actors, or once the cluster has its nodes again, "
                   "to continue (cached answers are not asked again)"), out.stdout[-3000:]
