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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}


class HubServer:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.repos: dict[tuple[str, str], dict] = {}  # (type, id) -> {"private", "gated", "sha"}
        self.requests: list[tuple[str, str, dict]] = []
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

            def do_POST(self):
                server.requests.append(("POST", self.path, dict(self.headers)))
                body = self._body()
                path = urlparse(self.path).path
                if path == "/api/repos/create":
                    return self._send(*server.create(json.loads(body)))
                if path == "/api/validate-yaml":  # card metadata check before upload
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
