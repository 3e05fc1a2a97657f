"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests, with scripted faults.

`script` is a list consumed one entry per request: "ok", "timeout", "reset", "garbage", "truncated",
"empty" (no choices), or an HTTP status as text ("429", "500", "401", "400", "404", "503", ...); when it runs
out every request is "ok". Answers come from `answer(prompt)`. Each request's headers, body and arrival time
(`time.monotonic()`) are recorded. 429 and 503 carry `Retry-After: <retry_after>`.

`echo_key=True` makes the server misbehave the way a careless proxy or API does with credentials: the
request's Authorization value is echoed in a response header, in every error body, in garbage pages and in a
field of every successful body (never in the answer text itself). `error_body(auth, n)` writes the body of
the n-th error reply (default: a short JSON error, with the key and the request's path and query when `echo_key`).

"length": the answer with `finish_reason: "length"` (the server stopped it at max_tokens); "length-empty": no
text and `finish_reason: "length"`; "max_tokens": the answer with that finish reason (what some gateways pass on);
"content_filter": the first half of the answer with `finish_reason: "content_filter"` (OpenAI's and Azure's filter). More scripted faults: "schema" ({"choices": "abc"}), "blank" (empty answer text), "nontext" (a number as the
answer), "huge" (a 5 MB body), "trickle" (headers, then the body one byte every 0.2 s). `delay` seconds pass
before each answer. "stall" accepts the request and sends nothing until the server is shut down (a stuck
server). Each request also records `t_start` (wall clock) and `t_done` (when its response was fully written,
or when the server noticed the client had left a trickle).
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAIServer:
    def __init__(self, answer, script=None, retry_after: str = "0", echo_key: bool = False, error_body=None,
                 delay: float = 0.0, port: int = 0):
        self.answer = answer
        self.delay = delay
        self.script = list(script or [])
        self.retry_after = retry_after
        self.echo_key = echo_key
        self.error_body = error_body
        self.requests: list[dict] = []
        self.errors_sent = 0
        self.lock = threading.Lock()
        self.closing = threading.Event()  # set on exit: stalled requests end
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                arrived = time.monotonic()
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                auth = self.headers.get("Authorization", "")
                record = {"path": self.path, "headers": dict(self.headers), "body": body, "time": arrived,
                          "t_start": time.time(), "t_done": None}
                with server.lock:
                    server.requests.append(record)
                    action = server.script.pop(0) if server.script else "ok"
                echo = {"X-Echo-Authorization": auth} if server.echo_key else {}
                if action == "stall":
                    server.closing.wait()
                    return
                if action == "timeout":
                    time.sleep(1.5)
                    action = "ok"
                if server.delay:
                    time.sleep(server.delay)
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
                        payload = json.dumps({"error": {"message": f"scripted failure for {auth} at {self.path}",
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
                    record["t_done"] = time.time()
                    return
                if action == "trickle":
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", "100000")
                    self.end_headers()
                    try:
                        for _ in range(1000):
                            self.wfile.write(b" ")
                            self.wfile.flush()
                            time.sleep(0.2)
                    except (BrokenPipeError, ConnectionResetError):
                        record["t_done"] = time.time()  # when the server noticed the client had left
                    return
                chat = self.path.partition("?")[0].endswith("/chat/completions")
                text = server.answer(_prompt_of(body["messages"]) if chat else body["prompt"])
                if action in ("blank", "length-empty"):
                    text = ""
                elif action == "nontext":
                    text = 5
                elif action == "huge":
                    text = "junk " * 1_000_000
                finish = {"length": "length", "length-empty": "length", "content_filter": "content_filter",
                          "max_tokens": "max_tokens"}.get(action, "stop")
                if action == "content_filter":
                    text = text[: len(text) // 2]  # the text up to the filter's cut comes with it
                if chat:
                    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
                else:
                    choice = {"index": 0, "text": text, "finish_reason": finish}
                reply = {"id": "x", "object": "chat.completion", "model": body.get("model"),
                         "choices": [] if action == "empty" else [choice]}
                if server.echo_key:
                    reply["system_fingerprint"] = f"served for {auth}"
                payload = json.dumps(reply).encode()
                if action == "garbage":
                    payload = f"<html>bad gateway ({auth})</html>".encode()
                if action == "truncated":
                    payload = payload[: len(payload) // 2]
                if action == "schema":
                    payload = json.dumps({"choices": "abc", "note": f"served for {auth}"}).encode()
                try:
                    self.send_response(200)
                    for k, v in echo.items():
                        self.send_header(k, v)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    record["t_done"] = time.time()
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)  # port 0: any free one
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _prompt_of(messages):
    """The prompt a chat request was built from: one user message's text (after any --judge-option system_prompt),
    or the conversation (radmetrics.conversation) its turns make."""
    from radmetrics.conversation import chat_prompt

    messages = [{"role": m["role"], "content": m["content"]} for m in messages]  # lm-eval adds "type": "text"
    users = [m for m in messages if m["role"] == "user"]
    if len(users) == 1 and len(messages) <= 2:
        return users[0]["content"]
    return chat_prompt(messages)
