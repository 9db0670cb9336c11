"""A chat-completions server on 127.0.0.1 that breaks: :class:`FaultyChat` answers a number of
requests, then hangs, drops the connection or answers garbage; :func:`start_chat` serves it in a thread.
``OPENAI_FAULT`` holds the openai options a run against it uses (a short timeout, one retry)."""

import json
import threading
import time
from http.server import ThreadingHTTPServer

from helpers.chat_server import JsonHandler

OPENAI_FAULT = dict(timeout=0.3, max_retries=1, backoff=0.01, concurrency=1)


class FaultyChat:
    """Answers ``good`` requests, then fails every request in the way ``fault`` says until
    ``recovered`` is set: "hang" (sleeps past the client's timeout), "drop" (closes the socket
    without a response) or "garbage" (200 with a body that is not JSON)."""

    def __init__(self, fault: str, good: int):
        self.fault, self.good, self.recovered = fault, good, False
        self.lock = threading.Lock()
        self.answered = self.faulted = 0
        self.http = _QuietServer(("127.0.0.1", 0), _Handler)
        self.http.chat = self
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def decide(self) -> str | None:
        with self.lock:
            if self.recovered or self.answered < self.good:
                self.answered += 1
                return None
            self.faulted += 1
            return self.fault


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """A client that gave up closed its socket: expected here."""


def _reply_for(messages: list[dict]) -> str:
    """Summaries echo the document; an fm judge gets facets or ratings that parse."""
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    if system.startswith("You split"):
        return json.dumps({"background": "b", "method": "m", "result": "r", "conclusion": "c"})
    if system.startswith("You compare"):
        return json.dumps({"background": 2, "method": 3, "result": 3, "conclusion": 2})
    return "summary " + messages[-1]["content"][-200:]


class _Handler(JsonHandler):
    def do_POST(self):
        chat = self.server.chat
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        fault = chat.decide()
        if fault == "hang":
            time.sleep(1.0)  # the client's timeout is 0.3 s
            return
        if fault == "drop":
            self.close_connection = True
            return  # nothing written: the handler returns and the socket is closed
        if fault == "garbage":
            data = b"<html>502 upstream garbage</html"
        else:
            data = json.dumps({"choices": [{"index": 0, "message": {
                "role": "assistant", "content": _reply_for(body["messages"])}}]}).encode()
        self.reply(200, data)


def start_chat(chat: FaultyChat):
    """Serve ``chat`` in a daemon thread (returned) until ``chat.http.shutdown()``."""
    thread = threading.Thread(target=chat.http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    return thread
