"""Any OpenAI-compatible chat-completions endpoint: vLLM, llama.cpp server, Ollama, hosted APIs.

Standard library only (urllib and a thread pool), so the backbone adds no dependency and works
against any server that speaks ``POST {base_url}/chat/completions``. Requests for a batch run
concurrently; rate limits (429), server errors (5xx), dropped or refused connections and timeouts
are retried with exponential backoff, because hosted and local servers both shed load that way,
and the first retry says so in a warning line. A server that never answered (the connection is
refused, or its name does not resolve: offline) fails at once instead, in one line.
Other 4xx answers and malformed bodies are not retried: asking again would get the same answer.

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
from concurrent.futures import ThreadPoolExecutor

from .. import bounded_http
from ..components import Backbone
from ..errors import ConfigurationError, CtrlkitError
from ..options import Option
from ..redaction import redact
from ..secrets import MASK, scrub_text

DEFAULT_BASE_URL = "https://api.openai.com/v1"
logger = logging.getLogger("ctrlkit")
_DETAIL_CHARS = 200


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
        Option("base_url", str, "", f"endpoint root; empty: $OPENAI_BASE_URL or {DEFAULT_BASE_URL}"),
        Option("api_key", str, "", "bearer key; empty: $OPENAI_API_KEY (may stay empty for local servers)"),
        Option("temperature", float, 0.0, "sampling temperature", minimum=0.0),
        Option("max_tokens", int, 256, "most tokens per summary", minimum=1),
        Option("concurrency", int, 4, "requests in flight at once", minimum=1),
        Option("timeout", float, 60.0, "seconds one attempt may take in all, however slowly the server sends",
               minimum=0.1),
        Option("max_retries", int, 5, "retries after a 429, 5xx, connection error or timeout", minimum=0),
        Option("backoff", float, 1.0, "base seconds of the exponential backoff (Retry-After wins)", minimum=0.0),
        Option("max_retry_wait", float, 60.0, "most seconds to wait before a retry, whatever Retry-After or the "
               "backoff asks", minimum=0.0),
        Option("max_response_bytes", int, 4 * 1024 * 1024, "largest answer accepted, in bytes; a larger one "
               "is an error", minimum=1024),
        Option("instruction", str, "Summarize the following document.", "user message before a text input"),
    )

    transport_options = Backbone.transport_options | {"max_retry_wait", "max_response_bytes"}

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
        self._url = base_url.rstrip("/") + "/chat/completions"
        scheme = urllib.parse.urlsplit(self._url).scheme
        if scheme.lower() not in ("http", "https"):  # urllib would also open file:, ftp: and data: URLs
            raise ConfigurationError(f"backbone '{self.name}': base_url (--set {self.name}.base_url or "
                                     f"$OPENAI_BASE_URL) must start with http:// or https://, got "
                                     f"{scheme + ':' if scheme else 'no scheme'}")
        if "@" in urllib.parse.urlsplit(self._url).netloc:  # urllib takes "user:pw@host" for the host name
            raise ConfigurationError(f"backbone '{self.name}': base_url (--set {self.name}.base_url or "
                                     "$OPENAI_BASE_URL) holds credentials (user:password@host), which would be "
                                     "sent to the name resolver as part of the host; give the key with "
                                     f"--set {self.name}.api_key or $OPENAI_API_KEY")
        self.options["base_url"] = scrub_text(base_url)  # the endpoint used, from the option or the environment
        self._jitter = random.Random()  # not the global generator, which a run seeds for reproducibility
        self._opener = bounded_http.opener()
        self._answered = False  # whether the server has answered once: after that, a refusal is a restart
        self._retrying_said = False
        self._lock = threading.Lock()

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
        """One input's summary, retrying transient failures until ``max_retries`` is spent."""
        payload = json.dumps({
            "model": self.options["model"], "messages": self._messages(model_input),
            "temperature": self.options["temperature"], "max_tokens": self.options["max_tokens"],
        }).encode()
        attempts = self.options["max_retries"] + 1
        for attempt in range(attempts):
            try:
                return self._content(index, self._post(index, payload))
            except _Transient as failure:
                if failure.unreachable and not self._answered:
                    raise self._unreachable(index, failure) from None
                if attempt + 1 == attempts:
                    raise self._error(index, f"failed after {attempts} attempts: {failure}") from None
                wait = failure.retry_after if failure.retry_after is not None else self._delay(attempt)
                self._say_retrying(failure, attempts)
                time.sleep(min(wait, self.options["max_retry_wait"]))

    def _unreachable(self, index: int, failure: "_Transient") -> CtrlkitError:
        """A server never reached (refused, or a name that does not resolve) fails at once: retrying
        for half a minute would not start it or bring the network back."""
        key = "" if self._api_key else f"; no API key is set either ($OPENAI_API_KEY or --set {self.name}.api_key)"
        return self._error(index, f"cannot reach {self.options['base_url']} ({failure}); check that this machine "
                                  f"is online, the server runs and the address is right (--set {self.name}.base_url "
                                  f"or $OPENAI_BASE_URL){key}")

    def _say_retrying(self, failure: "_Transient", attempts: int) -> None:
        """One warning line the first time requests are retried, so a wait is never silent."""
        with self._lock:
            if self._retrying_said:
                return
            self._retrying_said = True
        logger.warning("ctrlkit: backbone '%s': %s; retrying with backoff (up to %d attempts a request)",
                       self.name, failure, attempts)

    def _post(self, index: int, payload: bytes) -> bytes:
        """The response body of one attempt; raises _Transient for what is worth another try."""
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "ctrlkit"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        try:
            answer = bounded_http.post(self._opener, self._url, payload, headers, timeout=self.options["timeout"],
                                       max_bytes=self.options["max_response_bytes"])
        except (OSError, http.client.HTTPException) as error:
            reason = getattr(error, "reason", error)  # URLError wraps the socket's error
            if isinstance(reason, TimeoutError):  # a read timed out, or the whole attempt did
                raise _Transient(f"no response within {self.options['timeout']:g} s") from None
            unreachable = isinstance(reason, (ConnectionRefusedError, socket.gaierror))
            raise _Transient(f"connection error: {self._shown(str(reason) or type(reason).__name__)}",
                             unreachable=unreachable) from None
        self._answered = True
        status = f"HTTP {answer.status} {self._shown(answer.reason, 80)}".rstrip()
        if answer.status == 429 or answer.status >= 500:
            raise _Transient(status, _retry_after(answer.headers.get("Retry-After")))
        if 300 <= answer.status < 400:
            raise self._error(index, f"failed: {status}: redirects are not followed (Location: "
                                     f"{self._shown(_origin(self._url, answer.headers.get('Location')), 80)}); "
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
        cut can leave most of a key that a search for the whole key no longer finds."""
        text = " ".join(redact(text, self._api_key).split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def _error(self, index: int, what: str) -> CtrlkitError:
        """One line naming the input; ``what`` holds server text only as ``_shown``."""
        message = redact(f"backbone '{self.name}': request for input {index} {what}", self._api_key)
        return CtrlkitError(scrub_text(message))


class _Transient(Exception):
    """A failed attempt worth repeating (once the server has answered); ``retry_after`` is the
    wait the server asked for, if any."""

    def __init__(self, reason: str, retry_after: float | None = None, unreachable: bool = False):
        super().__init__(reason)
        self.retry_after = retry_after
        self.unreachable = unreachable
        """Refused, or the host name does not resolve: nothing answered at that address."""


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
