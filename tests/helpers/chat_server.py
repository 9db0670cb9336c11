"""The part every loopback chat-completions server in the tests shares: a quiet handler that
answers with JSON, and a server running it for a ``with`` block."""

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class JsonHandler(BaseHTTPRequestHandler):
    """Subclasses implement do_POST and answer with ``self.reply(status, payload)``."""

    def reply(self, status: int, payload) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class QuietServer(ThreadingHTTPServer):
    """A threaded loopback server that keeps a client's dropped connection out of the test output."""

    def handle_error(self, request, client_address):
        pass


@contextmanager
def serving(handler, server_class=QuietServer):
    """A server on 127.0.0.1 at a free port, in a thread, for the ``with`` block: ``server.url`` is
    its ``/v1`` base URL and ``server.seen`` a list its handler may record requests in."""
    server = server_class(("127.0.0.1", 0), handler)
    server.seen = []
    server.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
