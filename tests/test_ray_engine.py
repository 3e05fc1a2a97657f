"""Scale-out with Ray Data: a run sharded over 2 actors (ray.init(num_cpus=2)), results in input order, the
response cache shared with every actor and with later local runs."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, SAMPLE
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
