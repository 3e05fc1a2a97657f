"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests, with scripted faults.

`script` is a list consumed one entry per request: "ok", "429", "500", "timeout", "reset", "garbage",
"truncated", "empty" (no choices), "401"; when it runs out every request is "ok". Answers come from
`answer(prompt)`. Each request's headers and body are recorded.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAIServer:
    def __init__(self, answer, script=None, retry_after: str = "0"):
        self.answer = answer
        self.script = list(script or [])
        self.retry_after = retry_after
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    action = server.script.pop(0) if server.script else "ok"
                if action == "timeout":
                    time.sleep(1.5)
                    action = "ok"
                if action == "reset":
                    self.connection.shutdown(2)
                    self.connection.close()
                    return
                if action in {"429", "500", "401"}:
                    self.send_response(int(action))
                    if action == "429":
                        self.send_header("Retry-After", server.retry_after)
                    self.send_header("content-type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"error": {"message": "scripted failure"}}')
                    return
                if self.path.endswith("/chat/completions"):
                    prompt = body["messages"][-1]["content"]
                    choice = {"index": 0, "message": {"role": "assistant", "content": server.answer(prompt)},
                              "finish_reason": "stop"}
                else:
                    choice = {"index": 0, "text": server.answer(body["prompt"]), "finish_reason": "stop"}
                payload = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model"),
                                      "choices": [] if action == "empty" else [choice]}).encode()
                if action == "garbage":
                    payload = b"<html>bad gateway</html>"
                if action == "truncated":
                    payload = payload[: len(payload) // 2]
                try:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
