"""Any OpenAI-compatible chat-completions endpoint: vLLM, llama.cpp server, Ollama, hosted APIs.

Standard library only (urllib and a thread pool), so the backbone adds no dependency and works
against any server that speaks ``POST {base_url}/chat/completions``. Requests for a batch run
concurrently; rate limits (429), server errors (5xx), refused connections and timeouts are
retried with exponential backoff, because hosted and local servers both shed load that way.
Other 4xx answers and malformed bodies are not retried: asking again would get the same answer.

The API key stays in a private attribute: ``self.options`` is recorded in results.json, so a key
given as an option is masked there (as are credentials in ``base_url``), and every error message
is scrubbed of it.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import os
import random
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from ..components import Backbone
from ..errors import ConfigurationError, CtrlkitError
from ..options import Option
from ..secrets import MASK, scrub_text

DEFAULT_BASE_URL = "https://api.openai.com/v1"
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
        Option("timeout", float, 60.0, "seconds to wait for each response", minimum=0.1),
        Option("max_retries", int, 5, "retries after a 429, 5xx, connection error or timeout", minimum=0),
        Option("backoff", float, 1.0, "base seconds of the exponential backoff (Retry-After wins)", minimum=0.0),
        Option("instruction", str, "Summarize the following document.", "user message before a text input"),
    )

    def __init__(self, **options):
        super().__init__(**options)
        self._api_key = self.options["api_key"] or os.environ.get("OPENAI_API_KEY", "")
        if self.options["api_key"]:
            self.options["api_key"] = MASK
        base_url = self.options["base_url"] or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self._url = base_url.rstrip("/") + "/chat/completions"
        self.options["base_url"] = scrub_text(self.options["base_url"])
        self._jitter = random.Random()  # not the global generator, which a run seeds for reproducibility

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
                if attempt + 1 == attempts:
                    raise self._error(index, f"failed after {attempts} attempts: {failure}") from None
                time.sleep(failure.retry_after if failure.retry_after is not None else self._delay(attempt))

    def _post(self, index: int, payload: bytes) -> bytes:
        """The response body of one attempt; raises _Transient for what is worth another try."""
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "ctrlkit"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self._url, data=payload, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.options["timeout"]) as response:
                return response.read()
        except urllib.error.HTTPError as error:
            with error:
                status = f"HTTP {error.code} {error.reason}"
                if error.code == 429 or error.code >= 500:
                    raise _Transient(status, _retry_after(error.headers.get("Retry-After"))) from None
                raise self._error(index, f"failed: {status}: {_server_message(error)}") from None
        except (OSError, http.client.HTTPException) as error:
            reason = getattr(error, "reason", error)  # URLError wraps the socket's error
            if isinstance(reason, TimeoutError):
                raise _Transient(f"no response within {self.options['timeout']:g} s") from None
            raise _Transient(f"connection error: {str(reason) or type(reason).__name__}") from None

    def _content(self, index: int, body: bytes) -> str:
        """``choices[0].message.content``. Not retried: a server that answers 200 with something
        else (an HTML page from a wrong base_url, a null content) would answer it again."""
        try:
            content = json.loads(body)["choices"][0]["message"]["content"]
        except (ValueError, LookupError, TypeError):
            content = None
        if not isinstance(content, str):
            shown = _one_line(body.decode("utf-8", "replace")) or "an empty body"
            raise self._error(index, f"got a malformed response (no choices[0].message.content string): {shown}")
        return content

    def _delay(self, attempt: int) -> float:
        """Exponential backoff with jitter, so concurrent requests do not retry in lockstep."""
        return self.options["backoff"] * 2 ** attempt * self._jitter.uniform(0.5, 1.5)

    def _error(self, index: int, what: str) -> CtrlkitError:
        """One line naming the input; the key is scrubbed even where a server echoes it."""
        message = f"backbone '{self.name}': request for input {index} {what}"
        return CtrlkitError(scrub_text(message.replace(self._api_key, MASK) if self._api_key else message))


class _Transient(Exception):
    """A failed attempt worth repeating; ``retry_after`` is the wait the server asked for, if any."""

    def __init__(self, reason: str, retry_after: float | None = None):
        super().__init__(reason)
        self.retry_after = retry_after


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header, which holds either seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _server_message(error: urllib.error.HTTPError) -> str:
    """The error text of a refusal: ``{"error": {"message": ...}}`` (OpenAI, llama.cpp),
    ``{"error": "..."}`` (Ollama), ``{"message": ...}`` (older vLLM), else the raw body."""
    try:
        text = error.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return "(no body)"
    try:
        data = json.loads(text)
    except ValueError:
        return _one_line(text) or "(empty body)"
    detail = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(detail, dict):
        detail = detail.get("message", detail)
    return _one_line(detail if isinstance(detail, str) else json.dumps(detail))


def _one_line(text: str) -> str:
    """Whitespace collapsed and cut to about 200 characters, to fit a one-line error."""
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 3] + "..."
