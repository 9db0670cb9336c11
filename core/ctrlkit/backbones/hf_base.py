"""What the transformers backbones share: lazy loading, device and dtype, special tokens,
truncation to the model's limit (counted), training and saving, and adapters (peft): a model
folder holding an adapter loads its base model with it (:mod:`.adapters`)."""

from __future__ import annotations

import functools
from importlib.util import find_spec
from pathlib import Path

from ..components import Backbone
from ..errors import ConfigurationError
from ..files import read_json
from ..hub import hub_unreachable, is_local, not_found_offline
from ..options import Option
from ..quiet import quiet_new_imports, quietly
from ..secrets import scrub_text
from . import adapter_composition, adapters, seeded_rows, value_prefixes
from .gguf_file import gguf_sha256, is_gguf_file
from .gguf_torch import dequantized_folder
from .prompt_fitting import PromptFitting

DTYPES = ("auto", "float32", "float16", "bfloat16")


def require_hf_libraries(what: str) -> None:
    """One line, before any work, when torch or transformers is not installed (``ctrlkit[hf]``)."""
    missing = [name for name in ("torch", "transformers") if find_spec(name) is None]
    if missing:
        raise ConfigurationError(f"{what} needs {' and '.join(missing)}: pip install 'ctrlkit[hf]' "
                                 "(install torch first to choose its CPU or CUDA build)")


