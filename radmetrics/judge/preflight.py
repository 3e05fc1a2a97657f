"""Checks that can fail in seconds, run before long work: is the judge (or another model the run needs)
reachable at all? Without them a missing model shows up only after minutes of Hub retries, as a transformers
traceback about the internet connection.

Each check returns quietly or raises a JudgeError whose one line says what to do. A check makes no network
call unless the backend itself would: a local folder or a cached Hub model needs none; an uncached Hub id
gets one short TCP connect to the Hub endpoint; an OpenAI-compatible URL one to its host.
"""
from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from urllib.parse import urlparse

from radmetrics.errors import JudgeError, redact, shown_url, url_secrets

#: how long a reachability probe may take
PROBE_SECONDS = 3.0
# the same advice for the command line and for Python (radmetrics.score, evaluate.load), which name it differently
_SERVER_HOW = ("--backend openai --base-url URL; in Python backend='openai', "
               "judge_options={'base_url': URL}")
_LOCAL_HOW = "--backend transformers --judge FOLDER; in Python backend='transformers', judge=FOLDER"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$|^[A-Za-z0-9][\w.\-]*$")


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def hub_offline() -> bool:
    return _truthy("HF_HUB_OFFLINE") or _truthy("TRANSFORMERS_OFFLINE")


def can_connect(url: str, timeout: float = PROBE_SECONDS) -> bool:
    """One TCP connect to the URL's host and port; no request is sent."""
    parsed = urlparse(url if "://" in url else f"https://{url}")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname or "", port), timeout=timeout):
            return True
    except OSError:
        return False


#: a folder holds a model when it has one of these (a full model, a PEFT adapter, a sentence-transformers model)
_MODEL_FILES = ("config.json", "adapter_config.json", "modules.json")


