"""`openai`: any OpenAI-compatible server (vLLM, SGLang, TGI, transformers serve, hosted APIs).

Bounded concurrency (a thread pool); a total deadline per request (connect + headers + body: `timeout`), so a
server trickling bytes cannot hold a request; retries with exponential backoff on 429/5xx, connection errors
and unusable bodies (non-JSON, truncated, wrong schema such as {"choices": "abc"}, empty or non-text answers,
bodies over `max_response_bytes`), honouring Retry-After. A request that still fails becomes a
`GenerationFailure` for that row only. Ctrl-C / SIGTERM: nothing new is sent, requests in flight get
`cancel_grace` seconds, every answer received is handed over (and so cached) before the interrupt goes on.
A server that accepts requests but sends nothing is said so on the log (WARNING) after `notice_after` seconds
of silence, then at a growing interval (judge/silence.py), naming the limits and the option that fails sooner.
The API key comes from the argument or the environment and is never logged, written or put in an error
message: every text leaving this module is redacted before any truncation.
"""
from __future__ import annotations

import json
import logging
import os
import random
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, ClassVar

from radmetrics.errors import JudgeError, answer_secrets, credential_fields, redact, shown_url, url_secrets
from radmetrics.judge.base import BackendOptions, JudgeBackend, OnResult
from radmetrics.judge.http_deadline import SLICE as SLICE_S
from radmetrics.judge.http_deadline import RequestBudget, deadline_transport
from radmetrics.judge.silence import SilenceWatch, span
from radmetrics.types import CutAnswer, GenerationConfig, GenerationFailure, cut_at_limit

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
#: an answer to one report is a few KB; a body far beyond that is junk (a 5 MB body was once cached for ever)
MAX_RESPONSE_BYTES = 2_000_000
#: seconds without any response, while requests are out, before a line says the server is slow or stuck
NOTICE_AFTER = 30.0
#: seconds of refused connections, nothing heard, after which a run stops: the server is down, not slow
UNREACHABLE_AFTER = 60.0

log = logging.getLogger(__name__)


#: the HTTP libraries' loggers: httpcore's DEBUG log prints every response header, so a server that echoes the
#: Authorization header would put the key in the user's logs. A logger's filter sees only records logged on that
#: very logger, not its children, so each one is named.
HTTP_LOGGERS = ("httpx", "httpcore", "httpcore.connection", "httpcore.http11", "httpcore.http2", "httpcore.proxy",
                "httpcore.socks")


