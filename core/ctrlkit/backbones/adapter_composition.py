"""Several trained adapters on one base model (``--set hf.adapters=length=DIR1,focus=DIR2``).

``hf.combine=merge`` makes one LoRA adapter whose weight change is the weighted sum of theirs,
``sum_i w_i * B_i A_i * alpha_i / r_i`` in every adapted module (``hf.adapter_weights``, default
equal: LoRAHub's combination with given weights). peft's ``add_weighted_adapter`` does exactly this
with ``combination_type="cat"`` (it stacks the ``w_i * scaling_i * A_i`` and the ``B_i`` along the
rank, at scale 1); its ``"linear"`` sums the A's and the B's apart, so their product holds cross
terms ``B_i A_j``: not the weighted sum. The rows of tokens a controller added, which each adapter
trained itself (the base model has no such row), are merged by the same weights.

``hf.combine=sequence`` summarizes in stages: the first adapter summarizes the input, each next
one summarizes the previous one's summary (the input's guidance and features kept, chat
messages dropped: the summary is the source now).

``hf.combine=lorahub`` is for ``ctrlkit train``, which searches the merge weights on a few
examples (:mod:`ctrlkit.training.lorahub`) and writes a folder holding ``ctrlkit_composition.json``
(the base model, the adapters and the weights found); ``--backbone hf:FOLDER`` runs that merge.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from ..errors import ConfigurationError
from ..files import atomic_write_text, read_json
from . import adapters

COMBINED = "combined"  # the merged adapter's name in the peft model
COMBINE = ("merge", "sequence", "lorahub")
COMPOSITION_FILE = "ctrlkit_composition.json"


def is_composition_folder(name: str) -> bool:
    return (Path(name).expanduser() / COMPOSITION_FILE).is_file()


def write_composition(folder: Path, base: str, named: list[tuple[str, Path]], weights: list[float]) -> None:
    """What a folder made by ``hf.combine=lorahub`` runs: the merge of ``named`` on ``base`` by ``weights``."""
    composition = {"base": base, "adapters": [[name, str(path.resolve())] for name, path in named],
                   "weights": weights}
    atomic_write_text(folder / COMPOSITION_FILE, json.dumps(composition, indent=1) + "\n")


def read_composition(options: dict, backbone: str) -> None:
    """Set ``options`` (model, adapters, adapter_weights, combine) to the merge the model folder's
    ``ctrlkit_composition.json`` records, so that it runs, and is recorded, as that merge."""
    path = Path(options["model"]).expanduser() / COMPOSITION_FILE
    if options["adapters"]:
        raise ConfigurationError(f"option '{backbone}.adapters': {path.parent} already composes adapters")
    composition = read_json(path, dict, ConfigurationError, "a composition")
    base, named, weights = (composition.get(field) for field in ("base", "adapters", "weights"))
    if not isinstance(base, str) or not base:
        raise ConfigurationError(f"{path}: field 'base' must name the base model")
    # what it records exactly, or refused: a file that lost its weights must not run as an equal merge
    if not isinstance(named, list) or not named or not all(
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(part, str) and part for part in pair)
            for pair in named):
        raise ConfigurationError(f"{path}: field 'adapters' must list [name, folder] pairs, at least one")
    if not isinstance(weights, list) or len(weights) != len(named) or not all(
            (isinstance(weight, float) and math.isfinite(weight))
            or (isinstance(weight, int) and not isinstance(weight, bool) and weight.bit_length() <= 1024)
            for weight in weights):
        raise ConfigurationError(f"{path}: field 'weights' must give one finite number for each of its "
                                 f"{len(named)} adapters")
    if any("," in part for pair in named for part in pair):
        raise ConfigurationError(f"{path}: an adapter's name or folder holds a comma, which the adapters option "
                                 "cannot carry; move the folder")
    spec = ",".join(f"{name}={folder}" for name, folder in named)
    text = ",".join(repr(float(weight)) for weight in weights)
    options.update(model=base, adapters=spec, adapter_weights=text, combine="merge")


def parse(options: dict, backbone: str) -> tuple[list[tuple[str, Path]], list[float]]:
    """The (name, folder) of each adapter in ``hf.adapters`` and the merge weights, checked: every
    folder an adapter of the model option's base model, of a kind ``hf.combine`` takes."""
    where = f"option '{backbone}.adapters'"
    if not options["adapters"]:
        if options["adapter_weights"]:
            raise ConfigurationError(f"option '{backbone}.adapter_weights' needs {backbone}.adapters")
        return [], []
    adapters.require_peft(where)
    if not options["model"]:
        raise ConfigurationError(f"{where} composes adapters on a base model: --backbone {backbone}:BASE")
    if adapters.is_adapter_folder(options["model"]):
        raise ConfigurationError(f"{where} composes adapters on a base model, but {options['model']} is itself "
                                 "an adapter; give the base model")
    named = []
    for item in options["adapters"].split(","):
        name, sep, folder = (part.strip() for part in item.partition("="))
        if not sep or not re.fullmatch(r"[A-Za-z0-9_-]+", name) or not folder:
            raise ConfigurationError(f"{where}: {item.strip()!r} is not NAME=DIR (a name of letters, digits, _ or -)")
        if name == COMBINED or name in dict(named):
            raise ConfigurationError(f"{where}: the name {name!r} is {'reserved' if name == COMBINED else 'repeated'}")
        if not adapters.is_adapter_folder(folder):
            raise ConfigurationError(f"{where}: {folder} (adapter {name!r}) holds no {adapters.ADAPTER_CONFIG}")
        named.append((name, Path(folder).expanduser()))
    configs = {name: adapters.read_adapter_config(folder) for name, folder in named}
    base = adapters.recorded_base(options["model"])
    for name, folder in named:
        recorded = configs[name].get("base_model_name_or_path")
        trained_on = adapters.recorded_base(recorded) if isinstance(recorded, str) and recorded else ""
        if trained_on != base:
            raise ConfigurationError(f"{where}: adapter {name!r} ({folder}) was trained on the base model "
                                     f"{trained_on or '(none named)'}, not on {base}")
    kinds = {name: config["peft_type"] for name, config in configs.items()}
    if options["combine"] == "lorahub" and options["adapter_weights"]:
        raise ConfigurationError(f"option '{backbone}.adapter_weights' applies to {backbone}.combine=merge; "
                                 f"{backbone}.combine=lorahub searches them")
    if options["combine"] == "sequence":
        if options["adapter_weights"]:
            raise ConfigurationError(f"option '{backbone}.adapter_weights' applies to {backbone}.combine=merge")
        if len(set(kinds.values())) > 1:
            raise ConfigurationError(f"{where}: the adapters of a sequence must be of one kind; "
                                     f"{', '.join(f'{name} is {kind}' for name, kind in kinds.items())}")
        return named, []
    for name, folder in named:
        config = configs[name]
        if kinds[name] != "LORA":
            raise ConfigurationError(f"{where}: {backbone}.combine={options['combine']} merges LoRA adapters; "
                                     f"{name!r} ({folder}) is {kinds[name]}")
        if config.get("use_rslora") or config.get("use_dora"):
            raise ConfigurationError(f"{where}: {name!r} ({folder}) is an rsLoRA or DoRA adapter, which "
                                     f"{backbone}.combine={options['combine']} does not sum exactly")
    if len({str(config.get("trainable_token_indices")) for config in configs.values()}) > 1:
        raise ConfigurationError(f"{where}: the adapters trained the rows of different added tokens "
                                 "(trainable_token_indices); merge adapters trained with the same controllers")
    if options["combine"] == "lorahub":
        return named, []
    return named, _weights(options["adapter_weights"], len(named), backbone)


