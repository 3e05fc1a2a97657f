"""One error base so callers (and the CLI) can catch everything radmetrics raises on purpose."""
from __future__ import annotations

import difflib
import importlib
import importlib.util
import re
from collections.abc import Iterable
from types import ModuleType
from typing import Any


class RadmetricsError(Exception):
    """Base of every error radmetrics raises deliberately; the CLI prints it as one line."""


class UnknownNameError(RadmetricsError, KeyError):
    """A scoring system, backend or metric name that is not registered."""

    def __init__(self, kind: str, name: str, available: Iterable[str], install_hint: str | None = None):
        available = sorted(available)
        close = difflib.get_close_matches(name, available, n=1)
        # a name we know comes from a plugin that is not installed: how to install it, not a look-alike name
        hint = f" {install_hint}" if install_hint else f" Did you mean '{close[0]}'?" if close else ""
        self.message = f"Unknown {kind} '{name}'.{hint} Available: {', '.join(available) or '(none)'}"
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return self.message


class InputError(RadmetricsError, ValueError):
    """Bad user input (a missing column, mismatched lengths); the message names the row and column."""


class JudgeError(RadmetricsError):
    """The judge backend could not be built or could not answer (after retries).

    `prompt_index` (when set) is the position of the prompt that failed in the list the backend got;
    the layers above translate it, so the final message names the input row.
    """

    def __init__(self, message: str, prompt_index: int | None = None):
        super().__init__(message)
        self.message = message
        self.prompt_index = prompt_index

    def __str__(self) -> str:
        return self.message


#: a run of this many characters of a secret anywhere in a text is treated as the secret (a key cut in half by a
#: server or a log line is still a key)
SECRET_FRAGMENT = 8


