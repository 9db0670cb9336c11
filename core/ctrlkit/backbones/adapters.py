"""Adapters (peft) on the transformers backbones: the settings of ``ctrlkit train --peft lora|prefix``,
and an adapter folder's parts.

A trained adapter folder holds peft's own files (``adapter_config.json``, naming the base model,
and ``adapter_model.safetensors``: the adapter's weights only), the tokenizer and ctrlkit's files.
When a controller added special tokens, the base model's embeddings were resized: LoRA trains
those tokens' rows (peft's ``trainable_token_indices``; on a model whose output embeddings are tied
to the input ones, that is the output row too), prefix tuning leaves them as they were drawn. Either
way the rows as drawn are saved in ``ctrlkit_added_tokens.safetensors``, so that the base model,
resized again, gets back the very rows the adapter was trained with (an untied output row, or a
prefix-tuned model's rows, would otherwise be drawn anew).
"""

from __future__ import annotations

import math
from importlib.util import find_spec
from pathlib import Path

from ..errors import ConfigurationError
from ..files import read_json
from . import seeded_rows
from .gguf_file import is_gguf_file

ADAPTER_CONFIG = "adapter_config.json"
ADDED_TOKENS_FILE = "ctrlkit_added_tokens.safetensors"
METHODS = ("lora", "prefix")
LORA_DEFAULTS = {"rank": 8, "alpha": 16.0, "dropout": 0.05, "targets": None}
PREFIX_DEFAULTS = {"prefix_length": 20}
# the Auto class a backbone loads, to the task type peft wraps it as
TASK_TYPES = {"AutoModelForSeq2SeqLM": "SEQ_2_SEQ_LM", "AutoModelForCausalLM": "CAUSAL_LM"}


def require_peft(what: str) -> None:
    """One line, before any work, when peft is not installed (``ctrlkit[peft]``)."""
    if find_spec("peft") is None:
        raise ConfigurationError(f"{what} needs peft: pip install 'ctrlkit[peft]'")


def peft_settings(method: str | None, *, lora_rank=None, lora_alpha=None, lora_dropout=None, lora_targets=None,
                  prefix_length=None) -> dict | None:
    """The checked settings of ``--peft METHOD`` with its options (None: the default), or None
    without ``--peft``; lora's ``targets`` stays None unless given (peft then picks the modules
    it knows for the architecture)."""
    lora = {"rank": lora_rank, "alpha": lora_alpha, "dropout": lora_dropout, "targets": lora_targets}
    given = [f"--lora-{name}" for name, value in lora.items() if value is not None]
    given += ["--prefix-length"] if prefix_length is not None else []
    if method is None:
        if given:
            raise ConfigurationError(f"{given[0]} needs --peft lora or --peft prefix")
        return None
    if method not in METHODS:
        raise ConfigurationError(f"--peft must be one of {', '.join(METHODS)}; got {method!r}")
    require_peft(f"--peft {method}")
    foreign = [flag for flag in given if flag.startswith("--prefix" if method == "lora" else "--lora")]
    if foreign:
        raise ConfigurationError(f"{foreign[0]} does not apply to --peft {method}")
    if method == "prefix":
        length = PREFIX_DEFAULTS["prefix_length"] if prefix_length is None else prefix_length
        _whole(length, "--prefix-length")
        return {"method": "prefix", "prefix_length": length}
    settings = {"method": "lora", **{name: LORA_DEFAULTS[name] if value is None else value
                                     for name, value in lora.items()}}
    _whole(settings["rank"], "--lora-rank")
    alpha, dropout = settings["alpha"], settings["dropout"]
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < math.inf:
        raise ConfigurationError(f"--lora-alpha must be a finite number above 0; got {alpha!r}")
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        raise ConfigurationError(f"--lora-dropout must be at least 0 and below 1; got {dropout!r}")
    settings["alpha"], settings["dropout"] = float(alpha), float(dropout)
    if settings["targets"] is not None:
        settings["targets"] = _names(settings["targets"])
    return settings


