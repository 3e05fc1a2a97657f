"""Pushing to the Hugging Face Hub: private unless the user asks otherwise. The only network code outside
radmetrics/judge/, and it runs only when the user runs a push command."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from radmetrics.errors import RadmetricsError


def push_folder(folder: str | Path, repo_id: str, repo_type: str = "model", public: bool = False,
                gated: str | None = None, token: str | None = None, commit_message: str | None = None,
                exist_ok: bool = True) -> dict[str, Any]:
    """Create the repo (private unless public=True), upload the folder, optionally gate it ("auto"/"manual").

    The endpoint is huggingface_hub's (HF_ENDPOINT); the token comes from the argument or the usual
    environment / login, and is never printed."""
    from huggingface_hub import HfApi

    folder = Path(folder)
    if not folder.is_dir():
        raise RadmetricsError(f"Nothing to push: {folder} is not a folder")
    if gated not in (None, "auto", "manual"):
        raise RadmetricsError(f"gated must be 'auto' or 'manual', not {gated!r}")
    card = folder / "README.md"
    if card.is_file():
        validate_card(card, repo_type)
    api = HfApi(token=token)
    extra = {"space_sdk": "gradio"} if repo_type == "space" else {}  # our Spaces are evaluate Gradio widgets
    url = api.create_repo(repo_id, repo_type=repo_type, private=not public, exist_ok=exist_ok, **extra)
    commit = api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type=repo_type,
                               commit_message=commit_message or f"Upload with radmetrics from {folder.name}")
    if gated:
        api.update_repo_settings(repo_id, repo_type=repo_type, gated=gated)
    return {"url": str(url), "commit": getattr(commit, "oid", None), "private": not public, "gated": gated or False}


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