def shown_url(url: str) -> str:
    """A server URL as it may be shown or written: without ``user:password@`` and ``?query`` (where keys ride)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return url.split("?", 1)[0].rpartition("@")[2]
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"


#: query keys whose values are credentials (``?api_key=``, ``?sig=`` of an Azure SAS, ``?code=`` of an Azure
#: Function, ``?jwt=``, ``?sid=``), read lower-case with "-" as "_": a key is secret if it is one of
#: SECRET_QUERY_KEYS or holds one of SECRET_QUERY_WORDS (``x-api-key``, ``subscription-key``, ``access_token``,
#: ``client_secret``, ``session_id``, ``client_assertion``). Only the judge's answers use this list (with
#: `looks_like_token`, see `answer_secrets`): out of logs and messages every query value is taken (`url_secrets`)
SECRET_QUERY_KEYS = frozenset({"sig", "code", "pwd", "pw", "pass", "sid", "sas", "otp", "jwt", "hmac", "sso",
                               "access_code", "ticket"})
SECRET_QUERY_WORDS = ("key", "token", "secret", "passw", "auth", "credential", "signature", "session", "jwt",
                      "bearer", "assertion", "hmac", "cookie")

#: values under a credential-named key that are a setting, not a credential (``?auth=none``, ``?use_auth=true``):
#: left in the judge's answers, where hiding them would blank every "none" and "true" (review 21, M1). Any other
#: value under such a key is hidden there, a plain word too (``?password=sunshine``; review 22, L2)
SETTING_VALUES = frozenset({"", "true", "false", "none", "null", "yes", "no", "on", "off", "0", "1", "basic",
                            "bearer", "required", "optional", "disabled", "enabled"})

#: a query value at least this long that is not made of words and short numbers is taken for a token in the
#: judge's answers whatever its key (``?jwt=eyJ...``, a hex session id, a UUID), see `looks_like_token`
TOKEN_MIN_LENGTH = 16

_WORD = re.compile(r"[a-z]+|[A-Z][a-z]*|[A-Z]+")  # one word: lower case, Capitalised or upper case


def is_secret_query_key(name: str) -> bool:
    """Whether a ``?query`` key names a credential (see SECRET_QUERY_KEYS)."""
    from urllib.parse import unquote_plus

    name = unquote_plus(name).strip().lower().replace("-", "_")
    return name in SECRET_QUERY_KEYS or any(word in name for word in SECRET_QUERY_WORDS)


def credential_fields(value: Any, secret: bool = False) -> tuple[Any, list[str]]:
    """Extra request fields (the openai backend's ``extra_body``) as they may be written, and the credentials among
    them: the text of a field whose name, or an enclosing field's, names a credential (`is_secret_query_key`:
    LiteLLM's per-request ``api_key``, a ``user_token``), unless it is a setting (SETTING_VALUES), is shown as
    ``***``. Numbers and flags stay (``max_tokens``: a setting that changes the answers); so do other fields."""
    if isinstance(value, dict):
        shown, found = {}, []
        for name, item in value.items():
            shown[name], inner = credential_fields(item, secret or is_secret_query_key(str(name)))
            found += inner
        return shown, found
    if isinstance(value, list):
        pairs = [credential_fields(item, secret) for item in value]
        return [shown for shown, _ in pairs], [text for _, inner in pairs for text in inner]
    if secret and isinstance(value, str) and value.strip().lower() not in SETTING_VALUES:
        return "***", [value]
    return value, []


def _is_word(text: str) -> bool:
    return bool(_WORD.fullmatch(text))


def looks_like_token(value: str) -> bool:
    """Whether a query value looks like a credential whatever its key: TOKEN_MIN_LENGTH characters or more, with a
    piece of 6 or more (between ``-``, ``_``, ``.``, ``~``, ``/``, ``+``, ``:``, blanks) that is neither one word nor
    a short number (``eyJhbGci...``, ``9f86d081884c7d65...``, ``123e4567-e89b-...``). ``2024-02-15-preview``,
    ``gpt-4o-mini-2024-07-18`` and ``radiology-judge-production`` are no token."""
    if len(value) < TOKEN_MIN_LENGTH:
        return False
    for piece in re.split(r"[-_.~/+: ]", value):
        if len(piece) >= 6 and not _is_word(piece) and not (piece.isdigit() and len(piece) < 8):
            return True
    return False


def _address_parts(url: str):
    """The userinfo of a server URL (as written and percent-decoded) and its query's ``(raw pair, name, value
    forms)``."""
    from urllib.parse import unquote, unquote_plus, urlsplit

    address, _, query = url.partition("?")  # the query as the backend sends it: all after "?", a "#" and tabs too
    parts = urlsplit(address if "://" in address else f"http://{address}")  # (review 23, H3: urlsplit cut the
    userinfo = parts.netloc.rpartition("@")[0]                              # query at "#": the rest was logged)
    texts = sorted({userinfo, unquote(userinfo)}) if userinfo else []
    pairs = []
    for raw in query.split("&"):
        name, _, value = raw.partition("=")
        pairs.append((raw, name, _written_forms({value, unquote(value), unquote_plus(value)})))
    return texts, query, pairs


def _written_forms(values: set[str]) -> list[str]:
    """``values`` and the forms they take once encoded again: httpx re-encodes a URL's query when it sends it and
    logs the request line in its own spelling (``w0rd!`` as ``w0rd%21``, a blank as ``+`` or ``%20``), and a
    secret must be hidden in that spelling too (review 22, H1: ``?api_key=s3cr3t P4ss w0rd!`` was logged as
    ``?***+P4ss+w0rd%21``)."""
    from urllib.parse import quote, quote_plus

    forms = set(values)
    for value in values:
        forms |= {quote_plus(value), quote(value, safe=""), quote(value, safe="!$'()*+,;=:@/~")}
        try:
            import httpx

            forms |= {str(httpx.QueryParams({"k": value}))[2:], httpx.URL(f"http://h/?k={value}").query.decode()[2:]}
        except Exception:  # noqa: BLE001 - httpx absent, or a value it does not take: the other forms
            pass
    return sorted(forms)


def _basic(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()


def url_secrets(url: str) -> list[str]:
    """What a server URL carries that must never be shown in a log line, a warning, an error message or a row's
    reason: its ``user:password@`` or ``TOKEN@`` (the user name, the password, ``user:password``, and the base64
    forms of the Basic ``Authorization`` header httpx makes of them, ``user:password`` or ``TOKEN:``) and its whole
    ``?query``: each ``name=value`` pair and every value, whatever its key (a credential may ride under any name:
    ``?jwt=``, ``?sid=``; review 21, H2), each as written and percent-decoded. Hiding ``?stream=false`` from a log
    line harms nobody. The judge's answers take the narrower `answer_secrets`."""
    texts, query, pairs = _address_parts(url)
    found: list[str] = []
    for text in texts:
        user, _, password = text.partition(":")
        found += [user, password, text, _basic(text), _basic(f"{user}:")]
    found += _written_forms({query})
    for raw, _, values in pairs:
        found += [*_written_forms({raw}), *values]
    return sorted({v for v in found if v}, key=len, reverse=True)


def answer_secrets(url: str) -> list[str]:
    """What is taken out of the judge's answers of a server URL (in case the server echoes a credential into one):
    only what is plausibly secret, as every word hidden there changes what is parsed, scored and cached. The
    password of ``user:password@`` and the base64 of ``user:password`` (not ``user:password`` itself: its pieces
    of SECRET_FRAGMENT characters would hide a user name like "radiology" in the answers; review 21, M1); a user
    name alone (``TOKEN@``: it is the credential) and the base64 of ``TOKEN:``; query values whose key names a
    credential (`is_secret_query_key`) unless they are a setting (SETTING_VALUES: ``?auth=none``, ``?use_auth=true``), and
    query values under any key that `looks_like_token`. ``?stream=false`` and ``?api-version=...`` are left as
    they are (review 20, F2)."""
    texts, _, pairs = _address_parts(url)
    found: list[str] = []
    for text in texts:
        user, _, password = text.partition(":")
        if password:
            found += [password, _basic(text)]
        elif user:  # "TOKEN@" or "TOKEN:@"
            found += [user, _basic(f"{user}:")]
    for _, name, values in pairs:
        for value in values:
            secret_key = is_secret_query_key(name) and value.strip().lower() not in SETTING_VALUES
            if secret_key or looks_like_token(value):
                found.append(value)
    return sorted({v for v in found if v}, key=len, reverse=True)