class HFBackbone(PromptFitting, Backbone):
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
        Option("adapters", str, "", "trained adapters (peft) composed on the model, NAME=DIR,NAME=DIR "
                                    "(see combine)"),
        Option("combine", str, "merge", "how adapters combine: merge (LoRA: one adapter, the weighted sum of "
                                        "their weight changes), sequence (each summarizes the previous one's "
                                        "summary, in the order given) or lorahub (ctrlkit train searches the merge "
                                        "weights on a few examples)", choices=adapter_composition.COMBINE),
        Option("adapter_weights", str, "", "merge weights, one per adapter, e.g. 0.7,0.3 (empty: equal)"),
    )
    auto_model_class = ""  # the transformers Auto class, by name
    reads_gguf = False
    """Whether a GGUF file may stand for the model folder (:mod:`.gguf_torch`: decoder-only models)."""

    def __init__(self, **options):
        super().__init__(**options)
        require_hf_libraries("the transformers backbones (hf, hf-causal)")
        self._model = None
        self._tokenizer = None
        self._tokens_added = 0  # by controllers, since loading
        self._added_rows = {}  # an adapter's base model's rows of those tokens (adapters.py)
        self._composition = None  # hf.adapters, parsed on first use: the registry names the backbone after __init__
        self._composition_folder = None  # a folder ctrlkit train wrote with hf.combine=lorahub, once read
        self._weights_searched = False  # hf.combine=lorahub: merge_adapters has merged them
        self.value_prefixes: dict[str, str] = {}  # control=value to its prefix's adapter name (value_prefixes.py)
        self._in_stage = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "generate" in cls.__dict__:
            cls.generate = _in_sequence(cls.__dict__["generate"])

    @property
    def composed(self) -> list[tuple[str, Path]]:
        """The (name, folder) of each adapter ``hf.adapters`` composes on the model, checked."""
        if self._composition is None:
            if self.options["model"] and adapter_composition.is_composition_folder(self.options["model"]):
                self._composition_folder = Path(self.options["model"]).expanduser()
                adapter_composition.read_composition(self.options, self.name)
            self._composition = adapter_composition.parse(self.options, self.name)
            if self._composition[1]:  # recorded as used: the default, equal weights, written out
                self.options["adapter_weights"] = ",".join(map(repr, self._composition[1]))
        return self._composition[0]

    def merge_adapters(self, weights: list[float]) -> None:
        """With ``combine=lorahub``: make the active adapter the composed adapters' weighted sum
        (``ctrlkit train``'s search calls it for every weighting it tries)."""
        adapter_composition.merge(self.model, [name for name, _ in self.composed], weights)
        self._weights_searched = True

    def recorded_options(self):
        """The options, with the merge weights written out (the default, equal ones, too)."""
        _ = self.composed
        return super().recorded_options()

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

    def load(self) -> None:
        self._load()

    @quietly  # also when a library user calls generate() outside a run
    def _load(self) -> None:
        if self._model is not None:
            return
        if not self.options["model"]:
            raise ConfigurationError(f"backbone '{self.name}' needs a model: --backbone {self.name}:PATH_OR_HUB_ID")
        _ = self.composed  # a folder of hf.combine=lorahub names its base model and adapters
        import torch
        import transformers

        quiet_new_imports()
        device = self.options["device"] or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = self.options["dtype"]
        if dtype == "auto":
            cuda_bf16 = device.startswith("cuda") and torch.cuda.is_bf16_supported()
            dtype = "bfloat16" if cuda_bf16 else "float32"
        name = self.options["model"]
        if is_gguf_file(name) and not self.reads_gguf:
            raise ConfigurationError(f"backbone '{self.name}' reads no GGUF file ({name}): a GGUF holds a decoder-only "
                                     "model; give it to hf-causal or llamacpp")
        if name.startswith((".", "/", "~")) and not Path(name).expanduser().is_dir() and not is_gguf_file(name):
            raise ConfigurationError(f"backbone '{self.name}': no model folder at {name}")
        adapter = Path(name).expanduser() if adapters.is_adapter_folder(name) else None
        prefixes = Path(name).expanduser() if value_prefixes.is_prefixes_folder(name) else None
        if adapter or prefixes:
            adapters.require_peft(f"backbone '{self.name}' with the adapter in {name}")
        if adapter:
            name = adapters.base_model(adapter, adapters.read_adapter_config(adapter), self.name)
        elif prefixes:
            index = value_prefixes.read_index(prefixes)
            first = value_prefixes.first_adapter(prefixes, index)
            name = adapters.base_model(first, adapters.read_adapter_config(first), self.name)
        if is_gguf_file(name):  # read through the float32 folder kept for that file
            name = str(dequantized_folder(name, self.name))
        # an adapter's folder holds the tokenizer with the tokens its controller added, and their rows
        saved = adapter or prefixes or adapter_composition.tokenizer_folder(self.composed)
        vocabulary = saved if saved and (saved / "tokenizer_config.json").is_file() else name
        # a Hub name with the Hub out of reach: the local Hub cache only, not a minute of retries
        offline = None if is_local(name) else hub_unreachable()
        try:
            self._tokenizer = transformers.AutoTokenizer.from_pretrained(vocabulary, local_files_only=bool(offline))
            model_class = getattr(transformers, self.auto_model_class)
            # transformers does not pass local_files_only to its look for an adapter config: without
            # adapter_kwargs, that look retries the unreachable Hub for over 20 s
            self._model = model_class.from_pretrained(name, dtype=getattr(torch, dtype),
                                                      local_files_only=bool(offline),
                                                      adapter_kwargs={"local_files_only": bool(offline)})
        except adapters.damaged_weights() as exc:  # a cut-short or damaged weights file
            raise ConfigurationError(f"backbone '{self.name}' cannot read the weights of {name}: "
                                     f"{' '.join(str(exc).split())[:200]}") from None
        except (OSError, ValueError) as exc:
            if offline:
                raise ConfigurationError(not_found_offline(f"backbone '{self.name}'", name, offline)) from None
            raise ConfigurationError(scrub_text(f"backbone '{self.name}' cannot load {name!r}: "
                                                f"{' '.join(str(exc).split())}")) \
                from None
        if saved:
            self._added_rows = adapters.restore_added_rows(self._model, saved, len(self._tokenizer), self.name)
        if adapter:
            self._model = adapters.load_adapter(self._model, adapter, self.name)
        elif prefixes:
            self._model = value_prefixes.load(self._model, prefixes, index, self.name)
            self.value_prefixes = index
        elif self.composed:
            adapter_composition.check_vocabularies(self.composed, self._tokenizer, name, bool(offline), self.name)
            self._model = adapter_composition.load(self._model, self.composed, self.options["combine"],
                                                   self._composition[1], self.name)
        try:
            self._model.to(device)
        except (RuntimeError, AssertionError) as exc:  # no such device, or torch built without it
            raise ConfigurationError(f"backbone '{self.name}' cannot use device {device!r}: {exc}") from None
        self._model.eval()
        self._after_load()

    def _after_load(self) -> None:
        """Hook for subclasses: restore what ctrlkit saved beside the weights."""

    def add_special_tokens(self, tokens):
        """Add the ``tokens`` the model lacks; their new rows are drawn from seeds of their texts,
        the same in every process (:mod:`.seeded_rows`)."""
        new = list(dict.fromkeys(token for token in tokens if token not in self.tokenizer.get_vocab()))
        if new and self.has_adapter:
            raise ConfigurationError(f"backbone '{self.name}': the adapter in {self.options['model']} was trained "
                                     f"without the token {new[0]} this controller adds; train one with the controller")
        if new:
            self.tokenizer.add_tokens(new, special_tokens=True)
            ids = {token: self.tokenizer.convert_tokens_to_ids(token) for token in new}
            seeded_rows.add_token_rows(self.model, ids, len(self.tokenizer))
            self._tokens_added += len(new)

    @property
    def has_adapter(self) -> bool:
        """True when the model is wrapped by peft (it loaded an adapter, or ``attach_adapter`` made one)."""
        return type(self.model).__module__.partition(".")[0] == "peft"

    @quietly
    def attach_adapter(self, settings: dict, prefix_keys: list[str] | None = None) -> dict:
        """Wrap the model in a new adapter (``ctrlkit train --peft``; :func:`.adapters.peft_settings`),
        once the controller has added its tokens, which LoRA then trains; a model loaded with an
        adapter of that method (a resumed training) goes on with it. With ``prefix_keys``
        (``control=value`` each), one prefix per value (:mod:`.value_prefixes`). Returns what peft chose."""
        self._refuse_composed_training()
        if self.has_adapter:
            loaded = adapters.chosen(self.model)
            if loaded["method"] != settings["method"]:
                raise ConfigurationError(f"backbone '{self.name}': {self.options['model']} holds a {loaded['method']} "
                                         f"adapter, not {settings['method']}")
            if sorted(self.value_prefixes) != sorted(prefix_keys or []):
                raise ConfigurationError(f"backbone '{self.name}': {self.options['model']} holds prefixes for "
                                         f"{', '.join(self.value_prefixes) or 'no value'}, not for "
                                         f"{', '.join(prefix_keys or []) or 'no value'}")
            return {**loaded, "values": prefix_keys} if prefix_keys else loaded
        count, vocabulary = self._tokens_added, len(self.tokenizer)
        self._added_rows = adapters.added_rows(self.model, count) if count else {}

        def config():
            return adapters.peft_config(settings, adapters.TASK_TYPES[self.auto_model_class],
                                        list(range(vocabulary - count, vocabulary)))

        try:
            if prefix_keys:
                self._model, self.value_prefixes = value_prefixes.attach(self._model, config, prefix_keys)
            else:
                self._model = adapters.peft_model(self._model, config())
        except (ValueError, TypeError) as exc:  # e.g. target modules the model does not have
            raise ConfigurationError(f"backbone '{self.name}' cannot take a {settings['method']} adapter: "
                                     f"{' '.join(str(exc).split())}") from None
        for config in self._model.peft_config.values():
            config.base_model_name_or_path = adapters.recorded_base(self.options["model"])
        chose = adapters.chosen(self._model)
        return {**chose, "values": prefix_keys} if prefix_keys else chose

    def _refuse_composed_training(self) -> None:
        if self.composed:
            raise ConfigurationError(f"option '{self.name}.adapters' composes trained adapters for a run; "
                                     "ctrlkit train takes one model")

    def trainable_parameters(self):
        """What ``ctrlkit train`` updates: the model's parameters, or with an adapter the adapter's only."""
        self._refuse_composed_training()
        return [parameter for parameter in self.model.parameters() if parameter.requires_grad]

    def train_mode(self, training: bool) -> None:
        self.model.train(training)

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

    def token_ids(self, texts: list[str], special: list[bool], limit: int | None = None) -> list[list[int]]:
        """The token ids of each text, with the tokenizer's special tokens where ``special`` says
        (each input's own, whatever its batch holds), cut at the tokenizer's ``truncation_side`` to
        ``limit`` where given."""
        ids: list[list[int]] = [[] for _ in texts]
        cut = {"truncation": True, "max_length": limit} if limit else {"truncation": False}
        for flag in (True, False):
            chosen = [index for index, wanted in enumerate(special) if wanted == flag]
            if chosen:
                made = self.tokenizer([texts[index] for index in chosen], add_special_tokens=flag, verbose=False,
                                      **cut)["input_ids"]
                for index, row in zip(chosen, made):
                    ids[index] = row
        return ids

    def padded(self, rows: list[list[int]], side: str) -> dict:
        """``input_ids`` and ``attention_mask`` of token id rows padded on ``side`` (``left`` or
        ``right``), as the tokenizer pads."""
        import torch

        width = max(len(row) for row in rows)
        pad = self.tokenizer.pad_token_id
        pad = 0 if pad is None else pad  # a tokenizer with neither pad nor EOS token: the mask hides it anyway
        ids, mask = [], []
        for row in rows:
            padding = width - len(row)
            ids.append([pad] * padding + row if side == "left" else row + [pad] * padding)
            mask.append([0] * padding + [1] * len(row) if side == "left" else [1] * len(row) + [0] * padding)
        return {"input_ids": torch.tensor(ids), "attention_mask": torch.tensor(mask)}

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
        that a model trained again into the same folder is not served its old outputs; for an
        adapter, of its base model's folder too. How a long prompt is cut is part of it: outputs
        cached when a tokenizer cut every prompt at one end are not served again."""
        _ = self.composed  # a folder of hf.combine=lorahub runs, and is recorded, as its merge
        identity = {**super().identity(), "cut": "document end, then earliest demonstrations"}
        folder = Path(self.options["model"]).expanduser()
        if folder.is_dir():
            identity["files"] = _fingerprint(folder)
        elif is_gguf_file(self.options["model"]):  # which weights, wherever the file lies
            identity["options"].pop("model")
            identity["gguf_sha256"] = gguf_sha256(folder)
        if adapters.is_adapter_folder(self.options["model"]):
            base = adapters.read_adapter_config(folder).get("base_model_name_or_path")
            if isinstance(base, str) and base and Path(base).expanduser().is_dir():
                identity["base_files"] = _fingerprint(Path(base).expanduser())
            elif isinstance(base, str) and is_gguf_file(base):
                identity["base_gguf_sha256"] = gguf_sha256(Path(base).expanduser())
        if value_prefixes.is_prefixes_folder(self.options["model"]):
            index = value_prefixes.read_index(folder)
            identity["prefix_files"] = {key: _fingerprint(folder / name) for key, name in index.items()}
            base = adapters.read_adapter_config(value_prefixes.first_adapter(folder, index)).get("base_model_name_or_path")
            if isinstance(base, str) and base and Path(base).expanduser().is_dir():
                identity["base_files"] = _fingerprint(Path(base).expanduser())
        if self.composed:
            identity["adapter_files"] = {name: _fingerprint(path) for name, path in self.composed}
        else:  # without adapters, how they would combine changes nothing (nor the cache keys of earlier runs)
            for option in ("adapters", "combine", "adapter_weights"):
                identity["options"].pop(option)
        return identity

    def saved_controller(self):
        """The controller state ``ctrlkit train`` saved beside the weights, if any."""
        _ = self.composed
        path = (self._composition_folder or Path(self.options["model"]).expanduser()) / "ctrlkit_controller.json"
        if not path.is_file():
            return None
        saved = read_json(path, dict, ConfigurationError, "a saved controller state")
        if not isinstance(saved.get("controller"), str) or "state" not in saved:
            raise ConfigurationError(f"{path}: not a saved controller state (fields 'controller' and 'state')")
        return saved

    @quietly
    def save(self, directory) -> None:
        """Save weights and tokenizer (and whatever ctrlkit added) so that ``hf:DIRECTORY`` restores
        them; with an adapter, the adapter's weights only, in peft's format (the rows of tokens
        a controller added in ctrlkit's file: :mod:`.adapters`)."""
        if self.has_adapter:
            if self.value_prefixes:  # peft saves each prefix into DIRECTORY/NAME: a plain name, never a path
                value_prefixes.check_names(self.value_prefixes, Path(directory) / value_prefixes.INDEX_FILE)
            # the added tokens' rows are LoRA's trainable tokens and ctrlkit's file, not whole embedding matrices
            self.model.save_pretrained(directory, save_embedding_layers=False)
            adapters.save_added_rows(self._added_rows, Path(directory))
            if self.value_prefixes:
                value_prefixes.save_index(Path(directory), self.value_prefixes)
        else:
            self.model.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)


def _in_sequence(generate):
    """A backbone's ``generate``, which with ``combine=sequence`` runs once per adapter, in order,
    each stage's summaries the next stage's sources (:mod:`.adapter_composition`)."""

    @functools.wraps(generate)
    def staged(self, inputs):
        if self.composed and self.options["combine"] == "lorahub" and not self._weights_searched:
            raise ConfigurationError(f"option '{self.name}.combine=lorahub' searches the merge weights in ctrlkit "
                                     f"train; run the folder it writes (--backbone {self.name}:OUT), or give "
                                     f"{self.name}.adapter_weights with {self.name}.combine=merge")
        if self._in_stage or not (self.composed and self.options["combine"] == "sequence"):
            return generate(self, inputs)
        self._in_stage = True  # a subclass's generate calling its parent's runs one stage, not a sequence
        try:
            for name, _ in self.composed:
                self.model.set_adapter(name)
                outputs = generate(self, inputs)
                inputs = [model_input.replace(source=output, messages=None)
                          for model_input, output in zip(inputs, outputs)]
        finally:
            self._in_stage = False
        return outputs

    return staged


def _fingerprint(folder: Path) -> list:
    return sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir() if p.is_file())
