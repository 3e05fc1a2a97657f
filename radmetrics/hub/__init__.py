"""Pushing to the Hugging Face Hub: private unless the user asks otherwise. The only network code outside
radmetrics/judge/, and it runs only when the user runs a push command. Every push path (data push, hub push of
judges and datasets, publish-metrics Spaces) goes through `push_folder` and so through the privacy gate in
radmetrics/hub/privacy.py."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from radmetrics.errors import InputError, RadmetricsError
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


#: Files of a pushed model that name its base model, and their field (peft's adapter config, ER²Score's config).
#: Training on a local copy of the base records it by its path on the trainer's machine: pushed as is, the path
#: shows the pusher's folders and loads nowhere else (`AutoPeftModel`, `MultiRewardModel.load` read it).
BASE_MODEL_FIELDS = {"adapter_config.json": "base_model_name_or_path", "er2score_config.json": "base_model"}


def portable_base_files(folder: Path, base_model_id: str | None = None) -> dict[str, tuple[str, str, str]]:
    """The files of ``folder``, at any depth, that name its base model by a path rather than a Hub id
    (`BASE_MODEL_FIELDS`, and a README.md's metadata), as they are pushed: ``{relative path: (recorded path, pushed
    name, pushed text)}``, naming the base by ``base_model_id`` (its Hub id, `hub push --base-model`); a card
    without an id leaves it out of its metadata (the Hub accepts only ids there). Without ``base_model_id`` a config
    naming a local base is refused (RadmetricsError), before anything is sent: under a stand-in name the pushed model
    would load whatever folder of that name the loading machine has, or nothing. A base named by an id stays as it
    is (read by its shape: a folder of that name here does not make it a path)."""
    from radmetrics.hub.cards import hub_model_id

    pushed: dict[str, tuple[str, str, str]] = {}
    for card in sorted(folder.rglob("README.md")):
        if card.is_file():
            portable = _card_with_portable_base(card.read_text(encoding="utf-8", errors="replace"), base_model_id)
            if portable is not None:
                pushed[card.relative_to(folder).as_posix()] = (portable[0], base_model_id or "", portable[1])
    unnamed = []
    for name, field in BASE_MODEL_FIELDS.items():
        for path in sorted(folder.rglob(name)):
            try:
                config = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
            except (OSError, UnicodeDecodeError, ValueError):
                continue  # not a config peft or radmetrics can read either: pushed as it is
            recorded = config.get(field) if isinstance(config, dict) else None
            if not isinstance(recorded, str) or not recorded or hub_model_id(recorded, local=False) is not None:
                continue
            relative = path.relative_to(folder).as_posix()
            if base_model_id is None:
                unnamed.append((relative, recorded))
                continue
            config[field] = base_model_id
            pushed[relative] = (recorded, base_model_id, json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    if unnamed:
        where, recorded = unnamed[0]
        cached = cached_model_id(recorded)
        remedy = (f"--base-model {cached} (the Hub's cache holds that model there)" if cached else
                  "--base-model with that model's Hub id (push the base too if it is not on the Hub)")
        raise RadmetricsError(f"{where} names the base model by a path on this machine ({recorded}): pass {remedy}, "
                              "so that the pushed model loads it anywhere. Nothing was pushed.")
    return pushed


def cached_model_id(path: str) -> str | None:
    """The Hub id of a model folder in the Hugging Face cache (``.../models--OWNER--NAME/snapshots/REVISION``, where
    `snapshot_download` puts it and a base is often loaded from offline), or None."""
    import re

    from radmetrics.hub.cards import hub_model_id

    found = re.search(r"(?:^|[/\\])models--([^/\\]+)[/\\]snapshots(?:[/\\]|$)", path)
    parts = found.group(1).split("--") if found else []
    return hub_model_id("/".join(parts), local=False) if len(parts) in (1, 2) else None


def _card_with_portable_base(text: str, base_model_id: str | None) -> tuple[str, str] | None:
    """A card whose metadata names a local base model (peft writes ``base_model: /path/to/base`` and the tag
    ``base_model:adapter:/path/to/base`` into an adapter's README.md): (the path, the card naming ``base_model_id``
    there instead, or without them). None when its metadata names no local base (or cannot be read)."""
    import yaml

    from radmetrics.hub.cards import hub_model_id

    read = _front_matter(text)
    if read is None:
        return None
    meta, body = read
    local = []

    def portable(name: Any) -> Any:
        if isinstance(name, str) and name and hub_model_id(name, local=False) is None:
            local.append(name)
            return base_model_id
        return name

    bases = meta.get("base_model")
    if isinstance(bases, list):
        kept = [b for b in (portable(b) for b in bases) if b]
        meta["base_model"] = list(dict.fromkeys(kept)) if all(isinstance(b, str) for b in kept) else kept
    elif bases is not None:
        meta["base_model"] = portable(bases)
    if not meta.get("base_model"):
        meta.pop("base_model", None)
    if isinstance(meta.get("tags"), list):
        tags = []
        for tag in meta["tags"]:
            kind, name = _base_model_tag(tag)
            if kind and hub_model_id(name, local=False) is None:
                local.append(name)
                if base_model_id:
                    tags.append(f"{kind}:{base_model_id}")
            else:
                tags.append(tag)
        meta["tags"] = tags
        if not tags:  # only the local base's tag: none left (not an empty list)
            meta.pop("tags")
    if not local:
        return None
    if not meta:  # nothing left of the metadata: the card without it (not an empty "{}" block)
        return local[0], body.lstrip("\r\n")
    return local[0], "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---" + body


#: the relations a card's `base_model:RELATION:ID` tag names (the Hub's model tree; peft writes "adapter")
BASE_MODEL_RELATIONS = ("adapter", "finetune", "merge", "quantized")


def _base_model_tag(tag: Any) -> tuple[str, str]:
    """A card tag naming the base model (`base_model:ID`, `base_model:adapter:ID`) as (its kind, the name); ("", "")
    for other tags. Read from the left: a Windows path has a colon of its own (`base_model:adapter:C:\\...\\base`;
    split at the last colon, the drive letter stayed in the kind and went up beside the id, review 47)."""
    rest = str(tag).removeprefix("base_model:")
    if rest == str(tag):
        return "", ""
    relation, colon, name = rest.partition(":")
    if colon and relation in BASE_MODEL_RELATIONS:
        return f"base_model:{relation}", name
    return "base_model", rest


def _front_matter(text: str) -> tuple[dict, str] | None:
    """A card's metadata and what follows it (from the closing ``---`` on); None without readable metadata."""
    import yaml

    text = text.removeprefix("\ufeff")  # a card saved with a byte-order mark (Windows editors)
    if not text.startswith("---"):
        return None
    head, sep, body = text[3:].partition("\n---")
    try:
        meta = yaml.safe_load(head)
    except yaml.YAMLError:
        return None
    return (meta, body) if isinstance(meta, dict) and sep else None


