"""What the transformers backbones share: lazy loading, device and dtype, special tokens,
truncation to the model's limit (counted), and saving."""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from ..components import Backbone
from ..errors import ConfigurationError
from ..hub import hub_unreachable, is_local, not_found_offline
from ..options import Option
from ..quiet import quiet_new_imports, quietly
from ..secrets import scrub_text

DTYPES = ("auto", "float32", "float16", "bfloat16")


def require_hf_libraries(what: str) -> None:
    """One line, before any work, when torch or transformers is not installed (``ctrlkit[hf]``)."""
    missing = [name for name in ("torch", "transformers") if find_spec(name) is None]
    if missing:
        raise ConfigurationError(f"{what} needs {' and '.join(missing)}: pip install 'ctrlkit[hf]' "
                                 "(install torch first to choose its CPU or CUDA build)")


class HFBackbone(Backbone):
    spec_option = "model"
    options = (
        Option("model", str, "", "model path or hub id (what follows the colon in --backbone NAME:MODEL)"),
        Option("device", str, "", "torch device, e.g. cpu, cuda, cuda:1; empty: CUDA when present, else CPU"),
        Option("dtype", str, "auto", "weights dtype (auto: float32 on CPU, bfloat16 on CUDA when supported)",
               choices=DTYPES),
        Option("max_input_tokens", int, 0, "truncate inputs to this many tokens (0: the model's limit)", minimum=0),
        Option("max_new_tokens", int, 128, "most tokens to generate", minimum=1),
        Option("min_new_tokens", int, 0, "fewest tokens to generate", minimum=0),
        Option("num_beams", int, 4, "beam search width (1: greedy)", minimum=1),
        Option("no_repeat_ngram_size", int, 0, "forbid repeating n-grams of this size (0: allow)", minimum=0),
        Option("length_penalty", float, 1.0, "beam search length penalty"),
    )
    auto_model_class = ""  # the transformers Auto class, by name

    def __init__(self, **options):
        super().__init__(**options)
        require_hf_libraries("the transformers backbones (hf, hf-causal)")
        self._model = None
        self._tokenizer = None

    @property
    def model(self):
        self._load()
        return self._model

    @property
    def tokenizer(self):
        self._load()
        return self._tokenizer

    @property
    def device(self):
        return self.model.device

    @quietly  # also when a library user calls generate() outside a run
    def _load(self) -> None:
        if self._model is not None:
            return
        if not self.options["model"]:
            raise ConfigurationError(f"backbone '{self.name}' needs a model: --backbone {self.name}:PATH_OR_HUB_ID")
        import torch
        import transformers

        quiet_new_imports()
        device = self.options["device"] or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = self.options["dtype"]
        if dtype == "auto":
            cuda_bf16 = device.startswith("cuda") and torch.cuda.is_bf16_supported()
            dtype = "bfloat16" if cuda_bf16 else "float32"
        name = self.options["model"]
        if name.startswith((".", "/", "~")) and not Path(name).expanduser().is_dir():
            raise ConfigurationError(f"backbone '{self.name}': no model folder at {name}")
        # a Hub name with the Hub out of reach: the local Hub cache only, not a minute of retries
        offline = None if is_local(name) else hub_unreachable()
        try:
            self._tokenizer = transformers.AutoTokenizer.from_pretrained(name, local_files_only=bool(offline))
            model_class = getattr(transformers, self.auto_model_class)
            self._model = model_class.from_pretrained(name, dtype=getattr(torch, dtype),
                                                      local_files_only=bool(offline))
        except (OSError, ValueError) as exc:
            if offline:
                raise ConfigurationError(not_found_offline(f"backbone '{self.name}'", name, offline)) from None
            raise ConfigurationError(scrub_text(f"backbone '{self.name}' cannot load {name!r}: "
                                                f"{' '.join(str(exc).split())}")) \
                from None
        try:
            self._model.to(device)
        except (RuntimeError, AssertionError) as exc:  # no such device, or torch built without it
            raise ConfigurationError(f"backbone '{self.name}' cannot use device {device!r}: {exc}") from None
        self._model.eval()
        self._after_load()

    def _after_load(self) -> None:
        """Hook for subclasses: restore what ctrlkit saved beside the weights."""

    def add_special_tokens(self, tokens):
        new = [token for token in tokens if token not in self.tokenizer.get_vocab()]
        if new:
            self.tokenizer.add_tokens(new, special_tokens=True)
            self.model.resize_token_embeddings(len(self.tokenizer), mean_resizing=False)

    def position_limit(self) -> int | None:
        """The most tokens the model takes: the smaller of the tokenizer's and the model's limits
        (None when neither gives a sensible one)."""
        limits = [self.tokenizer.model_max_length, getattr(self.model.config, "max_position_embeddings", None)]
        sensible = [limit for limit in limits if isinstance(limit, int) and 0 < limit < 1_000_000]
        return min(sensible) if sensible else None

    def input_limit(self) -> int:
        """The most input tokens: the option, else the model's limit (1024 when it gives none)."""
        if self.options["max_input_tokens"]:
            return self.options["max_input_tokens"]
        return self.position_limit() or 1024

    def tokenize(self, texts: list[str], add_special_tokens: bool = True):
        """Pad and truncate a batch to the input limit, counting truncations (the caller reports
        them once for all its batches, not once a batch)."""
        limit = self.input_limit()
        self._count_truncations(texts, add_special_tokens, limit)
        batch = self.tokenizer(texts, truncation=True, max_length=limit, padding=True, return_tensors="pt",
                               add_special_tokens=add_special_tokens)
        return {key: value.to(self.device) for key, value in batch.items()}

    def token_ids(self, texts: list[str], add_special_tokens: bool, limit: int) -> list[list[int]]:
        """The token ids of each text, cut to ``limit`` as :meth:`tokenize` cuts (and counts), unpadded."""
        self._count_truncations(texts, add_special_tokens, limit)
        return self.tokenizer(texts, truncation=True, max_length=limit, add_special_tokens=add_special_tokens,
                              verbose=False)["input_ids"]

    def _count_truncations(self, texts: list[str], add_special_tokens: bool, limit: int) -> None:
        lengths = [len(ids) for ids in self.tokenizer(texts, truncation=False, verbose=False,
                                                      add_special_tokens=add_special_tokens)["input_ids"]]
        self.tokenized += len(texts)
        self.truncated += sum(length > limit for length in lengths)
        self.truncated_to = limit

    def generation_options(self) -> dict:
        o = self.options
        options = {"max_new_tokens": o["max_new_tokens"], "num_beams": o["num_beams"],
                   "length_penalty": o["length_penalty"]}
        if o["min_new_tokens"]:
            options["min_new_tokens"] = o["min_new_tokens"]
        if o["no_repeat_ngram_size"]:
            options["no_repeat_ngram_size"] = o["no_repeat_ngram_size"]
        return options

    def identity(self):
        """Options, plus a fingerprint of a local model folder's files (names, sizes, times), so
        that a model trained again into the same folder is not served its old outputs."""
        identity = super().identity()
        folder = Path(self.options["model"])
        if folder.is_dir():
            identity["files"] = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns)
                                       for p in folder.iterdir() if p.is_file())
        return identity

    def saved_controller(self):
        """The controller state ``ctrlkit train`` saved beside the weights, if any."""
        import json
        from pathlib import Path

        path = Path(self.options["model"]) / "ctrlkit_controller.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    @quietly
    def save(self, directory) -> None:
        """Save weights and tokenizer (and whatever ctrlkit added) so that ``hf:DIRECTORY`` restores them."""
        self.model.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)
