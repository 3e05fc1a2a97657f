"""Pushing to the Hugging Face Hub: private unless the user asks otherwise. The only network code outside
radmetrics/judge/, and it runs only when the user runs a push command. Every push path (data push, hub push of
judges and datasets, publish-metrics Spaces) goes through `push_folder` and so through the privacy gate in
radmetrics/hub/privacy.py."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from radmetrics.errors import RadmetricsError
from radmetrics.hub.privacy import PushRefused, check_public_allowed, written_by_user

__all__ = ["PushRefused", "push_folder", "repo_visibility"]


#: Files of an earlier push that a new one replaces whole: those the folder does not hold are deleted in the same
#: commit. upload_folder only adds, and a judge pushed again in shards left the old model.safetensors, which
#: transformers loads before the new index (review 27, H1: the old judge scored under the new card); an adapter
#: pushed over a merged judge left both. Other files on the Hub (a hand-added notebook, results) are kept.
STALE_FILES = {
    "model": ["*.safetensors", "*.bin", "*.pt", "*.pth", "*.ckpt", "*.gguf", "*.h5", "*.msgpack",
              "*.safetensors.index.json", "*.bin.index.json", "adapter_config.json", "config.json"],
    "dataset": ["*.arrow", "*.parquet", "state.json", "dataset_info.json", "dataset_dict.json"],
}


def repo_visibility(api, repo_id: str, repo_type: str) -> bool | None:
    """The repository's real visibility from the Hub API: True private, False public, None: no such repo."""
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        info = api.repo_info(repo_id, repo_type=repo_type)
    except RepositoryNotFoundError:
        return None
    # A repo_info without the field is treated as public: the gate must fail closed.
    return bool(getattr(info, "private", False))


def _remote_card(api, repo_id: str, repo_type: str) -> str | None:
    info = api.repo_info(repo_id, repo_type=repo_type)
    if "README.md" not in {s.rfilename for s in (getattr(info, "siblings", None) or [])}:
        return None
    with tempfile.TemporaryDirectory(prefix="radmetrics-card-") as tmp:
        path = api.hf_hub_download(repo_id, "README.md", repo_type=repo_type, cache_dir=tmp)
        return Path(path).read_text(encoding="utf-8", errors="replace")


