"""Backend options are typed dataclasses: an unknown or mistyped option is a one-line error naming the valid
ones, in Python, through evaluate.load and on the command line (exit 2); the Judge protocol is one for all."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import PACKAGE, REPO, SAMPLE

import radmetrics
from radmetrics.judge import CachedJudge, Judge, JudgeOptionError
from radmetrics.judge.openai_backend import OpenAIOptions
from radmetrics.judge.transformers_backend import TransformersJudge, TransformersOptions

REPLAY = str(SAMPLE / "green_replay.jsonl")


def test_unknown_option_in_python_names_the_valid_ones():
    with pytest.raises(JudgeOptionError) as info:
        radmetrics.get_judge("transformers", model="some/model", nosuchopt=3)
    message = str(info.value)
    assert message.startswith("Unknown option 'nosuchopt' for the transformers backend.")
    assert "max_batch_size" in message and "\n" not in message
    with pytest.raises(JudgeOptionError, match="Did you mean 'max_batch_size'"):
        radmetrics.get_judge("transformers", model="some/model", max_batch_sise=3)
    with pytest.raises(JudgeOptionError, match="Unknown option 'concurrency' for the replay backend"):
        radmetrics.score("green", ["a"], ["b"], backend="replay", judge_options={"path": REPLAY, "concurrency": 2})


def test_mistyped_option_is_an_error_not_a_traceback():
    with pytest.raises(JudgeOptionError, match="'max_batch_size' of the transformers backend must be int or None, not 'many'"):
        TransformersJudge(model="m", max_batch_size="many")
    with pytest.raises(JudgeOptionError, match="'timeout' of the openai backend must be float"):
        radmetrics.get_judge("openai", model="m", base_url="http://127.0.0.1:9", timeout="soon")
    assert OpenAIOptions.from_dict({"timeout": 3}, "openai").timeout == 3  # an int is a fine float
    options = TransformersOptions.from_dict({"max_input_tokens": None, "engine": False}, "transformers")
    assert options.engine is False and options.max_input_tokens is None


def test_evaluate_load_rejects_a_misspelt_option():
    import evaluate

    with pytest.raises(radmetrics.UnknownNameError) as info:
        evaluate.load(str(PACKAGE / "green"), judgee="StanfordAIMI/GREEN-RadLlama2-7b")
    assert "Unknown radmetrics/green option 'judgee'. Did you mean 'judge'?" in str(info.value)


def test_cli_unknown_judge_option_exits_2_with_one_line(tmp_path):
    run = subprocess.run([sys.executable, "-m", "radmetrics.cli", "score", "-m", "green", "-i",
                          str(SAMPLE / "pairs.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--replay", REPLAY,
                          "--judge-option", "nosuchopt=3"], capture_output=True, text=True, cwd=REPO,
                         env=os.environ.copy())
    assert run.returncode == 2
    lines = [line for line in run.stderr.splitlines() if line.startswith("Error:")]
    assert lines == [lines[0]] and "Unknown option 'nosuchopt' for the replay backend" in lines[0]
    assert "Traceback" not in run.stderr and not (tmp_path / "out.jsonl").exists()


def test_every_judge_implements_the_protocol(tmp_path):
    cached = radmetrics.get_judge("replay", path=REPLAY)
    assert isinstance(cached, CachedJudge) and isinstance(cached, Judge) and isinstance(cached.backend, Judge)
    assert cached.model == cached.backend.model and cached.identity()["backend"] == "replay"
    from radmetrics.judge.ray_engine import RayShardedJudge

    sharded = RayShardedJudge("replay", model=REPLAY)
    assert isinstance(sharded, Judge) and sharded.identity()["engine"] == "ray"
    with pytest.raises(JudgeOptionError, match="Unknown option 'bogus' for the replay backend"):
        RayShardedJudge("replay", model=REPLAY, bogus=1)
    prompts = [json.loads(line)["prompt"] for line in open(REPLAY)][:2]
    seen = []
    assert cached.generate(prompts, on_result=lambda i, t: seen.append(i), progress=False)
    assert sorted(seen) == [0, 1]


def test_a_misspelt_dtype_is_refused_when_the_judge_is_built_not_at_load():
    """A dtype no precision name matches was a KeyError when the weights loaded (after the input was read and, on a
    cluster, in every actor); now it is the same one-line option error as any other bad value, naming the choices."""
    with pytest.raises(JudgeOptionError, match=r"Option 'dtype' of the transformers backend must be one of auto, "
                                               r"bf16, bfloat16, fp16, float16, fp32, float32, not 'fp8'\."):
        TransformersJudge(model="m", dtype="fp8")
    assert TransformersJudge(model="m", dtype="bf16").dtype_name == "bf16"  # the short names stay accepted
    from radmetrics.judge.vllm_backend import VLLMJudge

    with pytest.raises(JudgeOptionError, match=r"Option 'dtype' of the vllm backend must be one of auto, bf16, .*"
                                               r"half, float, not 'bf61'\."):
        VLLMJudge(model="m", dtype="bf61")


@pytest.mark.parametrize("backend,name,value,bound", [
    # max_input_tokens=-5 kept all but a prompt's first 5 tokens (a negative slice); max_batch_size=-1 planned
    # batches of -1 rows
    ("transformers", "max_input_tokens", -5, "at least 1"), ("transformers", "max_batch_size", -1, "at least 1"),
    ("transformers", "max_batch_tokens", 0, "at least 1"), ("transformers", "answer_tokens", 0, "at least 1"),
    ("transformers", "prefill_chunk_tokens", -100, "at least 1"), ("transformers", "draft_tokens", -1, "at least 0"),
    ("vllm", "max_model_len", 0, "at least 1"), ("vllm", "gpu_memory_utilization", 0.0, "above 0"),
    ("vllm", "tensor_parallel_size", 0, "at least 1"),
])
def test_a_count_out_of_range_is_refused_when_the_judge_is_built(backend, name, value, bound):
    with pytest.raises(JudgeOptionError, match=rf"Option '{name}' of the {backend} backend must be {bound}, "
                                               rf"not {value!r}"):
        radmetrics.get_judge(backend, model="any/model", cache=False, **{name: value})
    radmetrics.get_judge(backend, model="any/model", cache=False, **{name: 0.5 if isinstance(value, float) else 1})


def test_a_gpu_share_above_one_is_refused_when_the_vllm_judge_is_built():
    # gpu_memory_utilization is a share of the GPU: 1.5 reached vLLM, which refused it at the first call
    with pytest.raises(JudgeOptionError, match=r"Option 'gpu_memory_utilization' of the vllm backend must be at "
                                               r"most 1, not 1\.5"):
        radmetrics.get_judge("vllm", model="any/model", cache=False, gpu_memory_utilization=1.5)
    radmetrics.get_judge("vllm", model="any/model", cache=False, gpu_memory_utilization=1.0)


@pytest.mark.parametrize("backend,name,value", [
    # --judge-option timeout=NaN (JSON's NaN) failed every row "Invalid value NaN", timeout=Infinity every row
    # "timestamp out of range", backoff=NaN slept on between retries: no lower bound refuses nan
    ("openai", "timeout", float("nan")), ("openai", "timeout", float("inf")), ("openai", "backoff", float("nan")),
    ("openai", "max_backoff", float("-inf")), ("openai", "unreachable_after", float("nan")),
    ("vllm", "gpu_memory_utilization", float("nan")),
])
def test_a_number_option_that_is_not_finite_is_refused_when_the_judge_is_built(backend, name, value):
    with pytest.raises(JudgeOptionError, match=rf"Option '{name}' of the {backend} backend must be a finite number, "
                                               rf"not {value!r}"):
        server = {"base_url": "http://127.0.0.1:9/v1"} if backend == "openai" else {}
        radmetrics.get_judge(backend, model="any/model", cache=False, **server, **{name: value})


def test_cli_judge_option_nan_exits_2_with_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "radmetrics.cli", "score", "-m", "green", "-i", str(SAMPLE / "pairs.jsonl"),
                          "-o", str(tmp_path / "o.jsonl"), "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1",
                          "-j", "m", "--judge-option", "timeout=NaN"], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 2 and "Option 'timeout' of the openai backend must be a finite number, not nan" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("settings,message", [
    # sent to the server as max_tokens=0 / -1 and scored as if answered
    ({"max_new_tokens": 0}, "max_new_tokens must be a whole number of at least 1, not 0"),
    ({"max_new_tokens": -1}, "max_new_tokens must be a whole number of at least 1, not -1"),
    ({"max_new_tokens": 2.5}, "max_new_tokens must be a whole number of at least 1, not 2.5"),
    ({"min_new_tokens": 5, "max_new_tokens": 2}, r"min_new_tokens \(5\) is above max_new_tokens \(2\)"),
    ({"temperature": -1.0}, "temperature must be a number at least 0, not -1.0"),
    # nan failed every row at the request ("Out of range float values are not JSON compliant")
    ({"temperature": float("nan")}, "temperature must be a number at least 0, not nan"),
    ({"top_p": 0.0}, "top_p must be a number above 0 and at most 1, not 0.0"),
    ({"top_p": 1.5}, "top_p must be a number above 0 and at most 1, not 1.5"),
    ({"seed": -1}, "seed must be a whole number of at least 0, not -1"),
])
def test_generation_settings_out_of_range_are_refused_where_they_are_made(settings, message):
    with pytest.raises(radmetrics.InputError, match=f"GenerationConfig {message}"):
        radmetrics.GenerationConfig(**settings)


def test_evaluate_load_refuses_a_token_limit_below_one():
    import evaluate

    with pytest.raises(radmetrics.InputError, match="max_new_tokens must be a whole number of at least 1, not 0"):
        evaluate.load(str(PACKAGE / "green"), backend="replay", judge=REPLAY, max_new_tokens=0)


def test_one_stop_text_is_one_stop_not_its_characters():
    # stop="\n\n" was the stops "\n" and "\n" (a str iterates by character): stop="ab" cut answers at any a or b
    assert radmetrics.GenerationConfig(stop="ab").stop == ("ab",)
    assert radmetrics.GenerationConfig(stop=["</s>", "###"]).to_dict()["stop"] == ["</s>", "###"]


def test_the_vllm_backend_hands_vllm_its_own_name_for_our_short_dtypes():
    """vLLM takes "bfloat16" / "float16" / "float32" (and "half", "float"), not the short names the transformers
    backend and the CLI document: dtype=bf16 made vLLM refuse at load. The identity keeps the name as given."""
    from radmetrics.judge.vllm_backend import VLLMJudge, vllm_dtype

    assert [vllm_dtype(d) for d in ("auto", "bf16", "fp16", "fp32", "bfloat16", "half", "float")] == [
        "auto", "bfloat16", "float16", "float32", "bfloat16", "half", "float"]
    assert VLLMJudge(model="m", dtype="bf16").identity()["dtype"] == "bf16"


@pytest.mark.parametrize("backend", ["transformers", "vllm"])
def test_a_bad_option_is_named_before_the_judge_is_looked_up(monkeypatch, backend):
    """Review 34: a misspelt option of an uncached Hub judge was not named: the check that the model is in the local
    Hugging Face cache (offline) or on the Hub ran first, and said only that the judge could not be had."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(JudgeOptionError, match=f"Unknown option 'max_batch_sise' for the {backend} backend"):
        radmetrics.score("green", ["a"], ["b"], backend=backend, judge="no-such-org/uncached-judge",
                         judge_options={"max_batch_sise": 3})


def test_cli_base_url_without_backend_openai_says_to_add_it(tmp_path):
    """Review 34: `--base-url URL` without `--backend openai` judged with the default transformers backend, and with an
    uncached judge name (the name a server serves) the error told the user to use `--backend openai --base-url URL`
    as if no address had been given; with a cached one the address was an unknown option. Now the one line says
    that --base-url needs --backend openai, before anything is looked up."""
    run = subprocess.run([sys.executable, "-m", "radmetrics.cli", "score", "-m", "green", "-i",
                          str(SAMPLE / "pairs.jsonl"), "-o", str(tmp_path / "out.jsonl"), "-j", "judge-model",
                          "--base-url", "http://127.0.0.1:9/v1"], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 2, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1 and "base_url (--base-url) is an option of the openai backend" in lines[0], run.stderr
    assert "--backend openai" in lines[0] and "Traceback" not in run.stderr
    assert not (tmp_path / "out.jsonl").exists()
