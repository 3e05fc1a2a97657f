"""`openai`: any OpenAI-compatible server (vLLM, SGLang, TGI, transformers serve, hosted APIs).

Bounded concurrency (a thread pool), per-request timeouts, retries with exponential backoff on 429/5xx,
connection errors and unreadable bodies, honouring Retry-After. A request that still fails becomes a
`GenerationFailure` for that row only. The API key comes from the argument or the environment and is
never logged, written or put in an error message.
"""
from __future__ import annotations

import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from radmetrics.errors import JudgeError, redact
from radmetrics.judge.base import BackendOptions, JudgeBackend, OnResult
from radmetrics.types import GenerationConfig, GenerationFailure

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


@dataclass(frozen=True)
class OpenAIOptions(BackendOptions):
    """Options of the openai backend (`--judge-option KEY=VALUE`, `judge_options={...}`)."""

    #: the server, e.g. http://127.0.0.1:8000/v1 (default $OPENAI_BASE_URL; nothing is sent anywhere otherwise)
    base_url: str | None = None
    #: prefer api_key_env: a key given here is never logged or written, but may sit in shell history
    api_key: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    #: "chat" (/chat/completions) or "completions" (/completions)
    mode: str = "chat"
    concurrency: int = 8
    timeout: float = 120.0
    max_retries: int = 5
    backoff: float = 1.0
    max_backoff: float = 60.0
    system_prompt: str | None = None
    #: extra request fields sent as they are, e.g. {"reasoning_effort": "low"}; part of the cache identity
    extra_body: dict | None = None


class OpenAIJudge(JudgeBackend):
    backend_name = "openai"
    options_class = OpenAIOptions

    def __init__(self, model: str | None = None, **options: Any):
        if not model:
            raise JudgeError("The openai backend needs model= (the model name the server serves).")
        super().__init__(model=model, **options)
        settings: OpenAIOptions = self.settings  # type: ignore[assignment]
        base_url = settings.base_url or os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            raise JudgeError("The openai backend needs base_url= (e.g. http://127.0.0.1:8000/v1) or "
                             "$OPENAI_BASE_URL. Nothing is sent anywhere by default.")
        if settings.mode not in {"chat", "completions"}:
            raise JudgeError(f"mode must be 'chat' or 'completions', not {settings.mode!r}")
        self.base_url = base_url.rstrip("/")
        self._api_key = settings.api_key if settings.api_key is not None else os.environ.get(settings.api_key_env)
        self.mode = settings.mode
        self.concurrency = max(1, int(settings.concurrency))
        self.timeout = settings.timeout
        self.max_retries = settings.max_retries
        self.backoff = settings.backoff
        self.max_backoff = settings.max_backoff
        self.system_prompt = settings.system_prompt
        if settings.extra_body is not None and not isinstance(settings.extra_body, dict):
            raise JudgeError(f"extra_body must be a JSON object of extra request fields, got {settings.extra_body!r}")
        #: extra request fields sent as they are (e.g. {"reasoning_effort": "low"}, VERT Table 4); they change the
        #: answers, so they are part of the identity and of every cache key
        self.extra_body = dict(settings.extra_body or {})
        self._client_lock = threading.Lock()
        self._client = None

    def identity(self) -> dict[str, Any]:
        # Keyed on the model name (+ revision), not the server address: the same model served on another
        # port or host reuses cached answers. Give a revision to tell apart different weights with one name.
        identity = {**super().identity(), "mode": self.mode, "system_prompt": self.system_prompt}
        if self.extra_body:
            identity["extra_body"] = self.extra_body
        return identity

    def __repr__(self) -> str:  # never shows the key
        return f"<OpenAIJudge model={self.model!r} base_url={self.base_url!r}>"

    @property
    def client(self):
        import httpx

        with self._client_lock:
            if self._client is None:
                headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
                self._client = httpx.Client(
                    base_url=self.base_url, headers=headers, timeout=self.timeout,
                    limits=httpx.Limits(max_connections=self.concurrency),
                )
            return self._client

    def _payload(self, prompt: str, config: GenerationConfig) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {"model": self.model, "max_tokens": config.max_new_tokens,
                                "temperature": config.temperature, "top_p": config.top_p}
        if config.stop:
            body["stop"] = list(config.stop)
        if config.seed is not None:
            body["seed"] = config.seed
        if config.min_new_tokens:
            body["min_tokens"] = config.min_new_tokens  # a vLLM / SGLang extension of the API
        body.update(self.extra_body)
        if self.mode == "chat":
            messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
            body["messages"] = messages + [{"role": "user", "content": prompt}]
            return "/chat/completions", body
        body["prompt"] = prompt
        return "/completions", body

    def _extract(self, data: Any) -> str:
        choices = data.get("choices") if isinstance(data, dict) else None
        if not choices:
            raise ValueError("response has no choices")
        choice = choices[0]
        text = (choice.get("message") or {}).get("content") if self.mode == "chat" else choice.get("text")
        if not isinstance(text, str):
            raise ValueError("response choice has no text")
        return text

    def _one(self, prompt: str, config: GenerationConfig) -> str:
        import httpx

        path, body = self._payload(prompt, config)
        last_error = "unknown error"
        for attempt in range(self.max_retries + 1):
            wait = min(self.max_backoff, self.backoff * 2**attempt) * (0.5 + random.random() / 2)
            try:
                response = self.client.post(path, json=body)
                if response.status_code == 200:
                    try:
                        return self._extract(response.json())
                    except ValueError as e:  # non-JSON, truncated JSON, empty choices: retry
                        last_error = f"unreadable response body ({e})"
                elif response.status_code in RETRY_STATUS:
                    last_error = f"HTTP {response.status_code}"
                    retry_after = response.headers.get("retry-after")
                    if retry_after:
                        try:
                            wait = min(self.max_backoff, max(0.0, float(retry_after)))
                        except ValueError:
                            pass
                else:  # 400/401/404...: asking again will not help
                    detail = response.text[:200]
                    return GenerationFailure(self._safe(f"HTTP {response.status_code}: {detail}"))
            except httpx.TimeoutException:
                last_error = f"timeout after {self.timeout}s"
            except httpx.TransportError as e:
                last_error = f"connection error ({type(e).__name__})"
            if attempt < self.max_retries:
                time.sleep(wait)
        return GenerationFailure(self._safe(f"gave up after {self.max_retries + 1} attempts: {last_error}"))

    def _safe(self, message: str) -> str:
        return redact(message, [self._api_key])

    def _generate(self, prompts: list[str], config: GenerationConfig, on_result: OnResult | None,
                  progress: bool) -> list[str]:
        from tqdm.auto import tqdm

        out: list[str] = [""] * len(prompts)
        with ThreadPoolExecutor(self.concurrency) as pool, tqdm(
            total=len(prompts), desc=f"judge {self.model}", disable=not progress, unit="report"
        ) as bar:
            futures = {pool.submit(self._one, p, config): i for i, p in enumerate(prompts)}
            for future in as_completed(futures):
                i = futures[future]
                try:
                    out[i] = future.result()
                except Exception as e:  # a bug in one request must not lose the others
                    out[i] = GenerationFailure(self._safe(f"{type(e).__name__}: {e}"))
                if on_result:
                    on_result(i, out[i])
                bar.update(1)
        return out
