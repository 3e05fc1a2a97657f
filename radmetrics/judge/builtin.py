"""Built-in judge backends, registered through the same hook third-party backends use."""
from __future__ import annotations

from radmetrics.hookspecs import hookimpl


def _transformers(**kwargs):
    from radmetrics.judge.transformers_backend import TransformersJudge

    return TransformersJudge(**kwargs)


def _openai(**kwargs):
    from radmetrics.judge.openai_backend import OpenAIJudge

    return OpenAIJudge(**kwargs)


def _vllm(**kwargs):
    from radmetrics.judge.vllm_backend import VLLMJudge

    return VLLMJudge(**kwargs)


def _replay(**kwargs):
    from radmetrics.judge.replay import ReplayJudge

    return ReplayJudge(**kwargs)


@hookimpl
def register_judge_backends(register):
    register("transformers", _transformers)
    register("openai", _openai)
    register("vllm", _vllm)
    register("replay", _replay)
