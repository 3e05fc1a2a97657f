"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests, with scripted faults.

`script` is a list consumed one entry per request: "ok", "429", "500", "timeout", "reset", "garbage",
"truncated", "empty" (no choices), "401", "400", "schema" ({"choices": "abc"}), "blank" (empty answer text),
"nontext" (a number as the answer), "huge" (a 5 MB body), "trickle" (headers, then the body one byte every
0.2 s); when it runs out every request is "ok". Answers come from `answer(prompt)`, after `delay` seconds.
`echo_key=True` puts the request's Authorization header into every error and junk body, placed to straddle
character 200 (a client that cuts before redacting leaks it). Each request's headers, body, arrival time
(`t_start`) and the time its response was fully written (`t_done`) are recorded.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAIServer:
    def __init__(self, answer, script=None, retry_after: str = "0", delay: float = 0.0, echo_key: bool = False):
        self.answer = answer
        self.script = list(script or [])
        self.retry_after = retry_after
        self.delay = delay
        self.echo_key = echo_key
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                record = {"path": self.path, "headers": dict(self.headers), "body": body, "t_start": time.time(),
                          "t_done": None}
                with server.lock:
                    server.requests.append(record)
                    action = server.script.pop(0) if server.script else "ok"
                echo = ""
                if server.echo_key:  # placed so that characters 170-230 of the body hold the key
                    echo = "x" * 150 + " the key you sent: " + self.headers.get("authorization", "") + " is wrong"
                if action == "timeout":
                    time.sleep(1.5)
                    action = "ok"
                if server.delay:
                    time.sleep(server.delay)
                if action == "reset":
                    self.connection.shutdown(2)
                    self.connection.close()
                    return
                if action in {"429", "500", "401", "400"}:
                    self.send_response(int(action))
                    if action == "429":
                        self.send_header("Retry-After", server.retry_after)
                    self.send_header("content-type", "application/json")
                    self.end_headers()
                    message = echo or "scripted failure"
                    self.wfile.write(json.dumps({"error": {"message": message}}).encode())
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
                chat = self.path.endswith("/chat/completions")
                text = server.answer(body["messages"][-1]["content"] if chat else body["prompt"])
                if action == "blank":
                    text = ""
                elif action == "nontext":
                    text = 5
                elif action == "huge":
                    text = "junk " * 1_000_000
                if chat:
                    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                else:
                    choice = {"index": 0, "text": text, "finish_reason": "stop"}
                payload = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model"),
                                      "choices": [] if action == "empty" else [choice]}).encode()
                if action == "garbage":
                    payload = f"<html>bad gateway {echo}</html>".encode()
                if action == "truncated":
                    payload = payload[: len(payload) // 2]
                if action == "schema":
                    payload = json.dumps({"choices": "abc", "note": echo}).encode()
                try:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    record["t_done"] = time.time()
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
