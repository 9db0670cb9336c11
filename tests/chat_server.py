"""The part every loopback chat-completions server in the tests shares: a quiet handler that
answers with JSON."""

import json
from http.server import BaseHTTPRequestHandler


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
