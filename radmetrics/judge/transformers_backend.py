"""`transformers`: in-process batched greedy generation (the default backend).

Prompts are sorted by length and packed into batches under a token budget (prompt + new tokens), left
padded; bf16 on GPU, fp32 on CPU. A CUDA out-of-memory halves the batch and retries instead of ending
the run. Weights load on first use, once per process (see `radmetrics.judge.get_judge`).
"""
from __future__ import annotations

import hashlib
import logging
import threading
from typing import Any

from radmetrics.errors import JudgeError
from radmetrics.judge.base import JudgeBackend, OnResult
from radmetrics.judge.chat_formats import render, resolve_chat_format
from radmetrics.types import GenerationConfig

log = logging.getLogger(__name__)


class TransformersJudge(JudgeBackend):
    backend_name = "transformers"

    def __init__(
        self,
        model: str | None = None,
        revision: str | None = None,
        dtype: str = "auto",
        device: str = "auto",
        chat_template: str = "auto",
        max_batch_size: int = 32,
        max_batch_tokens: int = 65536,
        max_input_tokens: int | None = None,
        trust_remote_code: bool = False,
        attn_implementation: str | None = None,
    ):
        if not model:
            raise JudgeError("The transformers backend needs model= (a Hub id or a local folder), e.g. "
                             "'StanfordAIMI/GREEN-RadLlama2-7b'.")
        super().__init__(model=model, revision=revision)
        self.dtype_name = dtype
        self.device_name = device
        self.chat_template = chat_template
        self.max_batch_size = max_batch_size
        self.max_batch_tokens = max_batch_tokens
        self.max_input_tokens = max_input_tokens
        self.trust_remote_code = trust_remote_code
        self.attn_implementation = attn_implementation
        self._load_lock = threading.Lock()
        self._model = None
        self._tokenizer = None
        self.chat_format: str | None = None
        self._oom_cap: int | None = None  # batch-size ceiling learned from an out-of-memory

    def identity(self) -> dict[str, Any]:
        template = self.chat_template
        if len(template) > 40:  # a custom Jinja template: hash it
            template = hashlib.sha256(template.encode()).hexdigest()[:16]
        return {**super().identity(), "chat_template": template, "dtype": self.dtype_name}

    # -- loading -----------------------------------------------------------------------------------------
    def load(self) -> None:
        with self._load_lock:
            if self._model is not None:
                return
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            device = self.device_name
            if device == "auto":
                device = "cuda" if torch.cuda.is_available() else "cpu"
            dtype = {"auto": torch.bfloat16 if device.startswith("cuda") else torch.float32,
                     "bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp16": torch.float16,
                     "float16": torch.float16, "fp32": torch.float32, "float32": torch.float32}[self.dtype_name]
            kwargs: dict[str, Any] = {"revision": self.revision, "trust_remote_code": self.trust_remote_code}
            try:
                tokenizer = AutoTokenizer.from_pretrained(self.model, **kwargs)
                model_kwargs = dict(kwargs, dtype=dtype)
                if self.attn_implementation:
                    model_kwargs["attn_implementation"] = self.attn_implementation
                model = AutoModelForCausalLM.from_pretrained(self.model, **model_kwargs)
            except OSError as e:
                raise JudgeError(f"Could not load judge model {self.model!r}: {e}") from e
            tokenizer.padding_side = "left"
            if tokenizer.pad_token is None:  # GREEN sets pad = eos too
                tokenizer.pad_token = tokenizer.eos_token
            model.to(device).eval()
            self.device = device
            self._tokenizer, self._model = tokenizer, model
            self.chat_format = resolve_chat_format(self.chat_template, self.model, tokenizer)
            log.info("loaded judge %s on %s (%s), chat format %s", self.model, device, dtype, self.chat_format)

    @property
    def tokenizer(self):
        self.load()
        return self._tokenizer

    def encode(self, prompt: str) -> list[int]:
        """Token ids the model sees for a scoring-system prompt (chat format applied)."""
        text, append_eos = render(prompt, self.chat_format or "none", self.tokenizer)
        ids = self.tokenizer(text, add_special_tokens=True)["input_ids"]
        if append_eos and (not ids or ids[-1] != self.tokenizer.eos_token_id):
            ids = ids + [self.tokenizer.eos_token_id]
        if self.max_input_tokens and len(ids) > self.max_input_tokens:
            ids = ids[-self.max_input_tokens :]  # keep the end: the instructions and answer slot
        return ids

    # -- generation --------------------------------------------------------------------------------------
    def plan_batches(self, lengths: list[int], max_new_tokens: int) -> list[list[int]]:
        """Indices grouped longest-first into batches that fit the token budget and the size cap."""
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        cap = min(self.max_batch_size, self._oom_cap or self.max_batch_size)
        batches: list[list[int]] = []
        current: list[int] = []
        for i in order:
            width = (lengths[current[0]] if current else lengths[i]) + max_new_tokens
            if current and (len(current) + 1 > cap or (len(current) + 1) * width > self.max_batch_tokens):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches

    def _generate(self, prompts: list[str], config: GenerationConfig, on_result: OnResult | None,
                  progress: bool) -> list[str]:
        from tqdm.auto import tqdm

        self.load()
        encoded = [self.encode(p) for p in prompts]
        out: list[str] = [""] * len(prompts)
        pending = self.plan_batches([len(e) for e in encoded], config.max_new_tokens)
        with tqdm(total=len(prompts), desc=f"judge {self.model}", disable=not progress, unit="report") as bar:
            while pending:
                batch = pending.pop(0)
                try:
                    texts = self._generate_batch([encoded[i] for i in batch], config)
                except Exception as e:  # noqa: BLE001 - only CUDA OOM is handled, the rest re-raised
                    if not _is_oom(e) or len(batch) == 1:
                        raise
                    self._free_memory()
                    self._oom_cap = len(batch) // 2
                    log.warning("out of GPU memory at batch size %d; retrying with batches of at most %d",
                                len(batch), self._oom_cap)
                    # Re-plan this batch and every later one under the new ceiling (kept for later calls).
                    rest = [i for b in [batch, *pending] for i in b]
                    pending = [rest[k : k + self._oom_cap] for k in range(0, len(rest), self._oom_cap)]
                    continue
                for i, text in zip(batch, texts):
                    out[i] = text
                    if on_result:
                        on_result(i, text)
                bar.update(len(batch))
        return out

    def _generate_batch(self, batch_ids: list[list[int]], config: GenerationConfig) -> list[str]:
        import torch

        tok = self._tokenizer
        padded = tok.pad({"input_ids": batch_ids}, padding=True, return_tensors="pt").to(self.device)
        kwargs: dict[str, Any] = {"max_new_tokens": config.max_new_tokens, "pad_token_id": tok.pad_token_id,
                                  "eos_token_id": tok.eos_token_id}
        if config.temperature and config.temperature > 0:
            if config.seed is not None:
                torch.manual_seed(config.seed)
            kwargs.update(do_sample=True, temperature=config.temperature, top_p=config.top_p)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            generated = self._model.generate(**padded, **kwargs)
        new_tokens = generated[:, padded["input_ids"].shape[1] :]
        texts = tok.batch_decode(new_tokens, skip_special_tokens=True)
        return [_apply_stop(t, config.stop) for t in texts]

    def _free_memory(self) -> None:
        import gc

        import torch

        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def _is_oom(error: BaseException) -> bool:
    return type(error).__name__ == "OutOfMemoryError" or "out of memory" in str(error).lower()


def _apply_stop(text: str, stop: tuple[str, ...]) -> str:
    cut = min((text.find(s) for s in stop if s in text), default=-1)
    return text[:cut] if cut >= 0 else text
