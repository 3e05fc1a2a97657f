"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests, with scripted faults.

`script` is a list consumed one entry per request: "ok", "timeout", "reset", "garbage", "truncated",
"empty" (no choices), or an HTTP status as text ("429", "500", "401", "400", "404", "503", ...); when it runs
out every request is "ok". Answers come from `answer(prompt)`. Each request's headers, body and arrival time
(`time.monotonic()`) are recorded. 429 and 503 carry `Retry-After: <retry_after>`.

`echo_key=True` makes the server misbehave the way a careless proxy or API does with credentials: the
request's Authorization value is echoed in a response header, in every error body, in garbage pages and in a
field of every successful body (never in the answer text itself). `error_body(auth, n)` writes the body of
the n-th error reply (default: a short JSON error, with the key when `echo_key`).
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAIServer:
    def __init__(self, answer, script=None, retry_after: str = "0", echo_key: bool = False, error_body=None):
        self.answer = answer
        self.script = list(script or [])
        self.retry_after = retry_after
        self.echo_key = echo_key
        self.error_body = error_body
        self.requests: list[dict] = []
        self.errors_sent = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                arrived = time.monotonic()
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                auth = self.headers.get("Authorization", "")
                with server.lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body,
                                            "time": arrived})
                    action = server.script.pop(0) if server.script else "ok"
                echo = {"X-Echo-Authorization": auth} if server.echo_key else {}
                if action == "timeout":
                    time.sleep(1.5)
                    action = "ok"
                if action == "reset":
                    self.connection.shutdown(2)
                    self.connection.close()
                    return
                if action.isdigit():
                    with server.lock:
                        n = server.errors_sent
                        server.errors_sent += 1
                    if server.error_body is not None:
                        payload = server.error_body(auth, n)
                    elif server.echo_key:
                        payload = json.dumps({"error": {"message": f"scripted failure for {auth}",
                                                        "key": auth}}).encode()
                    else:
                        payload = b'{"error": {"message": "scripted failure"}}'
                    self.send_response(int(action))
                    if action in {"429", "503"}:
                        self.send_header("Retry-After", server.retry_after)
                    for k, v in echo.items():
                        self.send_header(k, v)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if self.path.endswith("/chat/completions"):
                    prompt = body["messages"][-1]["content"]
                    choice = {"index": 0, "message": {"role": "assistant", "content": server.answer(prompt)},
                              "finish_reason": "stop"}
                else:
                    choice = {"index": 0, "text": server.answer(body["prompt"]), "finish_reason": "stop"}
                reply = {"id": "x", "object": "chat.completion", "model": body.get("model"),
                         "choices": [] if action == "empty" else [choice]}
                if server.echo_key:
                    reply["system_fingerprint"] = f"served for {auth}"
                payload = json.dumps(reply).encode()
                if action == "garbage":
                    payload = f"<html>bad gateway ({auth})</html>".encode()
                if action == "truncated":
                    payload = payload[: len(payload) // 2]
                try:
                    self.send_response(200)
                    for k, v in echo.items():
                        self.send_header(k, v)
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