class _KeyRedactingFilter(logging.Filter):
    """Redacts the keys of every openai judge built in this process from the HTTP libraries' log records."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()
        self._lock = threading.Lock()

    def add(self, secret: object) -> None:
        with self._lock:
            if not self.secrets:
                for name in HTTP_LOGGERS:
                    logging.getLogger(name).addFilter(self)
            self.secrets.add(str(secret))

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            message = record.getMessage()
            safe = redact(message, self.secrets)
            if safe != message:
                record.msg, record.args = safe, ()
        return True


_LOG_REDACTOR = _KeyRedactingFilter()


#: finish reasons of an answer cut at the token limit (a `CutAnswer`: unscored, not cached, "raise --max-new-tokens")
CUT_FINISH_REASONS = frozenset({"length", "max_tokens"})
#: finish reasons of an answer the server stopped for another reason than its end: OpenAI's and Azure's content
#: filter (the text up to the cut comes with it: a GREEN list cut after 3 of 5 findings reads as 3), an aborted or
#: failed request (vLLM "abort")
STOPPED_FINISH_REASONS = frozenset({"content_filter", "abort", "error", "cancelled", "canceled"})


class _StoppedEarly(Exception):
    """A 200 answer that the server ended early, not at its end (`STOPPED_FINISH_REASONS`)."""


class _Unusable(ValueError):
    """A 200 response whose body is no answer (read as a retryable failure)."""


@dataclass(frozen=True)
class OpenAIOptions(BackendOptions):
    """Options of the openai backend (`--judge-option KEY=VALUE`, `judge_options={...}`)."""

    #: the server, e.g. http://127.0.0.1:8000/v1 (default $OPENAI_BASE_URL; nothing is sent anywhere otherwise)
    base_url: str | None = None
    #: prefer api_key_env: a key given here is never logged or written, but may sit in shell history; a
    #: numeric key (--judge-option api_key=123... reads as a number) is a key too
    api_key: str | int | None = field(default=None, repr=False)
    api_key_env: str = "OPENAI_API_KEY"
    #: "chat" (/chat/completions) or "completions" (/completions)
    mode: str = "chat"
    concurrency: int = 8
    timeout: float = 120.0
    max_retries: int = 5
    backoff: float = 1.0
    max_backoff: float = 60.0
    system_prompt: str | None = None
    #: a 200 body longer than this is junk, not an answer: retried, never cached
    max_response_bytes: int = MAX_RESPONSE_BYTES
    #: after Ctrl-C / SIGTERM, how long requests in flight may still finish (their answers are cached)
    cancel_grace: float = 1.0
    #: seconds without any response from the server, while requests are out, before a warning says so (then
    #: again at a growing interval); 0 turns the warning off. Only a notice: `timeout` decides when to give up
    notice_after: float = NOTICE_AFTER
    #: seconds of refused connections (the server is down: nothing listens), with no response at all meanwhile,
    #: after which the run stops instead of failing every remaining row one by one (each after its retries);
    #: answers received are kept, and the same command resumes. 0: never stop
    unreachable_after: float = UNREACHABLE_AFTER
    #: extra request fields sent as they are, e.g. {"reasoning_effort": "low"}; part of the cache identity
    extra_body: dict | None = None
    #: mode=completions only (the server applies its own template in chat mode): "auto" sends a GREEN prompt in
    #: GREEN's chat format with its EOS, as upstream feeds GREEN models and the in-process backends do, other
    #: prompts as they are; "green" every prompt in GREEN's format; "none" every prompt as it is
    chat_format: str = "auto"
    #: the EOS text GREEN's format appends (Llama-2's "</s>" for the published GREEN models)
    eos_text: str = "</s>"

    _LEAST: ClassVar[dict[str, tuple[float, bool]]] = {
        "concurrency": (1, False), "timeout": (0, True), "max_retries": (0, False), "backoff": (0, False),
        "max_backoff": (0, False), "max_response_bytes": (1, False), "cancel_grace": (0, False),
        "notice_after": (0, False), "unreachable_after": (0, False)}


class JudgeUnreachable(JudgeError):
    """The judge server went down during a run (connections refused for `unreachable_after` seconds). The layer
    that knows whether answers were cached (`CachedJudge`) adds what a new run will find."""

    server_down = True


NEEDS_BASE_URL = ("The openai backend needs a server address: --base-url URL on the command line, "
                  "judge_options={'base_url': URL} in Python (e.g. http://127.0.0.1:8000/v1), or $OPENAI_BASE_URL. "
                  "Nothing is sent anywhere by default.")


def base_url_without_scheme(base_url: str, flag: str = "--base-url") -> str | None:
    """Why `base_url` cannot be requested, or None: an address without http:// or https:// (`127.0.0.1:8000/v1`,
    `localhost:8000/v1`) passed the connection probe (which assumes a scheme) and then failed every row's request
    after its retries with "UnsupportedProtocol" (review 29c); one that ends in the endpoint this backend appends
    (`_base_url_with_endpoint`). The address is shown without its credentials."""
    scheme = base_url.split("://", 1)[0].lower() if "://" in base_url else ""
    if scheme in ("http", "https"):
        return _base_url_with_endpoint(base_url, flag)
    if scheme:  # not echoed: what stands before :// may be anything, a key included
        return (f"The judge server address does not start with http:// or https:// ({flag}): the openai backend "
                "speaks HTTP, e.g. http://127.0.0.1:8000/v1")
    shown = redact(shown_url(f"http://{base_url}"), url_secrets(f"http://{base_url}"))
    return f"The judge server address has no http:// or https:// in front ({flag}): e.g. {shown}"


#: the endpoints this backend appends to the address (mode chat, mode completions)
_ENDPOINTS = ("/chat/completions", "/completions")


def _base_url_with_endpoint(base_url: str, flag: str) -> str | None:
    """Why an address that already names an endpoint cannot be requested, or None. lm_eval's local-*-completions
    models take the endpoint in their base_url (the README's example ends in /v1/chat/completions); given here, every
    request went to .../chat/completions/chat/completions and a real server answered each row 404 (review 34)."""
    shown = shown_url(base_url).rstrip("/")
    endpoint = next((e for e in _ENDPOINTS if shown.endswith(e)), None)
    if endpoint is None:
        return None
    base = redact(shown.removesuffix(endpoint), url_secrets(base_url))
    return (f"The judge server address ends in the endpoint {endpoint} ({flag}): give the server's base address, "
            f"e.g. {base} (radmetrics adds the endpoint)")


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
            raise JudgeError(NEEDS_BASE_URL)
        if problem := base_url_without_scheme(base_url, "judge_options={'base_url': URL}"):
            raise JudgeError(problem)
        if settings.mode not in {"chat", "completions"}:
            raise JudgeError(f"mode must be 'chat' or 'completions', not {settings.mode!r}")
        if settings.chat_format not in {"auto", "green", "none"}:
            raise JudgeError(f"chat_format must be 'auto', 'green' or 'none', not {settings.chat_format!r}")
        if settings.mode == "chat" and settings.chat_format != "auto":
            raise JudgeError("chat_format applies to mode=completions: in chat mode the server applies the model's "
                             "own chat template")
        if settings.mode == "completions" and settings.system_prompt:  # it was dropped without a word
            raise JudgeError("system_prompt applies to mode=chat: a completions request has no system message")
        self.chat_format, self.eos_text = settings.chat_format, settings.eos_text
        # a ?query of the address goes with every request (Azure's ?api-version=...), not glued before the path
        address, _, query = base_url.partition("?")
        self.base_url = address.rstrip("/")
        self._query = query
        self._api_key = settings.api_key if settings.api_key is not None else os.environ.get(settings.api_key_env)
        # besides the key, out of every message, row reason and HTTP log line of the process: the address's user
        # name and password (sent as Basic auth) and every value of its ?query, whatever the key (?jwt=, ?sid=;
        # review 21, H2)
        self._secrets = [s for s in (self._api_key, *url_secrets(base_url)) if s is not None]
        # out of the judge's answers (parsed and cached) only what is plausibly secret: the key, the password, a
        # user name alone, credential or token-like query values; not ?stream=false, ?auth=none or the user name
        # beside a password, which would blank those words in the answers (review 20, F2; review 21, M1)
        self._answer_secrets = [s for s in (self._api_key, *answer_secrets(base_url)) if s is not None]
        for secret in self._secrets:
            _LOG_REDACTOR.add(secret)
        self.mode = settings.mode
        self.concurrency = max(1, int(settings.concurrency))
        self.timeout = settings.timeout
        self.max_retries = settings.max_retries
        self.backoff = settings.backoff
        self.max_backoff = settings.max_backoff
        self.system_prompt = settings.system_prompt
        self.max_response_bytes = int(settings.max_response_bytes)
        self.cancel_grace = float(settings.cancel_grace)
        self._budget = RequestBudget()
        self._silence = SilenceWatch(settings.notice_after)
        self.unreachable_after = float(settings.unreachable_after)
        self._refused_since: float | None = None  # the first refused connection since the server last answered
        self._refused_rows = 0  # rows given up since then, every attempt refused
        if settings.extra_body is not None and not isinstance(settings.extra_body, dict):
            raise JudgeError(f"extra_body must be a JSON object of extra request fields, got {settings.extra_body!r}")
        #: extra request fields sent as they are (e.g. {"reasoning_effort": "low"}, VERT Table 4); they change the
        #: answers, so they are part of the identity and of every cache key
        self.extra_body = dict(settings.extra_body or {})
        # a credential among them (LiteLLM's per-request api_key) is sent, never written: the identity (rows'
        # fingerprints, summaries, cache keys) shows it as ***, and messages, logs and answers lose it like the key
        self._shown_extra_body, body_secrets = credential_fields(self.extra_body)
        self._secrets += body_secrets
        self._answer_secrets += body_secrets
        for secret in body_secrets:
            _LOG_REDACTOR.add(secret)
        self._client_lock = threading.Lock()
        self._client = None

    def identity(self) -> dict[str, Any]:
        # Keyed on the server address too (without credentials or query): servers routinely serve different
        # checkpoints under one name (vLLM's --served-model-name judge), and a second server's run was answered
        # from the first one's cache, silently (review 12). A server moved to another address asks again.
        identity = {**super().identity(), "server": shown_url(self.base_url), "mode": self.mode,
                    "system_prompt": self.system_prompt}
        if self.mode == "completions":
            identity.update(chat_format=self.chat_format, eos_text=self.eos_text)
        if self.extra_body:
            identity["extra_body"] = self._shown_extra_body
        return identity

    def __repr__(self) -> str:  # never shows the key
        return f"<OpenAIJudge model={self.model!r} base_url={shown_url(self.base_url)!r}>"

    @property
    def client(self):
        import httpx

        with self._client_lock:
            if self._client is None:
                headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key is not None else {}
                transport = deadline_transport(self._budget, limits=httpx.Limits(max_connections=self.concurrency))
                self._client = httpx.Client(base_url=self.base_url, headers=headers, timeout=self.timeout,
                                            transport=transport, params=httpx.QueryParams(self._query))
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
            from radmetrics.conversation import as_messages

            # a conversation prompt goes as its own messages (FineRadScore's official few-shot turns)
            messages = as_messages(prompt)
            if self.system_prompt:
                if messages[0]["role"] == "system":  # one system message: the user's text, then the prompt's
                    messages = [{"role": "system", "content": f"{self.system_prompt}\n\n{messages[0]['content']}"},
                                *messages[1:]]
                else:
                    messages = [{"role": "system", "content": self.system_prompt}, *messages]
            body["messages"] = messages
            return "/chat/completions", body
        body["prompt"] = self._completion_text(prompt)
        return "/completions", body

    def _completion_text(self, prompt: str) -> str:
        """The text sent in completions mode (review 12: GREEN prompts went without GREEN's chat format, which
        the published GREEN models were trained on and the in-process backends apply)."""
        from radmetrics.judge.chat_formats import is_green_prompt, render_text

        if self.chat_format == "green" or (self.chat_format == "auto" and is_green_prompt(prompt)):
            return render_text(prompt, "green", self.eos_text)
        return render_text(prompt, "none")  # a conversation as its messages' text

    def _extract(self, body: bytes) -> str:
        """The answer text of a 200 body, or _Unusable with a reason a person can read."""
        try:
            data = json.loads(body)
        except ValueError as e:
            raise _Unusable(f"not JSON ({e})") from None
        if not isinstance(data, dict):
            raise _Unusable(f"the body is a JSON {type(data).__name__}, not an object")
        choices = data.get("choices")
        if not isinstance(choices, list):
            raise _Unusable("no 'choices'" if choices is None else f"'choices' is a {type(choices).__name__}, not a list")
        if not choices:
            raise _Unusable("'choices' is empty")
        choice = choices[0]
        if not isinstance(choice, dict):
            raise _Unusable(f"choices[0] is a {type(choice).__name__}, not an object")
        if self.mode == "chat":
            message = choice.get("message")
            if not isinstance(message, dict):
                raise _Unusable("choices[0] has no 'message' object")
            text, where = message.get("content"), "message.content"
        else:
            text, where = choice.get("text"), "text"
        # "length": the server stopped it at max_tokens (OpenAI, vLLM, TGI, llama.cpp and Ollama all say so; some
        # gateways pass Anthropic's "max_tokens" on); with no text at all (a reasoning model that spent every token
        # thinking) it is still a cut answer, not a failed call
        finish = choice.get("finish_reason")
        finish = finish if isinstance(finish, str) else None  # a server's odd value (a list, an object) says nothing
        cut = finish in CUT_FINISH_REASONS
        if finish in STOPPED_FINISH_REASONS:  # the text so far is no whole answer (review 18: it was scored)
            raise _StoppedEarly(f"the server stopped the answer before it ended (finish_reason {finish!r}); the "
                                "text so far is not scored")
        if cut and (text is None or (isinstance(text, str) and not text.strip())):
            return CutAnswer(text or "", None)
        if not isinstance(text, str):
            raise _Unusable(f"choices[0].{where} is {'missing' if text is None else type(text).__name__}, not text")
        if not text.strip():
            raise _Unusable("the answer is empty")
        return cut_at_limit(text, None, cut)

    def _post(self, path: str, body: dict[str, Any]) -> tuple[int, Any, bytes]:
        """(status, headers, body) within the total deadline; a body over max_response_bytes is _Unusable."""
        client = self.client
        self._budget.start(self.timeout)
        try:
            with client.stream("POST", path, json=body) as response:
                chunks, size = [], 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > self.max_response_bytes:
                        raise _Unusable(f"the body is over {self.max_response_bytes} bytes")
                    chunks.append(chunk)
                return response.status_code, response.headers, b"".join(chunks)
        finally:
            self._budget.stop()

    def _one(self, prompt: str, config: GenerationConfig) -> str:
        import httpx

        path, body = self._payload(prompt, config)
        last_error = "unknown error"
        refused = False  # the last attempt's connection was refused
        for attempt in range(self.max_retries + 1):
            if self._budget.cancelled.is_set():
                return GenerationFailure("interrupted before an answer came")
            wait_s = min(self.max_backoff, self.backoff * 2**attempt) * (0.5 + random.random() / 2)
            refused = False
            try:
                status, headers, data = self._post(path, body)
                self._heard()
                if status == 200:
                    answer = self._extract(data)
                    # only credentials are taken out: the answer is parsed and cached otherwise as it came
                    return cut_at_limit(redact(answer, self._answer_secrets), config.max_new_tokens,
                                        isinstance(answer, CutAnswer))
                if status in RETRY_STATUS:
                    last_error = f"HTTP {status}"
                    retry_after = headers.get("retry-after")
                    if retry_after:
                        try:
                            wait_s = min(self.max_backoff, max(0.0, float(retry_after)))
                        except ValueError:
                            pass
                else:  # 400/401/404...: asking again will not help. Redact first, then cut.
                    detail = self._safe(data.decode("utf-8", errors="replace"))[:200]
                    return GenerationFailure(f"HTTP {status}{_system_role_hint(body, detail)}: {detail}")
            except _StoppedEarly as e:  # asking again gets the same filter: no retry, no cache, the row unscored
                self._heard()
                return GenerationFailure(self._safe(str(e)))
            except _Unusable as e:  # non-JSON, truncated, wrong schema, empty / non-text answer, oversized
                self._heard()
                last_error = self._safe(f"unusable response body ({e})")
            except httpx.TimeoutException:
                last_error = f"no complete answer within the {self.timeout}s request deadline"
            except httpx.ConnectError as e:  # nothing listens (or the host is unknown): the server is down
                last_error, refused = f"connection error ({type(e).__name__})", True
                if self._refused_since is None:
                    self._refused_since = time.monotonic()
            except httpx.TransportError as e:
                last_error = f"connection error ({type(e).__name__})"
            if self._budget.cancelled.is_set():
                return GenerationFailure("interrupted before an answer came")
            if attempt < self.max_retries and self._budget.cancelled.wait(wait_s):
                return GenerationFailure("interrupted before an answer came")
        if refused and self._refused_since is not None:
            self._refused_rows += 1  # a row whose every attempt was refused
        attempts = self.max_retries + 1
        return GenerationFailure(self._safe(
            f"gave up after {attempts} attempt{'s' if attempts != 1 else ''}: {last_error}"))

    def _where(self) -> str:
        return shown_url(self.base_url)

    def _heard(self) -> None:
        """A response came (any status): the server is up."""
        self._silence.heard()
        self._refused_since, self._refused_rows = None, 0

    def _server_down(self) -> bool:
        """Refused connections, nothing heard since, for `unreachable_after` seconds or through as many rows'
        whole retry schedules as run at once (with short backoffs rows fail faster than the seconds pass)."""
        if self.unreachable_after <= 0 or self._refused_since is None:
            return False
        return self._refusing_for() >= self.unreachable_after or self._refused_rows >= max(2, self.concurrency)

    def _refusing_for(self) -> float:
        """Seconds the server has refused connections with no response since (0: it has not)."""
        since = self._refused_since
        return time.monotonic() - since if since is not None else 0.0

    def _safe(self, message: str) -> str:
        return redact(message, self._secrets)

    def _worst_case_s(self) -> float:
        """How long one row may take against a server that never answers: every attempt's deadline plus the
        backoffs between them (at their longest)."""
        waits = sum(min(self.max_backoff, self.backoff * 2**a) for a in range(max(0, self.max_retries)))
        return (self.max_retries + 1) * self.timeout + waits

    def _notice_silence(self, silent: float, waiting: int) -> None:
        """One warning line: the server has sent nothing for a while; what the limits are; how to fail sooner."""
        from tqdm.auto import tqdm

        where = self._where()
        refusing = self._refusing_for()
        # `waiting` counts every unanswered row; at most `concurrency` of them are sent at a time
        in_flight = min(waiting, self.concurrency)
        requests = f"{in_flight} request{'s' if in_flight != 1 else ''} in flight"
        if waiting > in_flight:
            requests += f", {waiting - in_flight} queued"
        if refusing:  # not slow: down (a refused connection fails at once, so the timeout is not what waits)
            stop = (f" The run stops if it still does after {span(self.unreachable_after)}, keeping the answers "
                    "received." if self.unreachable_after > 0 else "")
            message = f"{where} has refused connections for {span(refusing)} ({requests}): is the server running?{stop}"
        else:
            quiet = f"no answer from {where} for {span(silent)}" if self._silence.heard_any else \
                f"no answer yet from {where} after {span(silent)}"
            retries = f"{self.max_retries} retr{'y' if self.max_retries == 1 else 'ies'}"
            message = (f"{quiet} ({requests}; timeout "
                       f"{self.timeout:g} s per request, {retries}: a row fails after about "
                       f"{span(self._worst_case_s())}): the server is slow or stuck; --judge-option "
                       "timeout=SECONDS (and max_retries=N) to fail sooner")
        # progress bars are lifted off the terminal for the line and drawn again below it (elapsed time updated)
        with tqdm.external_write_mode(file=sys.stderr):
            log.warning("%s", self._safe(message))

    def _generate(self, prompts: list[str], config: GenerationConfig, on_result: OnResult | None,
                  progress: bool) -> list[str]:
        from tqdm.auto import tqdm

        out: list[str] = [""] * len(prompts)
        reported: set[int] = set()
        self._budget.reset()
        # the rows refused by earlier calls with nothing heard since still count (calls of at most `concurrency`
        # rows, e.g. a chunk per Ray actor or a reward batch, would otherwise never reach the count); the seconds
        # count from this call, so a pause between calls is not taken for seconds of refusals
        if self._refused_since is not None:
            self._refused_since = time.monotonic()
        pool = ThreadPoolExecutor(self.concurrency)
        futures: dict = {}

        def report(future) -> None:
            i = futures[future]
            try:
                out[i] = future.result()
            except Exception as e:  # a bug in one request must not lose the others
                out[i] = GenerationFailure(self._safe(f"{type(e).__name__}: {e}"))
            reported.add(i)
            if on_result:
                on_result(i, out[i])

        try:
            with tqdm(total=len(prompts), desc=f"judge {self.model}", disable=not progress, unit="report") as bar:
                self._silence.start()
                futures = {pool.submit(self._one, p, config): i for i, p in enumerate(prompts)}
                pending = set(futures)
                while pending:
                    # woken by each answer, when a notice about a silent server may be due, and each second (to
                    # see a server that went down)
                    done, pending = wait(pending, timeout=self._silence.wait_s(cap=1.0),
                                         return_when=FIRST_COMPLETED)
                    for future in done:
                        report(future)
                        bar.update(1)
                    silent = self._silence.due() if pending else None
                    if silent is not None:
                        self._notice_silence(silent, len(pending))
                    # also once the call's last rows were refused: the next call would fail its rows the same way
                    if self._server_down():
                        refusing, rows = self._refusing_for(), self._refused_rows
                        self._refused_since, self._refused_rows = None, 0  # a later call starts afresh
                        # stopped by the seconds, or by rows that failed every attempt first (fast backoffs: then
                        # the seconds are a fraction of one and say nothing)
                        how = (f"for {span(refusing)}" if refusing >= self.unreachable_after else
                               f"to {rows} row{'s' if rows != 1 else ''} through every retry")
                        raise JudgeUnreachable(self._safe(
                            f"the judge server at {self._where()} has refused connections {how}: it is down. "
                            "Nothing more was sent"))
        except BaseException:
            # Ctrl-C / SIGTERM: start nothing new, give requests in flight a short grace, and hand over every
            # answer that came (the cache keeps it) before the interrupt goes on.
            self._budget.cancel(self.cancel_grace)
            pool.shutdown(wait=False, cancel_futures=True)
            wait(list(futures), timeout=self.cancel_grace + 2 * SLICE_S)
            for future, i in futures.items():
                if i not in reported and future.done() and not future.cancelled():
                    report(future)
            raise
        finally:
            self._silence.stop()
            pool.shutdown(wait=False)
        return out


def _system_role_hint(body: dict[str, Any], detail: str) -> str:
    """What to do when a server refuses the prompt's system message (a chat template without a system role,
    e.g. Gemma's or Mistral's behind vLLM): FineRadScore's claude3 layout sends none."""
    messages = body.get("messages") or []
    if messages and messages[0].get("role") == "system" and "system" in detail.lower():
        return " (system message refused; FineRadScore's --system-option layout=claude3 sends none)"
    return ""
