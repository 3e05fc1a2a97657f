"""A Hub-compatible HTTP server on 127.0.0.1 for tests: repos stored on disk, enough of the Hub API for
huggingface_hub's create_repo / upload_folder / update_repo_settings / repo_info / hf_hub_download and
for transformers, datasets and evaluate to load from it (HF_ENDPOINT). Test infrastructure only.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
import threading

import yaml
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}

# The Hub's documented card rules (https://huggingface.co/docs/hub/model-cards, .../datasets-cards,
# .../repositories-licenses, .../spaces-config-reference), enforced by /api/validate-yaml below and used
# directly by the card tests.
HUB_LICENSES = set("""apache-2.0 mit openrail bigscience-openrail-m creativeml-openrail-m bigscience-bloom-rail-1.0
bigcode-openrail-m afl-3.0 artistic-2.0 bsl-1.0 bsd bsd-2-clause bsd-3-clause bsd-3-clause-clear c-uda cc cc0-1.0
cc-by-2.0 cc-by-2.5 cc-by-3.0 cc-by-4.0 cc-by-sa-3.0 cc-by-sa-4.0 cc-by-nc-2.0 cc-by-nc-3.0 cc-by-nc-4.0 cc-by-nd-4.0
cc-by-nc-nd-3.0 cc-by-nc-nd-4.0 cc-by-nc-sa-2.0 cc-by-nc-sa-3.0 cc-by-nc-sa-4.0 cdla-sharing-1.0 cdla-permissive-1.0
cdla-permissive-2.0 wtfpl ecl-2.0 epl-1.0 epl-2.0 etalab-2.0 eupl-1.1 eupl-1.2 agpl-3.0 gfdl gpl gpl-2.0 gpl-3.0 lgpl
lgpl-2.1 lgpl-3.0 isc h-research intel-research lppl-1.3c ms-pl apple-ascl apple-amlr mpl-2.0 odc-by odbl openrail++
osl-3.0 postgresql ofl-1.1 ncsa unlicense zlib pddl lgpl-lr deepfloyd-if-license llama2 llama3 llama3.1 llama3.2
llama3.3 llama4 gemma unknown other""".split())
SIZE_CATEGORIES = ["n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "10M<n<100M", "100M<n<1B",
                   "1B<n<10B", "10B<n<100B", "100B<n<1T", "n>1T"]
SPACE_SDKS = {"gradio", "streamlit", "docker", "static"}
REPO_ID = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")
NO_SPACES = re.compile(r"^[A-Za-z0-9_.:/-]+$")


def _is_repo_id(value) -> bool:
    return (isinstance(value, str) and bool(REPO_ID.match(value)) and ".." not in value and "--" not in value
            and not value.endswith((".", "-")))


def card_metadata_errors(content: str, repo_type: str = "model") -> list[str]:
    """What the Hub's YAML check refuses in a card's front matter (empty list: accepted)."""
    if not content.startswith("---\n"):
        return []  # a card without metadata is accepted
    try:
        meta = yaml.safe_load(content.split("---\n", 2)[1]) or {}
    except (yaml.YAMLError, IndexError) as e:
        return [f"invalid YAML front matter: {e}"]
    if not isinstance(meta, dict):
        return ["front matter is not a mapping"]
    errors = []
    license_ = meta.get("license")
    for value in (license_ if isinstance(license_, list) else [license_] if license_ is not None else []):
        if value not in HUB_LICENSES:
            errors.append(f'"license" must be one of the Hub license identifiers, got {value!r}')
    if license_ == "other":
        if not (isinstance(meta.get("license_name"), str) and re.fullmatch(r"[a-z0-9.-]+", meta["license_name"])):
            errors.append('"license: other" needs "license_name" (lowercase letters, digits, "-", ".")')
        if not isinstance(meta.get("license_link"), str):
            errors.append('"license: other" needs "license_link" (a URL or LICENSE file)')
    if repo_type == "model":
        base = meta.get("base_model")
        for value in (base if isinstance(base, list) else [base] if base is not None else []):
            if not _is_repo_id(value):
                errors.append(f'"base_model" must be a Hub model id, got {value!r}')
        if "library_name" in meta and not isinstance(meta["library_name"], str):
            errors.append('"library_name" must be a string')
        index = meta.get("model-index")
        if index is not None:
            errors += _model_index_errors(index)
    if repo_type == "dataset":
        for value in meta.get("size_categories") or []:
            if value not in SIZE_CATEGORIES:
                errors.append(f'"size_categories" must be one of {SIZE_CATEGORIES}, got {value!r}')
        if "task_categories" in meta and not all(isinstance(t, str) and NO_SPACES.match(t)
                                                 for t in meta["task_categories"] or []):
            errors.append('"task_categories" must be a list of task ids')
    if repo_type == "space":
        if meta.get("sdk") not in SPACE_SDKS:
            errors.append(f'"sdk" must be one of {sorted(SPACE_SDKS)}, got {meta.get("sdk")!r}')
        if "sdk_version" in meta and not (isinstance(meta["sdk_version"], str)
                                          and re.fullmatch(r"\d+\.\d+(\.\d+)?", meta["sdk_version"])):
            errors.append(f'"sdk_version" must be a version string such as "3.50.2", got {meta["sdk_version"]!r}')
    return errors


def _model_index_errors(index) -> list[str]:
    if not isinstance(index, list) or not index:
        return ['"model-index" must be a non-empty list']
    errors = []
    for model in index:
        if not isinstance(model, dict) or not isinstance(model.get("name"), str):
            errors.append('"model-index" entries need a "name"')
            continue
        results = model.get("results")
        if not isinstance(results, list) or not results:
            errors.append('"model-index" entries need a non-empty "results" list')
            continue
        for result in results:
            task, dataset, metrics = (result.get("task") or {}), (result.get("dataset") or {}), result.get("metrics")
            if not (isinstance(task.get("type"), str) and NO_SPACES.match(task["type"])):
                errors.append(f'"task.type" must be a task id, got {task.get("type")!r}')
            if not _is_repo_id(dataset.get("type")):
                errors.append(f'"dataset.type" must be a dataset id, got {dataset.get("type")!r}')
            if not isinstance(dataset.get("name"), str):
                errors.append('"dataset.name" is required')
            if not isinstance(metrics, list) or not metrics:
                errors.append('"metrics" must be a non-empty list')
                continue
            for metric in metrics:
                if not (isinstance(metric.get("type"), str) and NO_SPACES.match(metric["type"])):
                    errors.append(f'"metrics.type" must be a metric id without spaces, got {metric.get("type")!r}')
                if not isinstance(metric.get("value"), (int, float, str)) or isinstance(metric.get("value"), bool):
                    errors.append(f'"metrics.value" is required, got {metric.get("value")!r}')
    return errors


class HubServer:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.repos: dict[tuple[str, str], dict] = {}  # (type, id) -> {"private", "gated", "sha"}
        self.requests: list[tuple[str, str, dict]] = []
        self.validated: list[tuple[str, list[str]]] = []  # (repo type, errors) per validate-yaml call
        #: (status, message) every request is answered with when set, as the Hub answers a token it does not
        #: accept (401) or one that may not write there (403); "{auth}" in the message is the request's
        #: Authorization header, echoed as a careless proxy would
        self.refuse: tuple[int, str] | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status, body=b"", headers=None, head=False):
                if isinstance(body, (dict, list)):
                    body = json.dumps(body).encode()
                    headers = {"Content-Type": "application/json", **(headers or {})}
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def _body(self):
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _refused(self, head=False):
                if server.refuse is None:
                    return False
                status, message = server.refuse
                message = message.replace("{auth}", self.headers.get("Authorization", ""))
                self._send(status, {"error": message}, {"X-Error-Message": message}, head=head)
                return True

            def do_POST(self):
                server.requests.append(("POST", self.path, dict(self.headers)))
                body = self._body()
                if self._refused():
                    return
                path = urlparse(self.path).path
                if path == "/api/repos/create":
                    return self._send(*server.create(json.loads(body)))
                if path == "/api/validate-yaml":  # the Hub's card metadata check (RepoCard.validate)
                    payload = json.loads(body)
                    errors = card_metadata_errors(payload.get("content", ""), payload.get("repoType") or "model")
                    server.validated.append((payload.get("repoType") or "model", errors))
                    if errors:
                        return self._send(400, ("; ".join(errors)).encode(), {"Content-Type": "text/plain"})
                    return self._send(200, {"errors": [], "warnings": []})
                m = re.fullmatch(r"/api/(model|dataset|space)s/([^/]+/[^/]+)/preupload/(.+)", path)
                if m:
                    files = json.loads(body)["files"]
                    return self._send(200, {"files": [{"path": f["path"], "uploadMode": "regular",
                                                       "shouldIgnore": False} for f in files], "commitOid": None})
                m = re.fullmatch(r"/api/(model|dataset|space)s/([^/]+/[^/]+)/commit/(.+)", path)
                if m:
                    return self._send(*server.commit(m.group(1), m.group(2), body))
                return self._send(404, {"error": f"no route POST {path}"})

            def do_PUT(self):
                server.requests.append(("PUT", self.path, dict(self.headers)))
                body = self._body()
                if self._refused():
                    return
                m = re.fullmatch(r"/api/(model|dataset|space)s/([^/]+/[^/]+)/settings", urlparse(self.path).path)
                if m and (m.group(1), m.group(2)) in server.repos:
                    server.repos[(m.group(1), m.group(2))].update(json.loads(body))
                    return self._send(200, {})
                return self._send(404, {"error": "not found"})

            def do_GET(self):
                self._get(head=False)

            def do_HEAD(self):
                self._get(head=True)

            def _get(self, head):
                server.requests.append(("HEAD" if head else "GET", self.path, dict(self.headers)))
                if self._refused(head):
                    return
                path = unquote(urlparse(self.path).path)
                m = re.fullmatch(r"/api/(model|dataset|space)s/([^/]+/[^/]+?)(?:/revision/([^/]+))?", path)
                if m:
                    info = server.info(m.group(1), m.group(2))
                    return self._send(*info, head=head)
                m = re.fullmatch(r"/api/(model|dataset|space)s/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?", path)
                if m:
                    return self._send(*server.tree(m.group(1), m.group(2), m.group(4) or ""), head=head)
                m = re.fullmatch(r"/(datasets/|spaces/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
                if m:
                    kind = {"datasets/": "dataset", "spaces/": "space", None: "model"}[m.group(1)]
                    return self._send(*server.resolve(kind, m.group(2), m.group(4)), head=head)
                return self._send(404, {"error": f"no route GET {path}"}, head=head)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    # -- repository state -------------------------------------------------------------------------------------
    def folder(self, kind: str, repo_id: str) -> Path:
        return self.root / kind / repo_id

    def create(self, payload: dict):
        kind = payload.get("type") or "model"
        repo_id = f"{payload['organization'] or 'user'}/{payload['name']}"
        private = payload.get("visibility", "private" if payload.get("private") else "public") != "public"
        if (kind, repo_id) in self.repos:
            return 409, {"error": "You already created this repo", "url": f"{self.endpoint}/{PREFIX[kind]}{repo_id}"}
        self.repos[(kind, repo_id)] = {"private": private, "gated": False, "sha": "0" * 40}
        self.folder(kind, repo_id).mkdir(parents=True, exist_ok=True)
        return 200, {"url": f"{self.endpoint}/{PREFIX[kind]}{repo_id}", "name": repo_id, "id": repo_id}

    def commit(self, kind: str, repo_id: str, body: bytes):
        if (kind, repo_id) not in self.repos:
            return 404, {"error": "Repository not found"}
        folder = self.folder(kind, repo_id)
        digest = hashlib.sha1(body)
        for line in body.decode().splitlines():
            item = json.loads(line)
            if item["key"] == "file":
                target = folder / item["value"]["path"]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(base64.b64decode(item["value"]["content"]))
            elif item["key"] == "deletedFile":
                (folder / item["value"]["path"]).unlink(missing_ok=True)
        sha = digest.hexdigest()
        self.repos[(kind, repo_id)]["sha"] = sha
        return 200, {"commitUrl": f"{self.endpoint}/{PREFIX[kind]}{repo_id}/commit/{sha}", "commitOid": sha,
                     "success": True}

    def files(self, kind: str, repo_id: str) -> list[str]:
        folder = self.folder(kind, repo_id)
        return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())

    def info(self, kind: str, repo_id: str):
        if (kind, repo_id) not in self.repos:
            return 404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"}
        state = self.repos[(kind, repo_id)]
        return 200, {"id": repo_id, "modelId": repo_id, "sha": state["sha"], "private": state["private"],
                     "gated": state["gated"], "disabled": False, "downloads": 0, "likes": 0, "tags": [],
                     "siblings": [{"rfilename": f} for f in self.files(kind, repo_id)],
                     "lastModified": "2026-11-22T00:00:00.000Z", "createdAt": "2026-11-22T00:00:00.000Z",
                     "cardData": {}, "author": repo_id.split("/")[0]}, {}

    def tree(self, kind: str, repo_id: str, sub: str):
        if (kind, repo_id) not in self.repos:
            return 404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"}
        folder = self.folder(kind, repo_id)
        entries = []
        for f in self.files(kind, repo_id):
            if sub and not f.startswith(sub.rstrip("/") + "/"):
                continue
            data = (folder / f).read_bytes()
            entries.append({"type": "file", "path": f, "size": len(data), "oid": hashlib.sha1(data).hexdigest()})
        return 200, entries, {}

    def resolve(self, kind: str, repo_id: str, filename: str):
        if (kind, repo_id) not in self.repos:
            return 404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"}
        path = self.folder(kind, repo_id) / filename
        if not path.is_file():
            return 404, {"error": "Entry not found"}, {"X-Error-Code": "EntryNotFound"}
        data = path.read_bytes()
        etag = hashlib.sha1(data).hexdigest()
        return 200, data, {"X-Repo-Commit": self.repos[(kind, repo_id)]["sha"], "ETag": f'"{etag}"',
                           "Content-Type": "application/octet-stream"}

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