def hub_cached(model: str, revision: str | None = None) -> bool:
    """Whether the Hub model's config is in the local Hugging Face cache."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    for filename in _MODEL_FILES:
        try:
            found = try_to_load_from_cache(model, filename, revision=revision)
        except Exception:  # an id the cache layout cannot hold is simply not cached
            return False
        if isinstance(found, str):
            return True
    return False


def full_local_path(model: str) -> str:
    """``model`` by its full path when it is a local folder, as given otherwise (a Hub id). Training records its base
    this way: a relative one loaded only from the folder training ran in, and `hub push` took it for a Hub id
    (reviews 45 and 46)."""
    local = Path(model).expanduser()
    return str(local.resolve()) if model and local.exists() else model


def check_hub_model(model: str, *, what: str = "judge", revision: str | None = None,
                    flag: str = "--judge (judge= in Python)", server_how: str = _SERVER_HOW) -> None:
    """A local folder, a cached Hub model, or a Hub id with the Hub reachable; else one line with the fix
    (server_how: how the command that asks names a judge server, for a judge)."""
    path = Path(model).expanduser()
    if path.is_dir() and not any((path / name).is_file() for name in _MODEL_FILES):
        raise JudgeError(f"The {what} folder '{model}' holds no model (no {', '.join(_MODEL_FILES)}): give the folder "
                         f"a model was saved to (save_pretrained), with {flag}.")
    if path.exists():
        return
    if model.startswith((".", "/", "~")) or os.sep in model.strip("/").replace("/", "", 1) or not _HUB_ID.match(model):
        raise JudgeError(f"The {what} '{model}' is not a folder here (and is not a Hub id): check the path "
                         f"given with {flag}.")
    if hub_cached(model, revision):
        return
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    server = f", or use an OpenAI-compatible server ({server_how})" if what == "judge" else ""
    if hub_offline():
        raise JudgeError(f"The {what} '{model}' is not in the local Hugging Face cache and HF_HUB_OFFLINE=1 forbids "
                         f"downloading it: download it where there is network (`hf download {model}`), or pass a "
                         f"local folder with {flag}{server}.")
    if not can_connect(endpoint):
        raise JudgeError(f"The {what} '{model}' is not in the local Hugging Face cache and {endpoint} cannot be reached "
                         f"(no network?): pass a local folder with {flag}{server}, or download the model where there "
                         "is network.")


def _check_local_options(backend: str, options: dict, backend_flag: str = "--backend") -> None:
    """A bad option of an in-process backend is named before the model is looked up, as the openai backend's are
    before its server is probed (review 34): else an uncached judge's "not in the local Hugging Face cache" hid it,
    and `--base-url URL` without `--backend openai` got advice to pass `--backend openai --base-url URL`."""
    from radmetrics.judge.base import JudgeOptionError

    if "base_url" in options:
        python = " (backend='openai' in Python)" if backend_flag == "--backend" else ""
        raise JudgeOptionError(f"base_url (--base-url) is an option of the openai backend, not of the {backend} "
                               f"backend: add {backend_flag} openai{python} to send the prompts to that server")
    if backend == "transformers":
        from radmetrics.judge.transformers_backend import TransformersOptions as options_class
    else:
        from radmetrics.judge.vllm_backend import VLLMOptions as options_class
    options_class.from_dict(options, backend)


def check_judge(backend: str, model: str | None, options: dict | None = None, *, model_flag: str | None = None,
                url_flag: str = "--base-url", backend_flag: str = "--backend") -> None:
    """Fail fast when the judge of `backend` cannot be reached; backends it does not know are left alone.
    model_flag / url_flag / backend_flag: how the command that asks names them (train: --teacher,
    --teacher-base-url, --teacher-backend); its advice then names those flags alone (review 43: a train command was
    told to pass score's --backend, --base-url and --judge)."""
    options = options or {}
    server_how = _SERVER_HOW if model_flag is None else f"{backend_flag} openai {url_flag} URL"
    local_how = _LOCAL_HOW if model_flag is None else f"{backend_flag} transformers {model_flag} FOLDER"
    if backend == "transformers":
        # a missing library first: a base install was told to download the 7B judge, then that torch is missing
        from radmetrics.errors import require_installed

        for module in ("torch", "transformers"):
            require_installed(module, "transformers", "for the transformers backend")
    if backend in ("transformers", "vllm"):
        _check_local_options(backend, options, backend_flag)
    if backend in ("transformers", "vllm") and model:
        check_hub_model(model, revision=options.get("revision"), server_how=server_how,
                        **({"flag": model_flag} if model_flag else {}))
    elif backend == "openai":
        base_url = options.get("base_url") or os.environ.get("OPENAI_BASE_URL")
        if not base_url:  # no server chosen: nothing is probed, and nothing will be sent anywhere
            from radmetrics.judge.openai_backend import NEEDS_BASE_URL

            raise JudgeError(NEEDS_BASE_URL.replace("--base-url", url_flag))
        from radmetrics.judge.openai_backend import OpenAIOptions, base_url_without_scheme

        OpenAIOptions.from_dict(options, "openai")  # a bad option is named before the server is probed
        if problem := base_url_without_scheme(base_url, url_flag):
            raise JudgeError(problem)
        if not can_connect(base_url):
            # the address without user:password@ or ?key=..., and any key in it hidden: errors reach files
            keys = [options.get("api_key"), os.environ.get(options.get("api_key_env") or "OPENAI_API_KEY"),
                    *url_secrets(base_url)]
            python = "; judge_options={'base_url': URL} in Python" if model_flag is None else ""  # train: no Python
            raise JudgeError(redact(f"Cannot connect to the judge server at {shown_url(base_url)}: start the "
                                    f"server, fix the address ({url_flag}{python}), or use a local judge "
                                    f"({local_how}).", keys))
    elif backend == "replay":
        path = options.get("path")
        if path and not Path(path).is_file():
            raise JudgeError(f"The replay file {path} does not exist (--replay).")
