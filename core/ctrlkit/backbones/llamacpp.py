"""Backbone ``llamacpp``: a GGUF model run in process by llama.cpp (the ``xllamacpp`` package).

``--backbone llamacpp:PATH.gguf`` takes any GGUF file: a chat model's messages go through the
model's own chat template, as llama.cpp renders it; a base model (no template in the file) gets
the plain prompts ``hf-causal`` gives one. Prompts over the input limit are fitted by the rules
``hf-causal`` follows (:mod:`.prompt_fitting`): the end of the document goes first, then the
earliest few-shot demonstrations; the instruction and the cue to answer stay. The fitted prompt is
sent to llama.cpp as the token ids that were counted, so what was counted is what the model reads.

Greedy by default (temperature 0), and deterministic: prompts are not served from another
request's cached state (``cache_prompt`` is off), and a sampled output is seeded per request, so
the same input gives the same summary twice. Not across settings, though: the number of CPU
threads, and generating sequences side by side (``parallel`` above 1, which also lets a summary
depend on what shares its batch), change llama.cpp's arithmetic in the last bits, and so at times
a greedy choice; both are in the identity, the threads as resolved. A batch's inputs are generated
concurrently, at most ``parallel`` at once, each with its own ``context`` (the file's training
context by default, at most :data:`DEFAULT_CONTEXT_CAP`).

llama.cpp's server library listens on a loopback port while loaded: ctrlkit uses it to tokenize
and render templates, and guards it with a random key that never leaves the process. Its log is
off unless ``ctrlkit --verbose`` or ``llamacpp.verbose`` asks for it.

The identity (the cache key) holds the GGUF's SHA-256 instead of its path (the same file under
another path, or on a Ray node, reuses the cache), the runtime's version and every option.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from importlib.util import find_spec

from ..components import Backbone
from ..errors import ConfigurationError, CtrlkitError
from ..options import Option
from ..quiet import verbose
from ..secrets import scrub_text
from .gguf_file import check_gguf_path, gguf_sha256, model_facts
from .prompt_fitting import ChatPromptFitting

DEFAULT_CONTEXT_CAP = 8192
"""The default context when the file's training context is longer: the key-value cache grows with
it, per parallel sequence, and news documents fit well within it."""
MIN_PROMPT_TOKENS = 32
"""The fewest prompt tokens a context must leave beside ``max_new_tokens``: fewer hold no document."""
RUNTIME = "xllamacpp"
REQUEST_TIMEOUT_S = 120.0


def require_runtime(what: str) -> None:
    """One line, before any work, when llama.cpp's Python package is not installed."""
    if find_spec(RUNTIME) is None:
        raise ConfigurationError(f"{what} needs {RUNTIME}: pip install 'ctrlkit[llamacpp]'")


def stop_strings(text: str) -> list[str]:
    """The ``stop`` option's strings: separated by ``|``; ``\\n`` and ``\\t`` stand for a newline and
    a tab, as a command line cannot easily give them."""
    if not text:
        return []
    return [part.replace("\\n", "\n").replace("\\t", "\t") for part in text.split("|") if part]