def _sent_before(remote: str, card: str) -> bool:
    """Whether the Hub's card ``remote`` is ``card`` (a README.md naming a local base) as an earlier push sent it:
    naming the base by another ``--base-model``, or without it. It is replaced then, not kept as written by hand
    (review 46: a push with the base's id, as the first one's note asks, kept the card without it)."""
    meta = (_front_matter(remote) or ({}, ""))[0]
    bases = meta.get("base_model")
    named = [b for b in (bases if isinstance(bases, list) else [bases]) if isinstance(b, str) and b]
    return any((_card_with_portable_base(card, base) or (None, None))[1] == remote for base in [None, *named])


def _staged(folder: Path, replaced: dict[str, str], into: Path) -> Path:
    """``folder`` as ``into``: its files linked (copied where links cannot be made), ``replaced`` ones ({name:
    text}) written anew, so one commit pushes the folder with them and the folder itself is not touched."""
    for source in sorted(folder.rglob("*")):
        if not source.is_file():
            continue
        relative = source.relative_to(folder)
        target = into / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if relative.as_posix() in replaced:
            target.write_text(replaced[relative.as_posix()], encoding="utf-8")
            continue
        try:
            os.symlink(source.resolve(), target)
        except OSError:
            shutil.copy2(source, target)
    return into


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


