"""Any OpenAI-compatible chat-completions endpoint: vLLM, llama.cpp server, Ollama, hosted APIs.

Standard library only (urllib and a thread pool), so the backbone adds no dependency and works
against any server that speaks ``POST {base_url}/chat/completions``. Requests for a batch run
concurrently; rate limits (429), server errors (5xx), dropped or refused connections and timeouts
are retried with exponential backoff, because hosted and local servers both shed load that way,
and the first retry says so in a warning line. A server that never answered (the connection is
refused, or its name does not resolve: offline) fails at once instead, in one line.
Other 4xx answers and malformed bodies are not retried: asking again would get the same answer.

``base_url`` may list several endpoints serving the same model (N vLLM servers), comma-separated
or, from Python, as a list: ``ctrlkit.backbones.endpoints`` picks the one with the fewest requests
outstanding for each attempt. An attempt that fails in a way worth retrying goes at once to the
endpoints this request has not yet tried in this round; the backoff waits only once every endpoint
has failed it, and a request fails only when every endpoint has failed its ``max_retries + 1``
attempts (or refused it without ever having answered), in one line naming each endpoint. The
cache key holds the endpoints as a set: reordering them (which only routes) reuses the cache,
another server does not, since it may serve other weights under the same model name; with one
endpoint the key is what it was before several were possible.

The server is not trusted (``ctrlkit.bounded_http``): a redirect is refused rather than followed
(it would carry the key to another origin), each attempt ends within ``timeout`` however slowly
the server sends, an answer larger than ``max_response_bytes`` is refused after reading at most
that much, and a wait the server asks for is cut to ``max_retry_wait``.

The API key stays in a private attribute: ``self.options`` is recorded in results.json, so a key
given as an option is masked there (as are credentials in ``base_url``). Every error message,
and every answer (which becomes a summary or a judge's verdict, and so reaches samples.jsonl and
the cache), is scrubbed of it (``ctrlkit.redaction``), before anything is cut for length.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import math
import os
import random
import socket
import threading
import time
import urllib.parse
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from .. import bounded_http
from ..components import Backbone
from .endpoints import FAILURES_BEFORE_COOLDOWN, Endpoint, Endpoints, base_urls
from ..errors import ConfigurationError, CtrlkitError
from ..options import Option
from ..redaction import redact
from ..secrets import MASK, scrub_text

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_SECONDS = 86_400.0
"""The longest a time option may ask (a day): more is a mistake, and ``1e300`` seconds overflows
the clock arithmetic of a socket timeout or a sleep."""
logger = logging.getLogger("ctrlkit")
_DETAIL_CHARS = 200
_MASKED_CHARS = 64 * 1024
"""The most of a server's error text that is masked for an error line (which shows 200 characters)."""