class LlamaCppBackbone(ChatPromptFitting, Backbone):
    """A GGUF model run in process by llama.cpp (llamacpp:PATH.gguf): chat template from the file,
    greedy and deterministic by default, a batch's inputs generated concurrently."""

    capabilities = frozenset({"text", "messages"})
    spec_option = "model"
    options = (
        Option("model", str, "", "path of a .gguf file (what follows the colon in --backbone llamacpp:PATH)"),
        Option("context", int, 0, f"tokens of context per sequence, prompt and summary together (0: the file's "
                                  f"training context, at most {DEFAULT_CONTEXT_CAP})", minimum=0),
        Option("max_input_tokens", int, 0, "fit prompts to this many tokens (0: the context less max_new_tokens)",
               minimum=0),
        Option("max_new_tokens", int, 128, "most tokens to generate", minimum=1),
        Option("temperature", float, 0.0, "sampling temperature (0: greedy)", minimum=0.0),
        Option("top_k", int, 40, "sample from the k most likely tokens (0: all); with temperature > 0", minimum=0),
        Option("top_p", float, 0.95, "nucleus sampling threshold; with temperature > 0", minimum=0.0, maximum=1.0),
        Option("repeat_penalty", float, 1.0, "penalty for repeating recent tokens (1: none)", minimum=0.0),
        Option("seed", int, 0, "sampling seed of each request (with temperature > 0)", minimum=0,
               maximum=2 ** 32 - 2),
        Option("stop", str, "", "strings that end a summary, separated by | (\\n is a newline)"),
        Option("threads", int, 0, "CPU threads (0: $OMP_NUM_THREADS where set, as in a Ray worker; else the "
                                  "cores this process may use)", minimum=0),
        Option("parallel", int, 1, "sequences generated at once; a batch's inputs run concurrently", minimum=1,
               maximum=64),
        Option("gpu_layers", int, -1, "layers offloaded to a GPU in a GPU build of llama.cpp (-1: all; "
                                      "a CPU build ignores it)", minimum=-1),
        Option("verbose", bool, False, "let llama.cpp's own log reach the terminal"),
    )
    transport_options = Backbone.transport_options | {"verbose"}

    def __init__(self, **options):
        super().__init__(**options)
        where = f"backbone '{self.name or 'llamacpp'}'"
        self._path = check_gguf_path(self.options["model"], where)
        self._facts = model_facts(self._path)
        context = self.context_size()
        limit = self.input_limit()
        if self.options["max_input_tokens"] and limit + self.options["max_new_tokens"] > context:
            raise ConfigurationError(f"{where}: max_input_tokens {limit} and max_new_tokens "
                                     f"{self.options['max_new_tokens']} do not fit a context of {context} tokens; "
                                     "raise llamacpp.context or lower one of them")
        if limit < MIN_PROMPT_TOKENS:
            raise ConfigurationError(f"{where}: a context of {context} tokens leaves {max(limit, 0)} for the prompt "
                                     f"beside max_new_tokens {self.options['max_new_tokens']}, too few for any "
                                     f"document (at least {MIN_PROMPT_TOKENS}); raise llamacpp.context")
        self._server = None
        self._key = secrets.token_urlsafe(32)
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
        self._load_lock = threading.Lock()
        self._special_prefix: list[int] | None = None

    def context_size(self) -> int:
        """Tokens of context per sequence: the option, else the file's training context (capped)."""
        if self.options["context"]:
            return self.options["context"]
        return min(self._facts["context_length"] or DEFAULT_CONTEXT_CAP, DEFAULT_CONTEXT_CAP)

    def input_limit(self) -> int:
        """The most prompt tokens: the option, else what the context leaves beside the summary."""
        return self.options["max_input_tokens"] or self.context_size() - self.options["max_new_tokens"]

    @property
    def has_chat_template(self) -> bool:
        return self._facts["chat_template"] is not None

    def render_chat(self, messages) -> str:
        return self._call("/apply-template", {"messages": [dict(message) for message in messages]})["prompt"]

    def threads(self) -> int:
        """The CPU threads llama.cpp runs on: the option, else :func:`_default_threads`."""
        return self.options["threads"] or _default_threads()

    def identity(self) -> dict:
        """The options (the threads as resolved: their number changes the last bits of a summary, as
        ``parallel`` does), the GGUF's digest in place of its path, the runtime's version."""
        identity = super().identity()
        identity["options"].pop("model")  # the file's digest says which weights, wherever the file lies
        identity["options"]["threads"] = self.threads()
        return {**identity, "gguf_sha256": self.digest(), "runtime": f"{RUNTIME} {_runtime_version()}",
                "cut": "document end, then earliest demonstrations"}

    def digest(self) -> str:
        """``sha256:...`` of the GGUF file (taken once per file: :func:`.gguf_file.gguf_sha256`)."""
        if "model_digest" not in self.file_digests:
            self.file_digests = {**self.file_digests, "model_digest": gguf_sha256(self._path)}
        return self.file_digests["model_digest"]

    def recorded_options(self):
        """The options, with the file's digest, the runtime's version and the threads it ran on."""
        self.digest()
        return {**super().recorded_options(), "runtime_version": _runtime_version(), "threads_used": self.threads()}

    def load(self) -> None:
        self._load()

    @property
    def listening_address(self) -> str:
        """The loopback address llama.cpp's server library listens on while the model is loaded
        (it answers only requests bearing this process's key)."""
        return self._load().listening_address

    def _load(self):
        with self._load_lock:
            if self._server is not None:
                return self._server
            require_runtime(f"backbone '{self.name}'")
            import xllamacpp

            options = self.options
            params = xllamacpp.CommonParams()
            params.model.path = str(self._path)
            params.n_parallel = options["parallel"]
            params.n_ctx = self.context_size() * options["parallel"]  # each sequence gets the whole context
            threads = self.threads()
            params.cpuparams.n_threads = threads
            params.cpuparams_batch.n_threads = threads
            params.n_gpu_layers = options["gpu_layers"]
            params.verbosity = 3 if options["verbose"] or verbose() else -1
            params.api_keys = [self._key]
            params.endpoint_metrics = False
            params.endpoint_slots = False
            params.ui = False
            try:
                self._server = xllamacpp.Server(params)
            except Exception as exc:  # the runtime raises plain RuntimeErrors
                raise ConfigurationError(scrub_text(
                    f"backbone '{self.name}' cannot load {self._path}: "
                    f"{' '.join(str(exc).split()) or type(exc).__name__} (a damaged or cut file, an architecture "
                    f"this llama.cpp does not know, or too little memory; ctrlkit --verbose shows llama.cpp's own "
                    f"reason)")) from None
            return self._server

    def _call(self, path: str, body: dict) -> dict:
        """One request to the loaded runtime's own endpoint (tokenizing, rendering a template)."""
        server = self._load()
        request = urllib.request.Request(server.listening_address + path, data=json.dumps(body).encode("utf-8"),
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": f"Bearer {self._key}"})
        try:
            with self._opener.open(request, timeout=REQUEST_TIMEOUT_S) as response:
                return json.loads(response.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise CtrlkitError(f"backbone '{self.name}': llama.cpp did not answer {path} "
                               f"({scrub_text(str(getattr(exc, 'reason', exc)))})") from None

    def tokenize(self, text: str, special: bool) -> list[int]:
        return self._call("/tokenize", {"content": text, "add_special": special, "parse_special": True})["tokens"]

    def token_ids(self, texts: list[str], special: list[bool], limit: int | None = None) -> list[list[int]]:
        """The token ids of each text (special tokens in the text parsed as such, and the model's
        BOS added where ``special`` says and the model adds one); cut to their last ``limit`` where
        given, the BOS kept in front."""
        if self._special_prefix is None:
            self._special_prefix = self.tokenize("", True)
        rows = []
        for text, flag in zip(texts, special):
            prefix = self._special_prefix if flag else []
            body = self.tokenize(text, False)
            if limit is not None and len(prefix) + len(body) > limit:
                body = body[len(body) - max(limit - len(prefix), 0):]
            rows.append(prefix + body)
        return rows

    def request(self, ids: list[int]) -> dict:
        """The completion request for one fitted prompt."""
        o = self.options
        body = {"prompt": ids, "max_tokens": o["max_new_tokens"], "temperature": o["temperature"],
                "top_k": o["top_k"], "top_p": o["top_p"], "repeat_penalty": o["repeat_penalty"],
                "seed": o["seed"], "cache_prompt": False, "n_probs": 0}
        stops = stop_strings(o["stop"])
        if stops:
            body["stop"] = stops
        return body

    def complete(self, ids: list[int]) -> str:
        answer = self._load().handle_completions(self.request(ids))
        if not isinstance(answer, dict) or "error" in answer:
            error = answer.get("error") if isinstance(answer, dict) else answer
            message = error.get("message") if isinstance(error, dict) else error
            raise CtrlkitError(scrub_text(f"backbone '{self.name}': llama.cpp refused a prompt of {len(ids)} "
                                          f"tokens: {' '.join(str(message).split())[:300]}"))
        try:
            return answer["choices"][0]["text"].strip()
        except (KeyError, IndexError, TypeError):
            raise CtrlkitError(f"backbone '{self.name}': llama.cpp answered without a completion") from None

    def generate(self, inputs):
        if not inputs:
            return []
        fitted = self.fitted_ids(list(inputs), self.input_limit())
        workers = min(self.options["parallel"], len(fitted))
        if workers == 1:
            return [self.complete(ids) for ids in fitted]
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(self.complete, fitted))


def _default_threads() -> int:
    """$OMP_NUM_THREADS where it is a positive number (Ray sets it to a worker's CPUs), else the
    cores this process may run on."""
    given = os.environ.get("OMP_NUM_THREADS", "").strip()
    if given.isdigit() and int(given) > 0:
        return int(given)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _runtime_version() -> str:
    try:
        return metadata.version(RUNTIME)
    except metadata.PackageNotFoundError:
        return "not installed"