def _weights(text: str, count: int, backbone: str) -> list[float]:
    where = f"option '{backbone}.adapter_weights'"
    if not text:
        return [1 / count] * count
    try:
        weights = [float(item) for item in text.split(",")]
    except ValueError:
        raise ConfigurationError(f"{where} expects numbers, e.g. 0.7,0.3; got {text!r}") from None
    if len(weights) != count:
        raise ConfigurationError(f"{where} gives {len(weights)} weights for {count} adapters")
    if not all(math.isfinite(weight) for weight in weights):
        raise ConfigurationError(f"{where} expects finite numbers; got {text!r}")
    return weights


def tokenizer_folder(named: list[tuple[str, Path]]) -> Path | None:
    """The first adapter folder that holds a tokenizer (with its controller's tokens), if any."""
    return next((folder for _, folder in named if (folder / "tokenizer_config.json").is_file()), None)


def check_vocabularies(named: list[tuple[str, Path]], tokenizer, base: str, offline: bool, backbone: str) -> None:
    """Every adapter's tokenizer (the base model's, where it saved none) has ``tokenizer``'s vocabulary:
    token ids mean the same under each of them."""
    import transformers

    vocabulary = tokenizer.get_vocab()
    for name, folder in named:
        source = str(folder) if (folder / "tokenizer_config.json").is_file() else base
        if transformers.AutoTokenizer.from_pretrained(source, local_files_only=offline).get_vocab() != vocabulary:
            raise ConfigurationError(f"option '{backbone}.adapters': adapter {name!r} ({folder}) has another "
                                     "vocabulary than the others (a controller added other tokens)")