class OpenAIBackbone(Backbone):
    """Any OpenAI-compatible chat-completions endpoint, by model name (openai:MODEL).

    Chat messages pass through; a text input becomes one user message: the instruction, the
    guidance if any, then the document.
    """

    name = "openai"
    capabilities = frozenset({"text", "guidance", "messages"})
    spec_option = "model"
    options = (
        Option("model", str, "", "model name the server serves (required; or --backbone openai:MODEL)"),
        Option("base_url", str, "", f"endpoint root, or several serving the same model, comma-separated (a list "
               f"from Python); empty: $OPENAI_BASE_URL or {DEFAULT_BASE_URL}", separator=","),
        Option("api_key", str, "", "bearer key; empty: $OPENAI_API_KEY (may stay empty for local servers)"),
        Option("temperature", float, 0.0, "sampling temperature", minimum=0.0),
        Option("max_tokens", int, 256, "most tokens per summary", minimum=1),
        Option("concurrency", int, 4, "requests in flight at once, over all endpoints", minimum=1),
        Option("timeout", float, 60.0, "seconds one attempt may take in all, however slowly the server sends",
               minimum=0.1, maximum=MAX_SECONDS),
        Option("max_retries", int, 5, "retries after a 429, 5xx, connection error or timeout", minimum=0),
        Option("backoff", float, 1.0, "base seconds of the exponential backoff (Retry-After wins)", minimum=0.0,
               maximum=MAX_SECONDS),
        Option("max_retry_wait", float, 60.0, "most seconds to wait before a retry, whatever Retry-After or the "
               "backoff asks", minimum=0.0, maximum=MAX_SECONDS),
        Option("max_response_bytes", int, 4 * 1024 * 1024, "largest answer accepted, in bytes; a larger one "
               "is an error", minimum=1024),
        Option("cooldown", float, 30.0, f"seconds an endpoint that failed {FAILURES_BEFORE_COOLDOWN} attempts in a "
               "row is asked only after the other endpoints", minimum=0.0, maximum=MAX_SECONDS),
        Option("instruction", str, "Summarize the following document.", "user message before a text input"),
    )

    transport_options = Backbone.transport_options | {"max_retry_wait", "max_response_bytes", "cooldown"}

    def __init__(self, **options):
        super().__init__(**options)
        self._api_key = (self.options["api_key"] or os.environ.get("OPENAI_API_KEY", "")).strip()
        if self.options["api_key"]:
            self.options["api_key"] = MASK
        if not all("!" <= char <= "~" for char in self._api_key):  # http.client's refusal would quote the key
            raise ConfigurationError(f"backbone '{self.name}': the API key (--set {self.name}.api_key or "
                                     "$OPENAI_API_KEY) holds whitespace, a control or a non-ASCII character, "
                                     "which a header cannot carry; it was not sent")
        base_url = self.options["base_url"] or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self._endpoints = Endpoints(base_urls(base_url, self.name), "/chat/completions", self.options["cooldown"])
        self.options["base_url"] = scrub_text(base_url)  # the endpoints used, from the option or the environment
        self._jitter = random.Random()  # not the global generator, which a run seeds for reproducibility
        self._opener = bounded_http.opener()
        self._retrying_said = False
        self._lock = threading.Lock()

    def recorded_options(self):
        """The options, and what each endpoint did: requests served, attempts failed, requests
        it failed that another endpoint then served (``failed_over``)."""
        return {**super().recorded_options(), "endpoints": self._endpoints.usage()}

    def identity(self) -> dict:
        """The base key with the endpoints sorted: their order routes requests, nothing more."""
        identity = super().identity()
        endpoints = self.options["base_url"].split(",")
        if len(endpoints) > 1:
            identity["options"]["base_url"] = ",".join(sorted(endpoint.strip() for endpoint in endpoints))
        return identity

    def generate(self, inputs):
        if not self.options["model"].strip():
            raise ConfigurationError(f"backbone '{self.name}' needs a model: --backbone {self.name}:MODEL "
                                     f"or --set {self.name}.model=MODEL")
        if not inputs:
            return []
        with ThreadPoolExecutor(min(self.options["concurrency"], len(inputs))) as pool:
            return list(pool.map(self._complete, range(len(inputs)), inputs))

    def _messages(self, model_input) -> list[dict[str, str]]:
        """The chat messages sent for one input."""
        if model_input.messages:
            return [dict(message) for message in model_input.messages]
        parts = [self.options["instruction"]]
        if model_input.guidance:
            parts.append(f"Guidance: {model_input.guidance}")
        parts.append(model_input.source)
        return [{"role": "user", "content": "\n\n".join(parts)}]

    def _complete(self, index: int, model_input) -> str:
        """One input's summary. Each round asks every endpoint not yet given up on, one after
        another, until one answers; rounds are separated by the backoff, ``max_retries + 1`` of them."""
        payload = json.dumps({
            "model": self.options["model"], "messages": self._messages(model_input),
            "temperature": self.options["temperature"], "max_tokens": self.options["max_tokens"],
        }).encode()
        rounds = self.options["max_retries"] + 1
        every = self._endpoints.all
        failures: dict[Endpoint, _Transient] = {}  # the last failure on each endpoint
        attempts: Counter[Endpoint] = Counter()
        unreached: set[Endpoint] = set()  # refused without ever having answered: not asked again
        for attempt in range(rounds):
            asked: set[Endpoint] = set()
            waits = []
            while (endpoint := self._endpoints.take(asked | unreached)) is not None:
                asked.add(endpoint)
                attempts[endpoint] += 1
                try:
                    content = self._content(index, self._post(index, endpoint, payload))
                except _Transient as failure:
                    self._failed(endpoint, failure)
                    failures[endpoint] = failure
                    if failure.unreachable and not endpoint.answered:
                        unreached.add(endpoint)
                    elif failure.retry_after is not None:
                        waits.append(failure.retry_after)
                    another_now = len(asked | unreached) < len(every)
                    another_later = attempt + 1 < rounds and len(unreached) < len(every)
                    if another_now or another_later:
                        self._say_retrying(endpoint, failure, rounds)
                    continue
                except BaseException:
                    self._endpoints.released(endpoint)
                    raise
                self._endpoints.served(endpoint, set(failures))
                return content
            if len(unreached) == len(every):
                raise self._unreachable(index, failures)
            if attempt + 1 == rounds:
                raise self._exhausted(index, failures, attempts, unreached)
            wait = min(waits) if waits else self._delay(attempt)
            time.sleep(min(wait, self.options["max_retry_wait"]))

    def _failed(self, endpoint: Endpoint, failure: "_Transient") -> None:
        if self._endpoints.failed(endpoint) and len(self._endpoints.all) > 1:
            logger.warning("ctrlkit: backbone '%s': endpoint %s failed %d attempts in a row (%s); the others are "
                           "asked first for %g s at a time while it keeps failing", self.name, endpoint.shown,
                           FAILURES_BEFORE_COOLDOWN, failure, self.options["cooldown"])

    def _unreachable(self, index: int, failures: dict[Endpoint, "_Transient"]) -> CtrlkitError:
        """Servers never reached (refused, or a name that does not resolve) fail at once: retrying
        for half a minute would not start them or bring the network back."""
        key = "" if self._api_key else f"; no API key is set either ($OPENAI_API_KEY or --set {self.name}.api_key)"
        where = f"(--set {self.name}.base_url or $OPENAI_BASE_URL){key}"
        if len(self._endpoints.all) == 1:
            (endpoint, failure), = failures.items()
            return self._error(index, f"cannot reach {endpoint.shown} ({failure}); check that this machine is "
                                      f"online, the server runs and the address is right {where}")
        each = "; ".join(f"{endpoint.shown} ({failure})" for endpoint, failure in _in_order(failures))
        return self._error(index, f"cannot reach any of its {len(failures)} endpoints: {each}; check that this "
                                  f"machine is online, the servers run and the addresses are right {where}")

    def _exhausted(self, index: int, failures: dict[Endpoint, "_Transient"], attempts: Counter,
                   unreached: set[Endpoint]) -> CtrlkitError:
        """Every endpoint failed the request as often as it may (or could not be reached). A URL is
        followed by a space: a masked secret query value (``?api_key=***``) runs to the next one."""
        if len(self._endpoints.all) == 1:
            (endpoint, failure), = failures.items()
            return self._error(index, f"failed after {attempts[endpoint]} attempts: {failure}")
        each = "; ".join(
            f"{endpoint.shown} never answered ({failure})" if endpoint in unreached else
            f"{endpoint.shown} after {attempts[endpoint]} attempt{'s' * (attempts[endpoint] > 1)} ({failure})"
            for endpoint, failure in _in_order(failures))
        return self._error(index, f"failed on each of its {len(failures)} endpoints: {each}")

    def _say_retrying(self, endpoint: Endpoint, failure: "_Transient", rounds: int) -> None:
        """One warning line the first time requests are retried, so a wait is never silent."""
        with self._lock:
            if self._retrying_said:
                return
            self._retrying_said = True
        count = len(self._endpoints.all)
        if count == 1:
            logger.warning("ctrlkit: backbone '%s': %s; retrying with backoff (up to %d attempts a request)",
                           self.name, failure, rounds)
        else:
            logger.warning("ctrlkit: backbone '%s': endpoint %s failed (%s); retrying on the other endpoints, then "
                           "with backoff (up to %d attempts a request on each of %d endpoints)", self.name,
                           endpoint.shown, failure, rounds, count)

    def _post(self, index: int, endpoint: Endpoint, payload: bytes) -> bytes:
        """The response body of one attempt; raises _Transient for what is worth another try."""
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "ctrlkit"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        try:
            answer = bounded_http.post(self._opener, endpoint.url, payload, headers, timeout=self.options["timeout"],
                                       max_bytes=self.options["max_response_bytes"])
        except (OSError, http.client.HTTPException) as error:
            reason = getattr(error, "reason", error)  # URLError wraps the socket's error
            if isinstance(reason, TimeoutError):  # a read timed out, or the whole attempt did
                raise _Transient(f"no response within {self.options['timeout']:g} s") from None
            unreachable = isinstance(reason, (ConnectionRefusedError, socket.gaierror))
            raise _Transient(f"connection error: {self._shown(str(reason) or type(reason).__name__)}",
                             unreachable=unreachable) from None
        endpoint.answered = True
        status = f"HTTP {answer.status} {self._shown(answer.reason, 80)}".rstrip()
        if answer.status == 429 or answer.status >= 500:
            raise _Transient(status, _retry_after(answer.headers.get("Retry-After")))
        if 300 <= answer.status < 400:
            raise self._error(index, f"failed: {status}: redirects are not followed (Location: "
                                     f"{self._shown(_origin(endpoint.url, answer.headers.get('Location')), 80)}); "
                                     f"set base_url to the endpoint itself")
        if answer.status >= 400:
            raise self._error(index, f"failed: {status}: {self._shown(_server_message(answer.body))}")
        if not answer.complete:
            cap = self.options["max_response_bytes"]
            size = f"{answer.length} bytes, more than" if answer.length is not None else "more bytes than"
            raise self._error(index, f"failed: the answer has {size} max_response_bytes={cap} allows "
                                     f"(raise it with --set {self.name}.max_response_bytes=N)")
        return answer.body

    def _content(self, index: int, body: bytes) -> str:
        """``choices[0].message.content``. Not retried: a server that answers 200 with something
        else (an HTML page from a wrong base_url, a null content) would answer it again."""
        try:
            content = json.loads(body)["choices"][0]["message"]["content"]
        except (ValueError, LookupError, TypeError, RecursionError):  # RecursionError: [[[[...]]]]
            content = None
        if not isinstance(content, str):
            shown = self._shown(body.decode("utf-8", "replace")) or "an empty body"
            raise self._error(index, f"got a malformed response (no choices[0].message.content string): {shown}")
        return redact(content, self._api_key)  # a summary or a verdict, bound for samples.jsonl and the cache

    def _delay(self, attempt: int) -> float:
        """Exponential backoff with jitter, so concurrent requests do not retry in lockstep."""
        return self.options["backoff"] * 2 ** min(attempt, 64) * self._jitter.uniform(0.5, 1.5)

    def _shown(self, text: str, limit: int = _DETAIL_CHARS) -> str:
        """Server-supplied text fit for a one-line error: scrubbed of the key, THEN cut, since a
        cut can leave most of a key that a search for the whole key no longer finds. Only its first
        ``_MASKED_CHARS`` are masked and shown, so a huge hostile body costs little time: any part
        of a key that crosses that cut and reaches the line is shorter than a masked run, or masked."""
        text = " ".join(redact(text[:_MASKED_CHARS], self._api_key).split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def _error(self, index: int, what: str) -> CtrlkitError:
        """One line naming the input; ``what`` holds server text only as ``_shown``."""
        message = redact(f"backbone '{self.name}': request for input {index} {what}", self._api_key)
        return CtrlkitError(scrub_text(message))


class _Transient(Exception):
    """A failed attempt worth repeating (once the endpoint has answered); ``retry_after`` is the
    wait the server asked for, if any."""

    def __init__(self, reason: str, retry_after: float | None = None, unreachable: bool = False):
        super().__init__(reason)
        self.retry_after = retry_after
        self.unreachable = unreachable
        """Refused, or the host name does not resolve: nothing answered at that address."""


def _in_order(failures: dict[Endpoint, _Transient]) -> list[tuple[Endpoint, _Transient]]:
    """The failures in the order the endpoints are listed, whichever was asked first."""
    return sorted(failures.items(), key=lambda item: item[0].position)


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header, which holds either seconds or an HTTP date (one past
    is 0). A negative, infinite or unreadable value is ignored, leaving the backoff to decide."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError, OverflowError, IndexError):
            return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _origin(url: str, location: str | None) -> str:
    """scheme://host:port of where a redirect points: never its path or query, which may hold anything."""
    if not location:
        return "none given"
    try:
        parts = urllib.parse.urlsplit(urllib.parse.urljoin(url, location))
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "unreadable"
    host = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}{port}" if parts.scheme and host else "unreadable"


def _server_message(body: bytes) -> str:
    """The error text of a refusal, whole: ``{"error": {"message": ...}}`` (OpenAI, llama.cpp),
    ``{"error": "..."}`` (Ollama), ``{"message": ...}`` (older vLLM), else the raw body."""
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text if text.strip() else "(empty body)"
    detail = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(detail, dict):
        detail = detail.get("message", detail)
    return detail if isinstance(detail, str) else json.dumps(detail)