def _whole(value, flag: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{flag} must be a whole number of at least 1; got {value!r}")


def _names(targets) -> list[str]:
    """Module names, from ``"q_proj,v_proj"`` or a list."""
    items = targets.split(",") if isinstance(targets, str) else targets
    if not isinstance(items, (list, tuple)) or not all(isinstance(item, str) for item in items):
        raise ConfigurationError(f"--lora-targets must be module names, e.g. q_proj,v_proj; got {targets!r}")
    names = [item.strip() for item in items]
    if not names or not all(names):
        raise ConfigurationError(f"--lora-targets names an empty module: {targets!r}")
    return names


def peft_config(settings: dict, task_type: str, token_ids: list[int]):
    """peft's config for ``settings``; LoRA also trains the rows of ``token_ids`` (the tokens a
    controller added)."""
    import peft

    if settings["method"] == "prefix":
        return peft.PrefixTuningConfig(task_type=task_type, num_virtual_tokens=settings["prefix_length"])
    return peft.LoraConfig(task_type=task_type, r=settings["rank"], lora_alpha=settings["alpha"],
                           lora_dropout=settings["dropout"], target_modules=settings["targets"],
                           trainable_token_indices=token_ids or None)


def chosen(model) -> dict:
    """What peft made of the settings, for training.json: lora's target modules as peft chose them."""
    config = model.peft_config[model.active_adapter]
    if config.peft_type.value == "LORA":
        return {"method": "lora", "targets": sorted(config.target_modules),
                "trainable_token_indices": config.trainable_token_indices}
    return {"method": "prefix", "prefix_length": config.num_virtual_tokens}


def is_adapter_folder(name: str) -> bool:
    return (Path(name).expanduser() / ADAPTER_CONFIG).is_file()


def read_adapter_config(folder: str | Path) -> dict:
    """``adapter_config.json`` of ``folder``; a damaged one is one line naming it."""
    path = Path(folder).expanduser() / ADAPTER_CONFIG
    config = read_json(path, dict, ConfigurationError, "an adapter config")
    if not isinstance(config.get("peft_type"), str):
        raise ConfigurationError(f"{path}: not a peft adapter config (no peft_type)")
    return config


def damaged_weights() -> tuple[type[BaseException], ...]:
    """The error safetensors raises for a damaged or cut-short weights file (imported only when
    loading weights), to catch where models and adapters are loaded and name the file in one line."""
    try:
        from safetensors import SafetensorError
    except ImportError:
        return ()
    return (SafetensorError,)


def load_weights_file(path: Path, backbone: str) -> dict:
    """The tensors of the safetensors file ``path`` ctrlkit saved beside a model; a damaged one is
    one line naming it."""
    from safetensors.torch import load_file

    try:
        return load_file(str(path))
    except (OSError, *damaged_weights()) as exc:
        raise ConfigurationError(f"backbone '{backbone}': cannot read {path}: {' '.join(str(exc).split())[:200]}") \
            from None


def base_model(folder: str | Path, config: dict, backbone: str) -> str:
    """The base model an adapter was trained on: its hub id, or its folder, which must still be there."""
    base = config.get("base_model_name_or_path")
    if not isinstance(base, str) or not base:
        raise ConfigurationError(f"backbone '{backbone}': {Path(folder) / ADAPTER_CONFIG} names no base model "
                                 "(base_model_name_or_path)")
    if base.startswith((".", "/", "~")) and not Path(base).expanduser().is_dir() and not is_gguf_file(base):
        raise ConfigurationError(f"backbone '{backbone}': the adapter in {folder} was trained on the base model "
                                 f"{base}, which is not there (moved? set base_model_name_or_path in "
                                 f"{Path(folder) / ADAPTER_CONFIG})")
    return base


def recorded_base(name: str) -> str:
    """How an adapter records its base: a local folder or file (GGUF) as an absolute path
    (resolvable from anywhere), a hub id as it is."""
    path = Path(name).expanduser()
    return str(path.resolve()) if path.is_dir() or is_gguf_file(name) else name


def added_rows(model, count: int) -> dict:
    """The input (and output) embedding rows of the last ``count`` tokens, as drawn when added."""
    rows = {"input": model.get_input_embeddings().weight[-count:].detach().cpu().clone()}
    output = model.get_output_embeddings()
    if output is not None and output.weight is not model.get_input_embeddings().weight:
        rows["output"] = output.weight[-count:].detach().cpu().clone()
    return rows


def restore_added_rows(model, folder: Path, vocabulary: int, backbone: str = "hf") -> dict:
    """Resize ``model`` to ``vocabulary`` tokens and put back the saved rows of the tokens a
    controller added, when ``folder`` has them; returns them (empty: none were added). An adapter
    made elsewhere with a larger vocabulary gets the rows resized, for its own saved embeddings."""
    path = folder / ADDED_TOKENS_FILE
    if not path.is_file():
        if vocabulary > model.get_input_embeddings().weight.shape[0]:
            seeded_rows.resize(model, vocabulary)
        return {}
    import torch

    rows = load_weights_file(path, backbone)
    if not isinstance(rows.get("input"), torch.Tensor):
        raise ConfigurationError(f"backbone '{backbone}': {path} holds no 'input' rows")
    seeded_rows.resize(model, vocabulary)
    with torch.no_grad():
        model.get_input_embeddings().weight[-len(rows["input"]):] = rows["input"]
        if "output" in rows:
            model.get_output_embeddings().weight[-len(rows["output"]):] = rows["output"]
    return rows


def save_added_rows(rows: dict, folder: Path) -> None:
    if rows:
        from safetensors.torch import save_file

        save_file({key: value.contiguous() for key, value in rows.items()}, str(folder / ADDED_TOKENS_FILE))


def peft_model(model, config, adapter_name: str = "default"):
    """``peft.get_peft_model``, without its warning that the adapter's recorded base differs from
    the folder the model was read from: a GGUF file's base is read from the float32 folder kept for
    it (:mod:`.gguf_torch`), and the adapter records the file the user named."""
    import warnings

    import peft

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The PEFT config's `base_model_name_or_path` was renamed")
        wrapped = peft.get_peft_model(model, config, adapter_name=adapter_name)
    if config.is_prompt_learning:
        prefix_reaches_generation(wrapped)
    return wrapped


def prefix_reaches_generation(model) -> None:
    """Make ``generate`` use the prefix of a prefix-tuned model. peft (0.21) hands the prefix to
    the first generation step as ``past_key_values``; transformers 5's models take the cache as
    ``cache`` and, given both, ignore the old name, so the prefix's keys and values reached the
    loss in training but never generation. Here the prefix becomes the
    first step's ``cache``, and the prefixes peft makes again at later steps are dropped (the
    cache holds the first one's keys and values by then). Models that take ``past_key_values``
    alone (no ``cache`` among their inputs) are left as they are."""
    original = model.prepare_inputs_for_generation

    def prepare(*args, **kwargs):
        made = original(*args, **kwargs)
        if "cache" in made:
            prefix = made.pop("past_key_values", None)
            if kwargs.get("is_first_iteration") and prefix is not None:
                made["cache"] = prefix
        return made

    model.prepare_inputs_for_generation = prepare


def load_adapter(model, folder: Path, backbone: str):
    """``model`` with the adapter saved in ``folder``, trainable (a resumed training goes on with
    it; peft's ``PeftModel.from_pretrained`` loads prefix tuning for inference only)."""
    import peft

    config = peft.PeftConfig.from_pretrained(str(folder))
    config.inference_mode = False
    try:
        wrapped = peft_model(model, config)
        result = peft.set_peft_model_state_dict(wrapped, peft.load_peft_weights(str(folder), device="cpu"))
    except damaged_weights() as exc:  # a cut-short or damaged weights file
        raise ConfigurationError(f"backbone '{backbone}': cannot read the adapter's weights in {folder}: "
                                 f"{' '.join(str(exc).split())[:200]}") from None
    except (RuntimeError, ValueError, OSError) as exc:  # modules it lacks, weights of other shapes, a damaged file
        raise ConfigurationError(f"backbone '{backbone}': the adapter in {folder} does not fit its base model: "
                                 f"{' '.join(str(exc).split())}") from None
    if config.is_prompt_learning:  # peft loads the prompt encoder itself, apart from this result
        return wrapped
    # a trainable-tokens layer tied to the input embeddings (BART's encoder, decoder) shares its rows: not missing
    missing = [key for key in result.missing_keys if "lora_" in key]
    if result.unexpected_keys or missing:
        key = (result.unexpected_keys or missing)[0]
        raise ConfigurationError(f"backbone '{backbone}': the adapter in {folder} does not fit its base model "
                                 f"({'unexpected' if result.unexpected_keys else 'missing'} weight {key})")
    return wrapped
