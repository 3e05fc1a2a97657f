"""`transformers`: in-process batched greedy generation (the default backend).

Greedy decoding runs on `greedy_engine`: continuous batching over one KV slot table sized from free device
memory (CUDA) or a measured default (CPU), slots reserved for the p95 of answers seen so far (overflowing
answers continued), attention that reads the shared prefix once per step, CUDA graphs on GPU. Sampling, and
models the engine cannot serve, use `generate` on batches sorted by length under a token budget. dtype: fp32
on CPU; on a GPU the checkpoint's half precision (fp16 for GREEN models), bf16 otherwise. The token prefix
every prompt shares (a scoring system's instructions) is computed once per call, and on the engine so is what
several prompts share past it (one reference, several candidates: `greedy_engine` via `shared_stems`). A CUDA out-of-memory halves
the table / batch and retries what is unanswered instead of ending the run. Weights load on first use, once
per process (see `radmetrics.judge.get_judge`).
"""
from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass
from typing import Any, ClassVar

from radmetrics.errors import JudgeError
from radmetrics.judge.base import BackendOptions, JudgeBackend, OnResult, local_weights_identity
from radmetrics.judge.batching import BatchPlan
from radmetrics.judge.chat_formats import AUTO_RULES, encode_prompts, prompt_formats, resolve_chat_format
from radmetrics.judge.cpu_attention import CPU_ATTENTION
from radmetrics.judge.cpu_linear import CPU_LINEAR, onednn_linears
from radmetrics.judge.greedy_engine import DECODE_ATTENTION, cache_argument, returned_cache
from radmetrics.judge.greedy_engine import is_out_of_memory as _is_oom
from radmetrics.types import DTYPE_CHOICES, TORCH_DTYPE_NAMES, CutAnswer, GenerationConfig, cut_at_limit

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TransformersOptions(BackendOptions):
    """Options of the transformers backend (`--judge-option KEY=VALUE`, `judge_options={...}`)."""

    #: "auto" (fp32 on CPU; on a GPU the checkpoint's fp16/bf16, fp16 for GREEN models), "bf16", "fp16" or "fp32"
    dtype: str = "auto"
    #: "auto" (CUDA when there is one), "cpu", "cuda", "cuda:1", ...
    device: str = "auto"
    #: "auto" (GREEN's format for GREEN prompts and GREEN models, else the tokenizer's template), "green", "none",
    #: or a Jinja template
    chat_template: str = "auto"
    #: rows decoded together; None: the engine sizes its slot table from free memory (generate path: 32)
    max_batch_size: int | None = None
    #: KV tokens (own prompt + answer slots) the engine's table / one generate batch may hold; None: from free
    #: device memory (generate path: 65,536)
    max_batch_tokens: int | None = None
    #: keep only the last this many prompt tokens
    max_input_tokens: int | None = None
    trust_remote_code: bool = False
    attn_implementation: str | None = None
    #: compute the token prefix every prompt shares once per call
    prefix_cache: bool = True
    #: engine: compute once what several prompts share past that prefix (one reference judged against several
    #: candidates: a GRPO group, systems compared on one test set); answers unchanged
    share_stems: bool = True
    #: False: always HF generate (the reference path)
    engine: bool = True
    prefill_chunk_tokens: int | None = None
    #: answer tokens the engine reserves a slot for before it has seen 16 answers (then their p95)
    answer_tokens: int = 512
    #: decode steps as CUDA graphs (one per batch bucket) on a GPU
    cuda_graphs: bool = True
    #: prompt-lookup guesses a CPU decode step checks per row (answers unchanged; used while few rows are left and
    #: only when measured faster); None: the engine's default (4), 0: never
    draft_tokens: int | None = None
    #: how the engine's decode steps attend to each row's own keys: "cascade" (default: over each slot's whole
    #: window) or "varlen" (length-aware: only the filled columns; CUDA kernels; not measured faster yet, see
    #: greedy_engine.DECODE_ATTENTION). Answers unchanged up to kernels' rounding
    decode_attention: str = "cascade"
    #: the product of a CPU judge's fp32 linear layers: "auto" (oneDNN's for layers of at least 512 x 512 weights,
    #: much faster than PyTorch's MKL one on AMD CPUs, see radmetrics.judge.cpu_linear), "onednn" (every layer) or
    #: "torch" (PyTorch's own). Answers unchanged up to kernels' rounding
    cpu_linear: str = "auto"
    #: a CPU fp32 judge's decode attention: "auto" (a small C kernel built on first use with the system's compiler,
    #: 1.5-1.7x faster than PyTorch's products at 96 rows, see radmetrics.judge.cpu_attention; PyTorch's where no
    #: compiler builds it) or "torch". Answers unchanged up to kernels' rounding
    cpu_attention: str = "auto"

    _CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"dtype": DTYPE_CHOICES, "decode_attention": DECODE_ATTENTION,
                                                      "cpu_linear": CPU_LINEAR, "cpu_attention": CPU_ATTENTION}
    # max_input_tokens=-5 kept all but the first 5 tokens (a negative slice), max_batch_size=-1 planned batches of
    # -1 rows: refused when the judge is built, beside every other option's check
    _LEAST: ClassVar[dict[str, tuple[float, bool]]] = {
        "max_batch_size": (1, False), "max_batch_tokens": (1, False), "max_input_tokens": (1, False),
        "prefill_chunk_tokens": (1, False), "answer_tokens": (1, False), "draft_tokens": (0, False)}