def check_repo_id(repo_id: str) -> None:
    """A repository id the Hub accepts (owner/name), checked here without a request: one line, not the Hub
    client's traceback."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as e:
        raise RadmetricsError(f"'{repo_id}' is not a Hub repository id ({str(e).splitlines()[0][:200]})") from e


def push_folder(folder: str | Path, repo_id: str, repo_type: str = "model", public: bool = False,
                gated: str | None = None, token: str | None = None, commit_message: str | None = None,
                overwrite_card: bool = False) -> dict[str, Any]:
    """Upload FOLDER to REPO_ID through the privacy gate; create the repo private unless public=True.

    Refuses (PushRefused) to push PhysioNet/credentialed data publicly, and to add to an existing public
    repository unless public=True. A README.md on the Hub that a person wrote is kept (not uploaded over)
    unless overwrite_card. Returns {"url", "commit", "private" (read back from the Hub after the push),
    "gated", "card_kept", "public_requested"}. The token comes from the argument or the usual environment /
    login, and is never printed: an error the Hub answers with is one RadmetricsError line, the token redacted."""
    from huggingface_hub.errors import HfHubHTTPError

    folder = Path(folder)
    if not folder.is_dir():
        raise RadmetricsError(f"Nothing to push: {folder} is not a folder")
    if gated not in (None, "auto", "manual"):
        raise RadmetricsError(f"gated must be 'auto' or 'manual', not {gated!r}")
    check_repo_id(repo_id)
    if not any(p.is_file() for p in folder.rglob("*")):
        raise RadmetricsError(f"Nothing to push: {folder} holds no files")
    if public:
        check_public_allowed(folder, f"{folder} to {repo_id}")
    try:
        return _push(folder, repo_id, repo_type, public, gated, token, commit_message, overwrite_card)
    except HfHubHTTPError as e:  # a token refused, no right to write there, the Hub down: one line, no token
        raise RadmetricsError(hub_refused(e, repo_id, token)) from None


def _push(folder: Path, repo_id: str, repo_type: str, public: bool, gated: str | None, token: str | None,
          commit_message: str | None, overwrite_card: bool) -> dict[str, Any]:
    from huggingface_hub import HfApi

    card = folder / "README.md"
    if card.is_file():
        validate_card(card, repo_type)
    api = HfApi(token=token)
    existed = repo_visibility(api, repo_id, repo_type) is not None
    if not existed:
        extra = {"space_sdk": "gradio"} if repo_type == "space" else {}  # our Spaces are evaluate Gradio widgets
        api.create_repo(repo_id, repo_type=repo_type, private=not public, exist_ok=True, **extra)
    private = repo_visibility(api, repo_id, repo_type)  # read back: someone may have created it meanwhile
    if private is None:
        raise RadmetricsError(f"{repo_id}: the Hub did not create the {repo_type} repository")
    if not private and not public:
        raise PushRefused(f"{repo_id} is a public {repo_type} repository on the Hub: pushing {folder} into it would "
                          "publish it. Pass --public to add to a public repository, or push to a new (private) repo.")
    # datasets writes its .map()/.filter() caches beside a saved dataset's files (lm_eval reading the folder did):
    # pushed, they are files the Hub's loader takes for data splits, and the dataset no longer loads (review 24 M4)
    ignore = ["cache-*.arrow", "**/cache-*.arrow"] if repo_type == "dataset" else []
    if existed and (folder / "README.md").is_file() and not overwrite_card:
        remote = _remote_card(api, repo_id, repo_type)
        local = (folder / "README.md").read_text(encoding="utf-8", errors="replace")
        if remote is not None and remote != local and written_by_user(remote):
            ignore.append("README.md")
    commit = api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type=repo_type,
                               ignore_patterns=ignore or None, delete_patterns=STALE_FILES.get(repo_type),
                               commit_message=commit_message or f"Upload with radmetrics from {folder.name}")
    if gated:
        api.update_repo_settings(repo_id, repo_type=repo_type, gated=gated)
    url = f"{api.endpoint}/{'' if repo_type == 'model' else repo_type + 's/'}{repo_id}"
    return {"url": url, "commit": getattr(commit, "oid", None), "private": repo_visibility(api, repo_id, repo_type),
            "gated": gated or False, "card_kept": "README.md" in ignore, "public_requested": public}


def hub_refused(error: Exception, repo_id: str, token: str | None = None) -> str:
    """The one line for an HTTP error the Hub answered a push with (review 39b: 401/403/5xx were the Hub client's
    traceback, and a server or proxy that echoed the request's Authorization header put the token on the screen).
    Every token the push may have sent (the argument, HF_TOKEN, the saved login) is redacted."""
    import os

    from radmetrics.errors import redact

    try:
        from huggingface_hub import get_token

        saved = get_token()
    except Exception:  # noqa: BLE001 - an unreadable token file: nothing more to hide
        saved = None
    secrets = [token, saved, os.environ.get("HF_TOKEN"), os.environ.get("HUGGING_FACE_HUB_TOKEN")]
    status = getattr(getattr(error, "response", None), "status_code", None)
    lines = [" ".join(line.split()) for line in str(error).splitlines()]
    detail = "; ".join(line for line in lines if line and not line.startswith("For more information check"))
    owner = repo_id.split("/")[0] if "/" in repo_id else "your account"
    hint = {401: "the Hub did not accept the token: set HF_TOKEN to a valid token (or run `hf auth login`)",
            403: f"the token may not write to {owner}: use a write token of an account that can create "
                 f"repositories there (HF_TOKEN or `hf auth login`)"}.get(
        status, "the Hub (HF_ENDPOINT) answered with an error: try again later, or check HF_ENDPOINT")
    return redact(f"The Hub refused the push to {repo_id} ({detail[:300]}): {hint}", secrets)


def describe_push(folder: str | Path, result: dict[str, Any]) -> list[str]:
    """The lines a push command prints: where it went and the repository's real visibility."""
    visibility = "private" if result["private"] else "public"
    lines = [f"Pushed {folder} to {result['url']} ({visibility}"
             f"{', gated ' + result['gated'] if result['gated'] else ''}; visibility read back from the Hub)"]
    if result["public_requested"] and result["private"]:
        lines.append("Note: the repository already existed as private and stays private; change its visibility "
                     "on the Hub if you mean to publish it.")
    if result["card_kept"]:
        lines.append("Note: kept the README.md on the Hub (written by hand); pass --overwrite-card to replace it.")
    return lines


def validate_card(card: Path, repo_type: str = "model", endpoint: str | None = None) -> None:
    """Ask the Hub's own card check (POST /api/validate-yaml, as huggingface_hub's RepoCard.validate does)
    before creating or uploading anything, so a card the Hub would refuse is one clear error, not a half push.
    Posted to the configured endpoint (HF_ENDPOINT): older huggingface_hub versions always ask huggingface.co."""
    from huggingface_hub import constants
    from huggingface_hub.utils import get_session, hf_raise_for_status

    url = f"{(endpoint or constants.ENDPOINT).rstrip('/')}/api/validate-yaml"
    body = {"repoType": repo_type, "content": card.read_text(encoding="utf-8")}
    response = get_session().post(url, json=body, headers={"Accept": "text/plain"})
    if response.status_code == 400:
        raise RadmetricsError(f"The Hub refuses the card {card}: {' '.join(response.text.split())}")
    hf_raise_for_status(response)
