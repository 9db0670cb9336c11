"""Several OpenAI-compatible servers behind one backbone (N vLLM servers of one model): which
one each request goes to, which one to pass over for a while, and what each did.

A request goes to the endpoint with the fewest requests outstanding; ties go to the one listed
first, so with ``concurrency=1`` every request goes to the first endpoint while it answers, and a
slow endpoint gets fewer requests than a fast one (it holds each longer). An endpoint that failed
``FAILURES_BEFORE_COOLDOWN`` attempts in a row (any request's) is *cooling* for ``cooldown``
seconds: it is asked only after every endpoint that is not, and a success ends its run of failures.
"""

from __future__ import annotations

import ipaddress
import re
import threading
import time
import unicodedata
import urllib.parse
from dataclasses import dataclass

from ..errors import ConfigurationError
from ..secrets import scrub_text

FAILURES_BEFORE_COOLDOWN = 2
_LABEL = re.compile(r"[A-Za-z0-9_-]{1,63}")
"""One label of a host name (RFC 1123, with ``_``, which some internal names hold)."""
_ZONE = re.compile(r"[A-Za-z0-9._~-]{1,64}")
"""An IPv6 zone (``fe80::1%25eth0``: the interface, as RFC 6874 writes it in a URL)."""


@dataclass(eq=False)
class Endpoint:
    """One server: where requests go (``url``), how it is shown and recorded (``shown``, its
    base URL scrubbed of any secret), and what it did so far."""

    position: int
    url: str
    shown: str
    outstanding: int = 0
    answered: bool = False
    """Whether it has answered once (any status): after that, a refused connection is a restart."""
    served: int = 0
    failed: int = 0
    """Attempts that failed here in a way worth another try (429, 5xx, connection, timeout)."""
    failed_over: int = 0
    """Requests that failed here and were then served by another endpoint."""
    failures_in_a_row: int = 0
    cooling_until: float = 0.0
    cooled: bool = False


def base_urls(value: str, owner: str) -> list[str]:
    """The endpoint roots in ``value`` (comma-separated), each checked as one base URL is: http or
    https, no credentials in the host part. Bad input is one ConfigurationError line that shows no
    URL, since a URL may hold a secret."""
    items = [item.strip() for item in value.split(",")]
    where = f"backbone '{owner}': base_url (--set {owner}.base_url or $OPENAI_BASE_URL)"
    for number, item in enumerate(items, 1):
        at = f" (item {number} of {len(items)})" if len(items) > 1 else ""
        if not item:
            raise ConfigurationError(f"{where} has an empty item{at}; separate endpoints with one comma each")
        problem = _bracketed(item)  # before urllib, whose error for a bad one quotes the host
        if problem:
            raise ConfigurationError(f"{where} {problem}{at}; no request was sent")
        try:
            parts = urllib.parse.urlsplit(item)
        except ValueError:  # shown without urllib's words, which may quote the URL
            raise ConfigurationError(f"{where} is not a well-formed URL{at}; no request was sent") from None
        if parts.scheme.lower() not in ("http", "https"):  # urllib would also open file:, ftp: and data: URLs
            got = parts.scheme + ":" if parts.scheme else "no scheme"
            raise ConfigurationError(f"{where} must start with http:// or https://, got {got}{at}")
        if "@" in parts.netloc:  # urllib takes "user:pw@host" for the host name
            raise ConfigurationError(f"{where} holds credentials (user:password@host){at}, which would be sent "
                                     f"to the name resolver as part of the host; give the key with --set "
                                     f"{owner}.api_key or $OPENAI_API_KEY")
        problem = _malformed(item, parts)
        if problem:
            raise ConfigurationError(f"{where} {problem}{at}; no request was sent")
    roots = [item.rstrip("/") for item in items]
    for number, root in enumerate(roots, 1):
        if roots.index(root) + 1 != number:
            raise ConfigurationError(f"{where} lists the same endpoint twice (items {roots.index(root) + 1} and "
                                     f"{number} of {len(items)}); list each server once")
    return items


