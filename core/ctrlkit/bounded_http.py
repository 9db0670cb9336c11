"""One HTTP POST to a server that may be hostile: no redirect followed, a deadline on the whole
exchange, and a cap on the bytes read.

urllib follows redirects by default, resending every header (the Authorization key included)
to whatever host the Location names and turning a POST into a GET; here a 3xx is simply the
answer, for the caller to refuse. A socket timeout bounds each read, not the exchange, so a
server that trickles its answer a byte at a time never times out; a watchdog thread shuts the
socket down when the deadline passes, which wakes a blocked read. Reading stops one byte past
the cap, so an endless or huge answer costs at most the cap in memory.
"""

from __future__ import annotations

import functools
import http.client
import socket
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message

_CHUNK = 64 * 1024


class DeadlinePassed(TimeoutError):
    """The exchange took longer than its timeout, however steadily the server was sending."""


@dataclass
class Answer:
    """A server's answer, whatever its status; ``body`` holds at most ``max_bytes``."""

    status: int
    reason: str
    headers: Message
    body: bytes
    complete: bool
    """False when the server sent (or announced) more than ``max_bytes``."""
    length: int | None
    """The Content-Length the server announced, if any."""


def post(opener: urllib.request.OpenerDirector, url: str, payload: bytes, headers: dict[str, str], *,
         timeout: float, max_bytes: int) -> Answer:
    """POST ``payload`` through an ``opener()``; raises DeadlinePassed when the whole exchange
    outlasts ``timeout``, OSError or http.client.HTTPException when the connection fails."""
    request = urllib.request.Request(url, data=payload, headers=headers, method="POST")
    with _Deadline(timeout) as deadline:
        request.deadline = deadline  # read by _WatchedOpen, which builds the connection
        try:
            try:
                response = opener.open(request, timeout=timeout)
            except urllib.error.HTTPError as error:  # any status but 2xx, redirects included
                response = error
            with response:
                raw = response.fp if isinstance(response, urllib.error.HTTPError) else response
                length = raw.length  # what is left to read, so taken before reading
                body, complete = _read(raw, deadline, max_bytes)
                return Answer(raw.status, str(raw.reason or ""), raw.headers, body, complete, length)
        except (OSError, http.client.HTTPException):
            if deadline.passed:
                raise DeadlinePassed(f"no response within {timeout:g} s") from None
            raise


def opener() -> urllib.request.OpenerDirector:
    """urllib's usual opener (proxies from the environment included), minus redirects, plus deadlines."""
    return urllib.request.build_opener(_NoRedirects, _WatchedHTTPHandler, _WatchedHTTPSHandler)


def _read(response: http.client.HTTPResponse, deadline: _Deadline, max_bytes: int) -> tuple[bytes, bool]:
    """The body, in chunks, stopping one byte past ``max_bytes``; whether it was all of it."""
    if response.length is not None and response.length > max_bytes:
        return b"", False
    chunks, size = [], 0
    while size <= max_bytes:
        chunk = response.read(min(_CHUNK, max_bytes + 1 - size))
        if deadline.passed:  # a read cut short by the watchdog looks like the end of the body
            raise DeadlinePassed
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)[:max_bytes], size <= max_bytes


class _Deadline:
    """The end of one exchange; the sockets it watches are shut down when it passes."""

    def __init__(self, seconds: float):
        self._end = time.monotonic() + seconds
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._expired = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    @property
    def passed(self) -> bool:
        return self._expired or time.monotonic() >= self._end

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self._expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self._expired = True
            for sock in self._sockets:
                _shut(sock)

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._timer.cancel()
        with self._lock:
            self._sockets.clear()


def _shut(sock: socket.socket) -> None:
    """Wake whatever blocks on ``sock``. The plain socket's shutdown, even for TLS: an
    SSLSocket's own would unwrap it under the thread still reading it."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


class _Watched:
    """A connection whose socket, once connected, its request's deadline watches."""

    def __init__(self, *args, deadline: _Deadline, **kwargs):
        super().__init__(*args, **kwargs)
        self._deadline = deadline

    def connect(self):
        super().connect()
        self._deadline.watch(self.sock)


class _WatchedHTTPConnection(_Watched, http.client.HTTPConnection):
    pass


class _WatchedHTTPSConnection(_Watched, http.client.HTTPSConnection):
    pass


class _WatchedOpen:
    """Makes urllib's handlers build watched connections."""

    def do_open(self, http_class, request, **kwargs):
        secure = issubclass(http_class, http.client.HTTPSConnection)
        watched = _WatchedHTTPSConnection if secure else _WatchedHTTPConnection
        return super().do_open(functools.partial(watched, deadline=request.deadline), request, **kwargs)


class _WatchedHTTPHandler(_WatchedOpen, urllib.request.HTTPHandler):
    pass


class _WatchedHTTPSHandler(_WatchedOpen, urllib.request.HTTPSHandler):
    pass


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A 3xx is answered as it is: following it would send the key to another origin."""

    def redirect_request(self, *args, **kwargs):
        return None