def redact(text: str, secrets: Iterable[object]) -> str:
    """Replace every secret (API keys, of any type: a numeric key is a key too) and every fragment of one of
    SECRET_FRAGMENT or more characters in text. Used on every message that may reach a log, a file or the
    screen, always before any truncation. Every whole secret is replaced before any fragment is looked for: a
    fragment of one secret hidden first could split another written in full, whose remaining pieces were then
    too short to be found (review 23: '?***Fcd%***')."""
    text = str(text)
    # longest first: a secret that holds another (a query pair, its value) is replaced whole, whoever calls
    secrets = sorted({str(secret) for secret in secrets if secret is not None and len(str(secret)) >= 4},
                     key=len, reverse=True)
    for secret in secrets:
        text = text.replace(secret, "***")
    grams = {secret[i:i + SECRET_FRAGMENT] for secret in secrets if len(secret) > SECRET_FRAGMENT
             for i in range(len(secret) - SECRET_FRAGMENT + 1)}
    if not grams:
        return text
    hidden = bytearray(len(text))
    found = False
    for i in range(len(text) - SECRET_FRAGMENT + 1):
        if text[i:i + SECRET_FRAGMENT] in grams:
            hidden[i:i + SECRET_FRAGMENT] = b"\x01" * SECRET_FRAGMENT
            found = True
    if not found:
        return text
    out, i = [], 0
    while i < len(text):
        if hidden[i]:
            while i < len(text) and hidden[i]:
                i += 1
            out.append("***")
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


#: Optional third-party module (top-level import name) -> the radmetrics extra that installs it
#: (pyproject.toml [project.optional-dependencies]; a test checks each extra declares its modules).
OPTIONAL_MODULES = {
    "torch": "transformers", "transformers": "transformers", "accelerate": "transformers",
    "tokenizers": "transformers", "safetensors": "transformers",
    "evaluate": "evaluate",
    "datasets": "meta", "scipy": "meta", "matplotlib": "meta", "pyarrow": "meta",
    "huggingface_hub": "hub", "yaml": "hub",
    "sentence_transformers": "summary", "sklearn": "summary",
    "ray": "ray",
    "lm_eval": "lm-eval", "jinja2": "lm-eval",
    "peft": "train", "trl": "train",
    "vllm": "vllm",
    "sacrebleu": "baselines", "rouge_score": "baselines", "nltk": "baselines", "bert_score": "baselines",
    "radgraph": "clinical", "f1chexbert": "clinical", "RaTEScore": "clinical", "radeval": "radeval",
}

#: pip distribution names where they differ from the import name (for the message)
_DISTRIBUTIONS = {"yaml": "PyYAML", "sklearn": "scikit-learn", "sentence_transformers": "sentence-transformers",
                  "huggingface_hub": "huggingface_hub", "lm_eval": "lm-eval", "rouge_score": "rouge-score",
                  "bert_score": "bert-score", "radeval": "RadEval"}


class MissingExtraError(RadmetricsError, ImportError):
    """An optional dependency is not installed; the message names the extra that installs it (one line).

    Also an ImportError, so code that falls back on a missing import keeps working."""

    def __init__(self, module: str, extra: str | None = None, purpose: str | None = None):
        top = module.split(".")[0]
        self.module = top
        self.extra = extra or OPTIONAL_MODULES.get(top, "all")
        needed = f" (needed {purpose})" if purpose else ""
        self.message = (f"{_DISTRIBUTIONS.get(top, top)} is not installed{needed}: "
                        f'pip install "radmetrics[{self.extra}]"')
        super().__init__(self.message)
        self.name = top

    def __str__(self) -> str:
        return self.message

    @classmethod
    def from_import_error(cls, error: ModuleNotFoundError, purpose: str | None = None) -> MissingExtraError | None:
        """The one-line error for a ModuleNotFoundError raised by a missing optional module; None when the
        missing module is radmetrics' own (a bug, not a missing extra) or the error names no module."""
        name = (error.name or "").split(".")[0]
        if not name or name == "radmetrics":
            return None
        return cls(name, purpose=purpose)


def optional_import(module: str, extra: str | None = None, purpose: str | None = None) -> ModuleType:
    """import `module`, or raise MissingExtraError naming `pip install "radmetrics[<extra>]"`.

    A dependency of `module` that is missing (e.g. torch under transformers) is reported by its own name."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        missing = (e.name or module).split(".")[0]
        if missing == "radmetrics":
            raise
        raise MissingExtraError(missing, extra if missing == module.split(".")[0] else None, purpose) from e


def require_installed(module: str, extra: str | None = None, purpose: str | None = None) -> None:
    """`module` is installed, or MissingExtraError as from `optional_import`; found without importing it, for checks
    before long work that must take a second, not the seconds a heavy library (torch under sentence-transformers)
    takes to import. The library is imported where it is used."""
    try:
        found = importlib.util.find_spec(module)
    except ModuleNotFoundError:  # a finder that refuses the name, as in an environment without it
        found = None
    if found is None:
        raise MissingExtraError(module, extra, purpose)