def _bracketed(item: str) -> str:
    """What is wrong with the brackets of a URL's host, or "": a host in brackets is an IPv6
    address (a zone after ``%25`` allowed), alone or followed by ``:PORT``; a bracket anywhere else
    in the host is refused. Shown without the URL or the host, which may hold a secret."""
    scheme, separator, rest = item.partition("://")
    if not separator:
        return ""
    authority = rest[: min((rest.find(end) % (len(rest) + 1) for end in "/?#"))]
    host = authority.rpartition("@")[2]  # credentials are refused after this, without quoting them
    if "[" not in host and "]" not in host:
        return ""
    close = host.find("]")
    if not host.startswith("[") or close < 0 or host.count("[") != 1 or host.count("]") != 1:
        return "has a '[' or ']' in its host other than around one IPv6 address ('http://[::1]:8000/v1')"
    if host[close + 1 :] and not host[close + 1 :].startswith(":"):
        return "has something other than ':PORT' after the ']' of its IPv6 address"
    address, _, zone = host[1:close].partition("%25")
    try:
        ipaddress.IPv6Address(address)
    except ValueError:
        return "has a host in brackets that is not an IPv6 address"
    if "%25" in host[1:close] and not _ZONE.fullmatch(zone):
        return "has an IPv6 zone after '%25' that is not letters, digits, '.', '_', '~' or '-'"
    return ""


def _malformed(item: str, parts: urllib.parse.SplitResult) -> str:
    """What is wrong with one http(s) base URL that no request could reach, or "": shown without
    the URL, only the offending character's code point or the part's length."""
    for char in item:
        if char.isspace() or unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            return f"holds whitespace or a control character (U+{ord(char):04X})"
    host = parts.hostname or ""
    if not host:
        return "has no host"
    try:
        port = parts.port
    except ValueError:
        return "has a port that is not a number from 1 to 65535"
    if port == 0:
        return "has port 0, not a port from 1 to 65535"
    if parts.netloc.startswith("["):  # an IPv6 literal, which urllib has checked
        return ""
    odd = next((char for char in host if not char.isascii()), None)
    if odd is not None:
        return (f"has a non-ASCII character in its host (U+{ord(odd):04X}); write an international "
                f"name in its ASCII (xn--) form")
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    if len(host) > 253:
        return f"has a host of {len(host)} characters, over the 253 a name may have"
    for label in labels:
        if not label:
            return "has an empty label in its host (two dots in a row, or a leading dot)"
        if len(label) > 63:
            return f"has a host label of {len(label)} characters, over the 63 a label may have"
        if not _LABEL.fullmatch(label):
            return "has a character in its host other than letters, digits, '-', '_' and '.'"
    return ""


class Endpoints:
    """The endpoints of one backbone, shared by the threads that send its requests."""

    def __init__(self, roots: list[str], path: str, cooldown: float, clock=time.monotonic):
        self.all = [Endpoint(position, root.rstrip("/") + path, scrub_text(root))
                    for position, root in enumerate(roots)]
        self._cooldown = cooldown
        self._clock = clock
        self._lock = threading.Lock()

    def take(self, excluded: set[Endpoint]) -> Endpoint | None:
        """The endpoint for the next attempt, among those not ``excluded``, counted as outstanding
        until ``served``, ``failed`` or ``released``; None when every one is excluded."""
        with self._lock:
            now = self._clock()
            candidates = [endpoint for endpoint in self.all if endpoint not in excluded]
            if not candidates:
                return None
            chosen = min(candidates, key=lambda e: (e.cooling_until > now, e.outstanding, e.position))
            chosen.outstanding += 1
            return chosen

    def served(self, endpoint: Endpoint, failed_before: set[Endpoint]) -> None:
        """``endpoint`` answered the request; ``failed_before`` are those that failed it first."""
        with self._lock:
            endpoint.outstanding -= 1
            endpoint.served += 1
            endpoint.failures_in_a_row = 0
            for other in failed_before - {endpoint}:
                other.failed_over += 1

    def failed(self, endpoint: Endpoint) -> bool:
        """An attempt on ``endpoint`` failed in a way worth another try; True when this starts its
        first cool-down (said in one warning line, once)."""
        with self._lock:
            endpoint.outstanding -= 1
            endpoint.failed += 1
            endpoint.failures_in_a_row += 1
            if endpoint.failures_in_a_row < FAILURES_BEFORE_COOLDOWN:
                return False
            endpoint.cooling_until = self._clock() + self._cooldown
            first, endpoint.cooled = not endpoint.cooled, True
            return first

    def released(self, endpoint: Endpoint) -> None:
        """An attempt ended otherwise (an answer not worth another try: the run stops)."""
        with self._lock:
            endpoint.outstanding -= 1

    def usage(self) -> list[dict]:
        """What results.json records: each endpoint, shown, with its counts."""
        with self._lock:
            return [{"url": e.shown, "served": e.served, "failed": e.failed, "failed_over": e.failed_over}
                    for e in self.all]