class TransformersJudge(JudgeBackend):
    backend_name = "transformers"
    options_class = TransformersOptions

    def __init__(self, model: str | None = None, **options: Any):
        if not model:
            raise JudgeError("The transformers backend needs model= (a Hub id or a local folder), e.g. "
                             "'StanfordAIMI/GREEN-RadLlama2-7b'.")
        super().__init__(model=model, **options)
        settings: TransformersOptions = self.settings  # type: ignore[assignment]
        self.dtype_name, self.device_name = settings.dtype, settings.device
        # the other options as attributes of the same name (answer_tokens: KV slots the engine reserves per
        # answer before it has seen any; then the p95 of answers so far)
        for name in ("chat_template", "max_batch_size", "max_batch_tokens", "max_input_tokens", "trust_remote_code",
                     "attn_implementation", "prefix_cache", "engine", "prefill_chunk_tokens", "answer_tokens",
                     "cuda_graphs", "draft_tokens", "share_stems", "decode_attention", "cpu_linear", "cpu_attention"):
            setattr(self, name, getattr(settings, name))
        self._answer_lengths: list[int] = []  # new-token counts of recent answers (the reserve's estimate)
        self._load_lock = threading.Lock()
        self._model = None
        self._tokenizer = None
        # before the weights load: the checkpoint's context and tokenizer, read once for the cache's check of
        # cached answers (`cached_answers_past_context`; the CLI checks every chunk)
        self._checkpoint: dict[str, Any] = {}
        self.chat_format: str | None = None
        self._oom_cap: int | None = None  # batch-size ceiling learned from an out-of-memory
        # taken when the judge is made, before its weights load: the key matches the weights it answers with
        self._local_weights = local_weights_identity(self.model)

    def identity(self) -> dict[str, Any]:
        template = self.chat_template
        if len(template) > 40:  # a custom Jinja template: hash it
            template = hashlib.sha256(template.encode()).hexdigest()[:16]
        rules = {"chat_auto_rules": AUTO_RULES} if template == "auto" else {}
        return {**super().identity(), **self._local_weights, "chat_template": template, **rules,
                "dtype": self.dtype_name}

    @classmethod
    def from_objects(cls, model: Any, tokenizer: Any, name: str, **options: Any) -> TransformersJudge:
        """A judge over an already loaded model and tokenizer (notebooks, benchmarks, training loops)."""
        judge = cls(model=name, **options)
        judge._attach(model, tokenizer, str(next(model.parameters()).device))
        return judge

    def _attach(self, model: Any, tokenizer: Any, device: str) -> None:
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:  # GREEN sets pad = eos too
            tokenizer.pad_token = tokenizer.eos_token
        self.device = device
        self._tokenizer, self._model = tokenizer, model.eval()
        self.chat_format = resolve_chat_format(self.chat_template, self.model, tokenizer)

    # -- loading -----------------------------------------------------------------------------------------
    def load(self) -> None:
        with self._load_lock:
            if self._model is not None:
                return
            from transformers import AutoModelForCausalLM, AutoTokenizer

            device = self._resolved_device()
            kwargs: dict[str, Any] = {"revision": self.revision, "trust_remote_code": self.trust_remote_code}
            try:
                dtype = self._resolved_dtype(device)
                tokenizer = AutoTokenizer.from_pretrained(self.model, **kwargs)
                model_kwargs = dict(kwargs, dtype=dtype)
                if self.attn_implementation:
                    model_kwargs["attn_implementation"] = self.attn_implementation
                model = AutoModelForCausalLM.from_pretrained(self.model, **model_kwargs)
            except OSError as e:
                raise JudgeError(f"Could not load judge model {self.model!r}: {e}") from e
            self._attach(model.to(device), tokenizer, device)
            log.info("loaded judge %s on %s (%s), chat format %s", self.model, device, dtype, self.chat_format)

    def runtime(self) -> dict[str, str]:
        """Where and in what precision the judge runs, ``auto`` resolved (e.g. ``{"device": "cpu", "dtype":
        "float32"}``): in result fingerprints, so a reader knows fp32 from fp16; not in cache keys. Before the
        weights load it is worked out as loading will (on a GPU from the checkpoint's config, never its weights)."""
        if self._model is not None:
            dtype = next(self._model.parameters()).dtype
            return {"device": str(self.device), "dtype": str(dtype).removeprefix("torch.")}
        device = self._resolved_device()
        try:
            dtype = self._resolved_dtype(device)
        except Exception:  # noqa: BLE001 - a config not reachable yet: loading will say so in its own words
            return {"device": device, "dtype": self.dtype_name}
        return {"device": device, "dtype": str(dtype).removeprefix("torch.")}

    def _resolved_device(self) -> str:
        if self.device_name != "auto":
            return self.device_name
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    def _resolved_dtype(self, device: str):
        import torch

        if self.dtype_name == "auto":
            return self._auto_dtype(device, {"revision": self.revision, "trust_remote_code": self.trust_remote_code})
        return getattr(torch, TORCH_DTYPE_NAMES[self.dtype_name])

    def _auto_dtype(self, device: str, kwargs: dict[str, Any]):
        """fp32 on CPU; on a GPU the checkpoint's own half precision (GREEN models: fp16, as upstream runs them),
        bf16 for checkpoints saved in fp32. ``dtype=`` overrides."""
        import torch
        from transformers import AutoConfig

        if not device.startswith("cuda"):
            return torch.float32
        config = AutoConfig.from_pretrained(self.model, **kwargs)
        saved = getattr(config.get_text_config(decoder=True), "dtype", None) or getattr(config, "torch_dtype", None)
        if isinstance(saved, str):
            saved = getattr(torch, saved, None)
        return saved if saved in (torch.float16, torch.bfloat16) else torch.bfloat16

    @property
    def tokenizer(self):
        self.load()
        return self._tokenizer

    def encode(self, prompt: str) -> list[int]:
        """Token ids the model sees for a scoring-system prompt (chat format applied)."""
        return self.encode_many([prompt])[0]

    def encode_many(self, prompts: list[str]) -> list[list[int]]:
        self.load()  # the chat format is known only once the tokenizer is loaded
        return self._encode_with(self._tokenizer, prompts)  # max_input_tokens: keeps the end (instructions, answer slot)

    # -- generation --------------------------------------------------------------------------------------
    #: the generate path's defaults (the engine sizes itself from memory)
    GENERATE_BATCH_SIZE = 32
    GENERATE_BATCH_TOKENS = 65536

    def plan_batches(self, lengths: list[int], max_new_tokens: int) -> list[list[int]]:
        """Indices grouped longest-first into batches that fit the token budget and the size cap
        (radmetrics.judge.batching); the generate path's defaults when none are set."""
        return BatchPlan.make(lengths, max_new_tokens, self.max_batch_size or self.GENERATE_BATCH_SIZE,
                              self.max_batch_tokens or self.GENERATE_BATCH_TOKENS, self._oom_cap).pending

    def _generate(self, prompts: list[str], config: GenerationConfig, on_result: OnResult | None,
                  progress: bool) -> list[str]:
        self.load()
        # large fp32 layers on a CPU through oneDNN for this call (`cpu_linear`): one kernel choice for every path
        with onednn_linears(self._model, self.cpu_linear, prompts=len(prompts)):
            return self._generate_loaded(prompts, config, on_result, progress)

    def _generate_loaded(self, prompts: list[str], config: GenerationConfig, on_result: OnResult | None,
                         progress: bool) -> list[str]:
        """Answers of the prompts that fit the model's positions; a longer prompt is answered with a failure naming
        both lengths (review 33: it went to the model with no word, which read it past the positions it was
        trained on, and a judge answering in format would have been scored; a server refuses such a prompt).

        An answer gets at most the positions its prompt leaves in the context (prompt + answer <= context, as
        a server's max_model_len and generate's max_length count): one that reaches that end unfinished is a
        `CutAnswer` naming the context, an unscored row. Before, it went on past the positions the model was
        trained on and was scored (a RoPE judge), or stopped the whole run with an IndexError (learned position
        embeddings, GPT-2's)."""
        from radmetrics.judge.base import context_failure

        encoded = self.encode_many(prompts)
        context, context_name = self._context()
        fits = [i for i, ids in enumerate(encoded) if context is None or len(ids) < context]
        limits = [min(config.max_new_tokens, context - len(encoded[i])) if context else config.max_new_tokens
                  for i in fits]

        def context_cut(k: int, answer: str) -> str:
            if isinstance(answer, CutAnswer) and limits[k] < config.max_new_tokens:
                return CutAnswer(str(answer), limits[k], context)
            return answer

        if len(fits) == len(encoded) and all(n == config.max_new_tokens for n in limits):
            return self._generate_encoded(encoded, config, on_result, progress)
        out: list[str] = [""] * len(prompts)
        for i in sorted(set(range(len(prompts))) - set(fits)):
            out[i] = context_failure(len(encoded[i]), context, context_name)
            if on_result:
                on_result(i, out[i])
        if fits:
            answers = self._generate_encoded([encoded[i] for i in fits], config,
                                             (lambda k, text: on_result(fits[k], context_cut(k, text)))
                                             if on_result else None, progress, limits)
            for k, (i, answer) in enumerate(zip(fits, answers)):
                out[i] = context_cut(k, answer)
        return out

    #: a cached answer re-encoded within this many tokens of its prompt's room is asked again (re-encoding a text
    #: can give a few tokens more or fewer than were generated); only answers an older radmetrics cached, or cached
    #: under a longer context than the judge's now, are checked (`CachedJudge._read_cached`)
    ROOM_SLACK = 8

    def cached_answers_past_context(self, prompts: list[str], answers: list[str],
                                    config: GenerationConfig) -> list[bool]:
        """Which cached answers may run past the positions their prompt leaves in the judge's context: answers
        cached before radmetrics stopped each row there (session 30) went on past the positions the model was
        trained on, and were scored. The response cache asks those again (`CachedJudge`). Reads the tokenizer and
        the config from this machine's files, never the weights or the network (a fully cached run still loads no
        model and makes no call); where they are not here, the answers are served as before. Only prompts that could reach the
        context are encoded: one whose UTF-8 bytes (at least its tokens) + max_new_tokens + a margin for the chat
        format stay within it is never past it."""
        context = self.context_tokens()  # None where the judge's files are not here: served as before, not lost
        if context is None or not prompts:
            return [False] * len(prompts)
        margin = 64  # the chat format's own tokens
        near = [i for i, p in enumerate(prompts)
                if len(p.encode("utf-8")) + min(config.max_new_tokens, 2**62) + margin > context]
        past = [False] * len(prompts)
        if near:
            tokenizer = self._tokenizer_only()
            if tokenizer is None:
                return past
            encoded = self._encode_with(tokenizer, [prompts[i] for i in near])
            answered = tokenizer([str(answers[i]) for i in near], add_special_tokens=False)["input_ids"]
            for i, ids, answer in zip(near, encoded, answered):
                past[i] = len(ids) + len(answer) + self.ROOM_SLACK > context
        return past

    def _tokenizer_only(self):
        """The judge's tokenizer, without loading its weights when they are not loaded yet; from files already on
        this machine only (`_local_folder`), None where there are none."""
        if self._tokenizer is not None:
            return self._tokenizer
        if "tokenizer" not in self._checkpoint:
            from transformers import AutoTokenizer

            self._checkpoint["tokenizer"] = self._read_local(AutoTokenizer)
        return self._checkpoint["tokenizer"]

    def _read_local(self, auto_class: Any) -> Any:
        """``auto_class`` (AutoConfig, AutoTokenizer) from the judge's files on this machine; None where they are not
        here or cannot be read."""
        folder = self._local_folder()
        if folder is None:
            return None
        try:
            return auto_class.from_pretrained(folder, trust_remote_code=self.trust_remote_code)
        except (OSError, ValueError) as e:
            log.info("%s not read from %s (%s)", auto_class.__name__, folder, e)
            return None

    def _local_folder(self) -> str | None:
        """The judge's files on this machine: its folder, or its Hub snapshot in the local cache; None where they
        are not here. Looked up without any network call (transformers' loaders, even with local_files_only, ask
        the Hub for its agent registry)."""
        import os

        if os.path.isdir(self.model):
            return self.model
        try:
            from huggingface_hub import try_to_load_from_cache

            config = try_to_load_from_cache(self.model, "config.json", revision=self.revision)
        except Exception:  # noqa: BLE001 - a name that is no repo id: nothing cached under it
            return None
        return os.path.dirname(config) if isinstance(config, str) else None

    def _encode_with(self, tokenizer: Any, prompts: list[str]) -> list[list[int]]:
        """`encode_many` with a given tokenizer (its chat format resolved from it)."""
        chat_format = self.chat_format if self._tokenizer is tokenizer else resolve_chat_format(
            self.chat_template, self.model, tokenizer)
        encoded = encode_prompts(prompts, prompt_formats(prompts, self.chat_template, chat_format), tokenizer)
        if self.max_input_tokens:
            encoded = [ids[-self.max_input_tokens :] if len(ids) > self.max_input_tokens else ids for ids in encoded]
        return encoded

    def context_tokens(self) -> int | None:
        """The most positions the model was trained on (Llama's max_position_embeddings, GPT-2's n_positions),
        from the loaded model's config, or before the weights are loaded the checkpoint's on this machine (None
        where its files are not here: `_local_folder`)."""
        return self._context()[0]

    def _context(self) -> tuple[int | None, str]:
        """`context_tokens` and where it comes from, in words ("max_position_embeddings", "n_positions x its RoPE
        scaling factor of 4")."""
        if self._model is not None:
            config = self._model.config
        else:
            if "config" not in self._checkpoint:
                from transformers import AutoConfig

                self._checkpoint["config"] = self._read_local(AutoConfig)
            config = self._checkpoint["config"]
            if config is None:
                return None, ""
        # a multimodal judge (Gemma 3, Llava) keeps its decoder's positions in its text config
        text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
        # the smallest of the lengths the config states, as vLLM takes it: a config with max_position_embeddings
        # 4,096 and n_positions (or max_seq_len, model_max_length) 1,024 has 1,024 positions there, not 4,096
        lengths = {name: getattr(text, name, None) for name in _CONTEXT_KEYS}
        lengths = {name: v for name, v in lengths.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}
        if not lengths:
            return None, ""
        name = min(lengths, key=lengths.__getitem__)  # the first named of equal ones
        factor = rope_context_factor(text)
        return int(lengths[name] * factor), name + (f" x its RoPE scaling factor of {factor:g}" if factor != 1 else "")

    def _generate_encoded(self, encoded: list[list[int]], config: GenerationConfig, on_result: OnResult | None,
                          progress: bool, limits: list[int] | None = None) -> list[str]:
        """``limits``: each prompt's cap on answer tokens where its room in the context is below max_new_tokens
        (`_generate_loaded`); generate runs such prompts in batches of their own, with that cap."""
        import dataclasses

        from tqdm.auto import tqdm

        out: list[str] = [""] * len(encoded)
        prefix = self._shared_prefix(encoded)
        if self._uses_engine(config) and self._within_attention_window(encoded, config):
            return self._generate_engine(encoded, config, prefix, on_result, progress, limits)
        by_limit: dict[int, list[int]] = {}
        for i in range(len(encoded)):
            by_limit.setdefault(limits[i] if limits else config.max_new_tokens, []).append(i)
        with tqdm(total=len(encoded), desc=f"judge {self.model}", disable=not progress, unit="report") as bar:
            for limit, indices in sorted(by_limit.items(), reverse=True):
                limited = dataclasses.replace(config, max_new_tokens=limit,
                                              min_new_tokens=min(config.min_new_tokens, limit))
                self._generate_batches(encoded, indices, limited, prefix, out, on_result, bar)
        return out

    def _generate_batches(self, encoded: list[list[int]], indices: list[int], config: GenerationConfig,
                          prefix: tuple[Any, int] | None, out: list[str], on_result: OnResult | None, bar: Any) -> None:
        """``generate`` over the prompts ``indices``, in batches under the token budget; answers into ``out``."""
        sizes = [len(encoded[i]) - (prefix[1] if prefix else 0) for i in indices]
        plan = BatchPlan.make(sizes, config.max_new_tokens, self.max_batch_size or self.GENERATE_BATCH_SIZE,
                              self.max_batch_tokens or self.GENERATE_BATCH_TOKENS, self._oom_cap)
        while plan:
            planned = plan.next()  # positions in ``indices``
            batch = [indices[j] for j in planned]
            try:
                texts = self._generate_batch([encoded[i] for i in batch], config, prefix)
            except Exception as e:  # noqa: BLE001 - only CUDA OOM is handled, the rest re-raised
                if not _is_oom(e) or len(batch) == 1:
                    raise
                self._free_memory()
                # Re-plan this batch and every later one under the new ceiling (kept for later calls).
                self._oom_cap = plan.out_of_memory(planned)
                log.warning("out of GPU memory at batch size %d; retrying with batches of at most %d",
                            len(batch), self._oom_cap)
                continue
            for i, text in zip(batch, texts):
                out[i] = text
                if on_result:
                    on_result(i, text)
            bar.update(len(batch))

    #: below this many shared tokens a prefix cache is not worth its copies
    MIN_PREFIX_TOKENS = 16

    def _shared_prefix(self, encoded: list[list[int]]) -> tuple[Any, int] | None:
        """KV cache of the token prefix every prompt shares (GREEN: ~2/3 of each prompt, the instructions),
        computed once per call and reused by every batch; None when there is none worth caching."""
        if not self.prefix_cache or len(encoded) < 2:
            return None
        first = encoded[0]
        length = min(len(e) for e in encoded) - 1  # each row keeps at least one token of its own
        for ids in encoded[1:]:
            n = 0
            while n < length and ids[n] == first[n]:
                n += 1
            length = n
        if length < self.MIN_PREFIX_TOKENS:
            return None
        import torch

        try:
            with torch.inference_mode():
                ids = torch.tensor([first[:length]], device=self.device)
                cache = returned_cache(self._model(input_ids=ids, use_cache=True))
            cache.batch_repeat_interleave  # noqa: B018 - a DynamicCache-like cache is required
        except Exception as e:  # noqa: BLE001 - an architecture without a reusable cache: plain batches
            log.info("prefix cache unavailable for %s (%s); using plain batches", self.model, e)
            self.prefix_cache = False
            return None
        return cache, length

    def _within_attention_window(self, encoded: list[list[int]], config: GenerationConfig) -> bool:
        """False (generate then runs) for a sliding-window model whose window a prompt + answer could outgrow:
        the engine attends to every column of a row."""
        from radmetrics.judge.greedy_engine import outgrown_window

        window = outgrown_window(self._model, max(map(len, encoded)), config.max_new_tokens)
        if window is None:
            return True
        log.info("prompts + answers may outgrow %s's %d-token sliding window; using generate", self.model, window)
        return False

    def _uses_engine(self, config: GenerationConfig) -> bool:
        from radmetrics.judge.greedy_engine import supports_engine

        if not self.engine or (config.temperature and config.temperature > 0):
            return False
        if not supports_engine(self._model):
            log.info("greedy engine unavailable for %s; using generate", self.model)
            self.engine = False
            return False
        return True

    def _generate_engine(self, encoded: list[list[int]], config: GenerationConfig, prefix: tuple[Any, int] | None,
                         on_result: OnResult | None, progress: bool, limits: list[int] | None = None) -> list[str]:
        """All prompts through the greedy engine (continuous batching over one slot table sized from memory);
        each answer is handed to ``on_result`` as its row finishes. A CUDA out-of-memory halves the table and
        runs the rows not answered yet again."""
        from tqdm.auto import tqdm

        from radmetrics.judge.greedy_engine import SharedPrefix, answer_reserve, greedy_generate, kv_bytes_per_token

        tok = self._tokenizer
        out: list[str | None] = [None] * len(encoded)
        reserve = answer_reserve(self._answer_lengths, config.max_new_tokens, config.min_new_tokens or 0,
                                 typical=self.answer_tokens)
        budget = self.max_batch_tokens * kv_bytes_per_token(self._model) if self.max_batch_tokens else None
        todo = list(range(len(encoded)))
        with tqdm(total=len(encoded), desc=f"judge {self.model}", disable=not progress, unit="report") as bar:

            def done(k: int, ids: list[int]) -> None:
                i = todo[k]
                self._answer_lengths = (self._answer_lengths + [len(ids)])[-1000:]
                limit = limits[i] if limits else config.max_new_tokens
                out[i] = _answer(tok.decode(ids, skip_special_tokens=True), config,
                                 cut=len(ids) >= limit)  # no end token within the limit
                if on_result:
                    on_result(i, out[i])
                bar.update(1)

            plans: list[Any] = []
            while todo:
                caps = [r for r in (self._oom_cap, self.max_batch_size) if r]
                rows = min(caps) if caps else None  # None: sized from memory
                try:
                    greedy_generate(self._model, [encoded[i] for i in todo], max_new_tokens=config.max_new_tokens,
                                    min_new_tokens=config.min_new_tokens or 0, eos_token_id=self._end_ids(),
                                    pad_token_id=tok.pad_token_id,
                                    prefix=SharedPrefix(*prefix) if prefix else None,
                                    prefill_chunk_tokens=self.prefill_chunk_tokens, max_rows=rows, reserve=reserve,
                                    memory_budget_bytes=budget, cuda_graphs=self.cuda_graphs,
                                    draft_tokens=self.draft_tokens, share_stems=self.share_stems,
                                    decode_attention=self.decode_attention, cpu_attention=self.cpu_attention,
                                    on_row_done=done,
                                    on_plan=plans.append, limits=[limits[i] for i in todo] if limits else None)
                except Exception as e:  # noqa: BLE001 - only CUDA OOM is handled, the rest re-raised
                    if not _is_oom(e):
                        raise
                    self._free_memory()
                    todo = [i for i in todo if out[i] is None]  # answers already given are kept
                    last = plans[-1].rows if plans else (rows or 2)
                    if last <= 1:
                        raise
                    self._oom_cap = max(1, last // 2)
                    log.warning("out of GPU memory with %d rows; retrying the %d unanswered prompts with at most %d",
                                last, len(todo), self._oom_cap)
                    continue
                todo = []
        return out  # type: ignore[return-value]

    def _generate_batch(self, batch_ids: list[list[int]], config: GenerationConfig,
                        prefix: tuple[Any, int] | None = None) -> list[str]:
        return self._generate_with_hf(batch_ids, config, prefix)

    def _generate_with_hf(self, batch_ids: list[list[int]], config: GenerationConfig,
                          prefix: tuple[Any, int] | None = None) -> list[str]:
        """`model.generate`: sampling, and models the greedy engine cannot serve."""
        import copy

        import torch

        tok = self._tokenizer
        ends = self._end_ids()
        kwargs: dict[str, Any] = {"max_new_tokens": config.max_new_tokens, "pad_token_id": tok.pad_token_id,
                                  "eos_token_id": ends}
        if prefix is None:
            padded = tok.pad({"input_ids": batch_ids}, padding=True, return_tensors="pt").to(self.device)
        else:
            # [shared prefix][padding][own tokens]: the prefix KV is computed once; padding sits between
            # prefix and suffix, masked out. Every row's real tokens get the positions (hence RoPE angles) they
            # would have unpadded from the mask: generate numbers them by its running sum (prefix 0..P-1, own
            # tokens from P on), prompt and answer alike. Equal to left padding. Positions are not passed: before
            # transformers 5 (PR #43734) generate does not advance explicit ones, and every answer token got the
            # last prompt token's position (wrong answers; review of session 15 on 4.56 and 4.57).
            cache, length = prefix
            own = [ids[length:] for ids in batch_ids]
            width = max(len(o) for o in own)
            rows, mask = [], []
            for o in own:
                pad = width - len(o)
                rows.append(batch_ids[0][:length] + [tok.pad_token_id] * pad + o)
                mask.append([1] * length + [0] * pad + [1] * len(o))
            batch_cache = copy.deepcopy(cache)
            batch_cache.batch_repeat_interleave(len(rows))
            padded = {"input_ids": torch.tensor(rows, device=self.device),
                      "attention_mask": torch.tensor(mask, device=self.device)}
            kwargs[cache_argument(self._model)] = batch_cache
        if config.min_new_tokens:
            kwargs["min_new_tokens"] = config.min_new_tokens
        if config.temperature and config.temperature > 0:
            if config.seed is not None:
                torch.manual_seed(config.seed)
            kwargs.update(do_sample=True, temperature=config.temperature, top_p=config.top_p)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            generated = self._model.generate(**padded, **kwargs)
        new_tokens = generated[:, padded["input_ids"].shape[1] :]
        # each answer up to its first end token (as the engine's; an end token that is no special token would
        # otherwise be decoded into the text); a row with none among max_new_tokens stopped at the limit
        is_end = torch.isin(new_tokens, torch.tensor(ends, device=new_tokens.device))
        lengths = torch.where(is_end.any(dim=1), is_end.int().argmax(dim=1), new_tokens.shape[1]).tolist()
        texts = [tok.decode(row[:n], skip_special_tokens=True) for row, n in zip(new_tokens.tolist(), lengths)]
        limit = config.max_new_tokens
        return [_answer(t, config, cut=n >= limit) for t, n in zip(texts, lengths)]

    def _end_ids(self) -> list[int]:
        """The tokens that end an answer: the tokenizer's end token, and those the model's generation config lists
        (a chat model may end its turn with another, e.g. Gemma's <end_of_turn>; `generate` with no eos argument,
        as the official GREEN loop calls it, stops at the config's)."""
        ends = [self._tokenizer.eos_token_id]
        configured = getattr(getattr(self._model, "generation_config", None), "eos_token_id", None)
        ends += configured if isinstance(configured, (list, tuple)) else [configured]
        ends = [int(e) for e in dict.fromkeys(ends) if e is not None]
        if not ends:
            raise JudgeError(f"{self.model}: neither its tokenizer nor its generation config names an end token, so "
                             "no answer could end before max_new_tokens")
        return ends

    def _free_memory(self) -> None:
        import gc

        import torch

        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def _answer(text: str, config: GenerationConfig, cut: bool) -> str:
    """The answer as handed on: cut at the first stop string (an answer that has one ended there, whatever its
    length), else a `CutAnswer` when generation stopped at max_new_tokens."""
    stopped = _apply_stop(text, config.stop)
    return cut_at_limit(stopped, config.max_new_tokens, cut and stopped == text)


def _apply_stop(text: str, stop: tuple[str, ...]) -> str:
    cut = min((text.find(s) for s in stop if s in text), default=-1)
    return text[:cut] if cut >= 0 else text


#: the config fields that state a judge's context, in vLLM's order (`derive_max_model_len_and_key`); the smallest holds
_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                 "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")