def load(model, named: list[tuple[str, Path]], combine: str, weights: list[float], backbone: str):
    """``model`` with the adapters loaded under their names; with merge, their weighted sum active
    (with lorahub, ``merge`` makes it once the weights are found)."""
    import peft

    try:
        wrapped = peft.PeftModel.from_pretrained(model, str(named[0][1]), adapter_name=named[0][0])
        for name, folder in named[1:]:
            wrapped.load_adapter(str(folder), adapter_name=name)
    except adapters.damaged_weights() as exc:  # a cut-short or damaged weights file
        raise ConfigurationError(f"option '{backbone}.adapters': cannot read the weights of one of them "
                                 f"({', '.join(str(folder) for _, folder in named)}): "
                                 f"{' '.join(str(exc).split())[:200]}") from None
    except (ValueError, RuntimeError, KeyError, OSError) as exc:  # e.g. weights of other shapes than the base model's
        raise ConfigurationError(f"option '{backbone}.adapters' cannot load them onto {model.name_or_path}: "
                                 f"{' '.join(str(exc).split())}") from None
    if wrapped.peft_config[named[0][0]].is_prompt_learning:  # a sequence of prefixes
        adapters.prefix_reaches_generation(wrapped)
    if combine == "merge":
        merge(wrapped, [name for name, _ in named], weights)
    return wrapped


def merge(model, names: list[str], weights: list[float]) -> None:
    """Make the active adapter of ``model`` the weighted sum of the adapters ``names`` (a
    previous merge replaced)."""
    import warnings

    if COMBINED in model.peft_config:
        with warnings.catch_warnings():  # peft warns that the active adapter goes: the new merge replaces it
            warnings.filterwarnings("ignore", message="Adapter combined was active which is now deleted")
            model.delete_adapter(COMBINED)
    model.add_weighted_adapter(names, weights, COMBINED, combination_type="cat")
    _merge_token_rows(model, names, weights)
    model.set_adapter(COMBINED)


def _merge_token_rows(model, names: list[str], weights: list[float]) -> None:
    """The merged adapter's rows of added tokens: the weighted sum of the adapters' (peft starts it
    from the base model's rows)."""
    import torch

    with torch.no_grad():
        for module in model.modules():
            rows = getattr(module, "trainable_tokens_delta", None)
            if rows is not None and COMBINED in rows:
                rows[COMBINED].copy_(sum(weight * rows[name] for name, weight in zip(names, weights)))
