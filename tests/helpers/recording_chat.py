"""A chat-completions server on 127.0.0.1 that records every request (:class:`ChatServer`), the
replies it sends, and a port where no server listens (:func:`closed_port`), for the tests of the
openai backbone. ``INSTRUCTION`` is the instruction a prompt puts before the document, ``KEY`` an
API key that must never leak."""

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

INSTRUCTION = "Summarize the following document."
KEY = "sk-test-0123456789secret"


@dataclass
class Reply:
    """What the server answers one request: a dict is sent as JSON, bytes as they are."""

    status: int = 200
    body: dict | bytes = b""
    headers: dict = field(default_factory=dict)
    delay: float = 0.0


def completion(content: str) -> dict:
    return {"id": "c", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}


def echo(request: dict) -> Reply:
    """Succeeds with the last message's content as the summary, so order can be checked."""
    return Reply(body=completion("summary: " + request["body"]["messages"][-1]["content"]))


class ChatServer:
    """Answers the queued ``replies`` first, then ``default(request)``; keeps every request."""

    def __init__(self):
        self.requests: list[dict] = []
        self.replies: list[Reply] = []
        self.default = echo
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()
        self.http = _QuietServer(("127.0.0.1", 0), _Handler)
        self.http.chat = self
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def answer(self, request: dict) -> Reply:
        with self.lock:
            self.requests.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return self.replies.pop(0) if self.replies else self.default(request)

    def done(self):
        with self.lock:
            self.in_flight -= 1


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        """A client that timed out closed its socket; that is the point of the timeout test."""


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        chat = self.server.chat
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        reply = chat.answer({"path": self.path, "headers": dict(self.headers), "body": body})
        try:
            time.sleep(reply.delay)
        finally:
            # counted out before the answer is sent: a client cannot send its next request before it
            # has this answer, so a loaded machine that is slow to run this thread never shows one
            # request too many in flight
            chat.done()
        data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
        self.send_response(reply.status)
        for name, value in {"Content-Type": "application/json", **reply.headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def closed_port() -> int:
    with socket.socket() as probe:  # a port that nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