#: RoPE scalings whose config already states the scaled context in max_position_embeddings (vLLM's list)
_ROPE_ALREADY_SCALED = frozenset({"su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"})


def rope_context_factor(text_config: Any) -> float:
    """How many times its max_position_embeddings a RoPE-scaled judge's context holds, as vLLM derives its
    max_model_len (vllm/config/model.py, `_get_and_verify_max_len`), so that the in-process backend stops rows where
    a vLLM server of the same judge would: "linear" and "dynamic" scaling (any type with a factor, but those in
    `_ROPE_ALREADY_SCALED`) multiply it by the factor (vicuna-7b-v1.5-16k: 4,096 positions x 4); Llama 3.1's
    "llama3", YaRN and LongRoPE configs state the scaled length already, and so does Gemma 3's. Read from
    ``rope_parameters`` (transformers 5) or ``rope_scaling`` (4.x), per layer type where they are nested."""
    if "gemma3" in str(getattr(text_config, "model_type", "")):
        return 1.0
    rope = getattr(text_config, "rope_parameters", None) or getattr(text_config, "rope_scaling", None)
    if not isinstance(rope, dict) or not rope:
        return 1.0
    nested = all(isinstance(v, dict) for v in rope.values())
    factor = 1.0
    for params in (rope.values() if nested else [rope]):
        kind = params.get("rope_type") or params.get("type") or "default"
        value = params.get("factor")
        if kind not in _ROPE_ALREADY_SCALED and kind != "default" and isinstance(value, (int, float)) and value > 0:
            factor = float(value)
    return factor