def check_base_model_id(base_model_id: str | None, repo_type: str = "model", name: str = "--base-model") -> None:
    """``--base-model`` is a Hub model id (it goes into the card's metadata and the pushed configs) of a model push,
    or absent (a dataset or Space has no base: refused, not dropped). ``name``: the option as the caller knows it."""
    from radmetrics.hub.cards import hub_model_id

    if base_model_id is None:
        return
    if repo_type != "model":
        raise InputError(f"{name} names a model's base: a {repo_type} push has none (drop it)")
    if hub_model_id(base_model_id, local=False) is None:
        raise RadmetricsError(f"--base-model '{base_model_id}' is not a Hub model id (owner/name): give the Hub id of "
                              "the model it was trained from")


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
                overwrite_card: bool = False, base_model_id: str | None = None) -> dict[str, Any]:
    """Upload FOLDER to REPO_ID through the privacy gate; create the repo private unless public=True.

    Refuses (PushRefused) to push PhysioNet/credentialed data publicly, and to add to an existing public
    repository unless public=True. A README.md on the Hub that a person wrote is kept (not uploaded over)
    unless overwrite_card. A model's files that name its base model by a local path are pushed naming it by
    ``base_model_id`` (its Hub id; `portable_base_files`: without it such a config is refused before any request;
    the folder is not changed; refused for a dataset or Space, which has no base). Returns {"url", "commit",
    "private" (read back from the Hub after the push), "gated", "card_kept", "public_requested", "base_renamed"
    ({file: (recorded, pushed)})}. The token comes from the argument or the usual environment / login, and is never
    printed: an error the Hub answers with is one RadmetricsError line, the token redacted."""
    from huggingface_hub.errors import HfHubHTTPError

    folder = Path(folder)
    if not folder.is_dir():
        raise RadmetricsError(f"Nothing to push: {folder} is not a folder")
    if gated not in (None, "auto", "manual"):
        raise RadmetricsError(f"gated must be 'auto' or 'manual', not {gated!r}")
    check_repo_id(repo_id)
    check_base_model_id(base_model_id, repo_type, name="base_model_id")
    if not any(p.is_file() for p in folder.rglob("*")):
        raise RadmetricsError(f"Nothing to push: {folder} holds no files")
    if public:
        check_public_allowed(folder, f"{folder} to {repo_id}")
    portable = portable_base_files(folder, base_model_id) if repo_type == "model" else {}
    try:
        return _push(folder, repo_id, repo_type, public, gated, token, commit_message, overwrite_card, portable)
    except HfHubHTTPError as e:  # a token refused, no right to write there, the Hub down: one line, no token
        raise RadmetricsError(hub_refused(e, repo_id, token)) from None


def _push(folder: Path, repo_id: str, repo_type: str, public: bool, gated: str | None, token: str | None,
          commit_message: str | None, overwrite_card: bool, portable: dict[str, tuple[str, str, str]]
          ) -> dict[str, Any]:
    from huggingface_hub import HfApi

    card = folder / "README.md"
    pushed_card = portable["README.md"][2] if "README.md" in portable else None  # the card as it goes up
    if card.is_file():
        validate_card(card, repo_type, text=pushed_card)
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
        card_text = (folder / "README.md").read_text(encoding="utf-8", errors="replace")
        sent_before = remote is not None and pushed_card is not None and _sent_before(remote, card_text)
        if remote is not None and remote != (pushed_card or card_text) and written_by_user(remote) and not sent_before:
            ignore.append("README.md")
            portable.pop("README.md", None)  # not pushed: no note says it went up naming the base
    with tempfile.TemporaryDirectory(prefix="radmetrics-push-") as staging:
        source = _staged(folder, {name: text for name, (_, _, text) in portable.items()}, Path(staging)) \
            if portable else folder
        commit = api.upload_folder(folder_path=str(source), repo_id=repo_id, repo_type=repo_type,
                                   ignore_patterns=ignore or None, delete_patterns=STALE_FILES.get(repo_type),
                                   commit_message=commit_message or f"Upload with radmetrics from {folder.name}")
    if gated:
        api.update_repo_settings(repo_id, repo_type=repo_type, gated=gated)
    url = f"{api.endpoint}/{'' if repo_type == 'model' else repo_type + 's/'}{repo_id}"
    return {"url": url, "commit": getattr(commit, "oid", None), "private": repo_visibility(api, repo_id, repo_type),
            "gated": gated or False, "card_kept": "README.md" in ignore, "public_requested": public,
            "base_renamed": {name: (recorded, named) for name, (recorded, named, _) in portable.items()}}


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
    for name, (_, named) in (result.get("base_renamed") or {}).items():
        lines.append(f"Note: {name} named the base model by a path on this machine; pushed "
                     + (f"naming it '{named}'" if named else "without it in the card's metadata"))
    if result["card_kept"]:
        lines.append("Note: kept the README.md on the Hub (written by hand); pass --overwrite-card to replace it.")
    return lines


def validate_card(card: Path, repo_type: str = "model", endpoint: str | None = None, text: str | None = None) -> None:
    """Ask the Hub's own card check (POST /api/validate-yaml, as huggingface_hub's RepoCard.validate does)
    before creating or uploading anything, so a card the Hub would refuse is one clear error, not a half push.
    Posted to the configured endpoint (HF_ENDPOINT): older huggingface_hub versions always ask huggingface.co."""
    from huggingface_hub import constants
    from huggingface_hub.utils import get_session, hf_raise_for_status

    url = f"{(endpoint or constants.ENDPOINT).rstrip('/')}/api/validate-yaml"
    body = {"repoType": repo_type, "content": card.read_text(encoding="utf-8") if text is None else text}
    response = get_session().post(url, json=body, headers={"Accept": "text/plain"})
    if response.status_code == 400:
        raise RadmetricsError(f"The Hub refuses the card {card}: {' '.join(response.text.split())}")
    hf_raise_for_status(response)
