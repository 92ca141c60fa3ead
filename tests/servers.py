"""Real local servers for tests: a scripted HTTP server (the Oxigraph SPARQL server is
`kalma.kg.serve`, which benchmarks use too)."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kalma.kg.serve import free_port as free_port  # re-exported: tests take every server from here
from kalma.kg.serve import serve_snapshot as serve_snapshot

Handler = Callable[[BaseHTTPRequestHandler, bytes], None]


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # many clients at once (concurrency tests) must not wait on the listen backlog


@contextmanager
def scripted_server(script: list[Handler], models: list[dict] | None = None, port: int = 0) -> Iterator[tuple[str, list[dict]]]:
    """An HTTP server on 127.0.0.1 whose n-th request is answered by script[n] (the last entry
    repeats). Yields (base URL, log of requests with their headers and bodies).

    `GET …/models` is answered apart, as an OpenAI-compatible server lists what it serves:
    with `models` (model cards, e.g. vLLM's `{"id": …, "root": …}`), or 404 when None. It is
    neither logged nor counted in the script."""
    log: list[dict] = []
    lock = threading.Lock()

    class H(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            if self.command == "GET" and self.path.rstrip("/").endswith("/models"):
                if models is None:
                    return reply(404, b'{"error": "not found"}')(self, b"")
                return reply(200, json.dumps({"object": "list", "data": models}).encode(), {"Content-Type": "application/json"})(self, b"")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                n = len(log)
                log.append({"path": self.path, "headers": dict(self.headers), "body": body})
            script[min(n, len(script) - 1)](self, body)

        do_GET = do_POST = _serve

        def log_message(self, *args: object) -> None:
            pass

    srv = _Server(("127.0.0.1", port), H)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)  # shutdown() waits one poll: not 0.5 s a server
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", log
    finally:
        srv.shutdown()
        srv.server_close()


def reply(status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> Handler:
    def handler(h: BaseHTTPRequestHandler, _: bytes) -> None:
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    return handler


def hang(seconds: float) -> Handler:
    def handler(h: BaseHTTPRequestHandler, _: bytes) -> None:
        time.sleep(seconds)
        try:
            reply(200, b"{}")(h, _)
        except OSError:
            pass

    return handler


# A SELECT result with one binding, as a SPARQL endpoint sends it.
SPARQL_OK = json.dumps(
    {
        "head": {"vars": ["name", "item"]},
        "results": {
            "bindings": [{"name": {"type": "literal", "value": "X", "xml:lang": "en"}, "item": {"type": "uri", "value": "http://www.wikidata.org/entity/Q42"}}]
        },
    }
).encode()


def completion(text: str, logprobs: bool = False, *, reasoning_content: str | None = None, finish_reason: str = "stop") -> bytes:
    """A chat-completion response body, as an OpenAI-compatible server sends it (with
    `reasoning_content`, as DeepSeek's API and vLLM's reasoning parser send a model's thoughts)."""
    message = {"role": "assistant", "content": text, **({"reasoning_content": reasoning_content} if reasoning_content else {})}
    choice = {"index": 0, "message": message, "finish_reason": finish_reason}
    if logprobs:
        choice["logprobs"] = {
            "content": [
                {
                    "token": "4",
                    "logprob": -0.2,
                    "bytes": None,
                    "top_logprobs": [{"token": "4", "logprob": -0.2, "bytes": None}, {"token": "5", "logprob": -1.8, "bytes": None}],
                }
            ]
        }
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [choice],
            "usage": {"prompt_tokens": 11, "completion_tokens": 1, "total_tokens": 12},
        }
    ).encode()


def echoed_prompt(prompt: str) -> bytes:
    """A /completions reply to `echo` with `logprobs`, shaped as vLLM sends it for a model with a
    start token: `<s>` listed first with a null log-probability and its characters counted in the
    offsets, then the prompt's words (each with the spaces before it) at -0.1 a character, then
    one generated token."""
    tokens = ["<s>", *re.findall(r"\s*\S+", prompt), " Then"]
    values = [None, *(-0.1 * len(t) for t in tokens[1:-1]), -0.5]
    offsets = [sum(len(t) for t in tokens[:i]) for i in range(len(tokens))]
    top = [None if v is None else {t: v} for t, v in zip(tokens, values)]
    logprobs = {"text_offset": offsets, "token_logprobs": values, "tokens": tokens, "top_logprobs": top}
    choice = {"index": 0, "text": prompt + " Then", "logprobs": logprobs, "finish_reason": "length"}
    usage = {"prompt_tokens": len(tokens) - 1, "completion_tokens": 1, "total_tokens": len(tokens)}
    return json.dumps({"id": "c", "object": "text_completion", "created": 0, "model": "m", "choices": [choice], "usage": usage}).encode()


def answering(respond: Callable[[str], str]) -> Handler:
    """An OpenAI-compatible server: a chat request is answered with `respond(last message)`, a
    completions request with its prompt echoed and scored (`echoed_prompt`)."""

    def handler(h: BaseHTTPRequestHandler, body: bytes) -> None:
        request = json.loads(body)
        payload = echoed_prompt(request["prompt"]) if "prompt" in request else completion(respond(request["messages"][-1]["content"]))
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)

    return handler


# Answers the last message in upper case: a deterministic server for contract tests.
echo_completion = answering(str.upper)
