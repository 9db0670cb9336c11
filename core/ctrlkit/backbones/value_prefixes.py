"""One prefix (peft prefix tuning) per value of a control, chosen for each input: the soft-prefix
(SP) rows of MACSum and CCSBench. The ``soft-prefix`` controller names an input's control and
value in ``ModelInput.features["soft_prefix"]``; ``ctrlkit train --peft prefix`` then trains one
prefix per value it finds among the training inputs, each only on the inputs of its value (a
batch runs once per value, with that value's prefix active), and a run uses the input's own.

The folder holds peft's files of each prefix in a subfolder (``value0``, ``value1``, ...: peft
saves every adapter but the one named ``default`` so, and ``--backbone hf:DIR/value0`` loads
one prefix alone) and ``ctrlkit_prefixes.json``, which maps each ``control=value`` to its
subfolder.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import ConfigurationError
from . import adapters

FEATURE = "soft_prefix"
INDEX_FILE = "ctrlkit_prefixes.json"


def key_of(model_input) -> str | None:
    """``control=value`` of the prefix an input asks for, or None when it asks for none."""
    wanted = model_input.features.get(FEATURE)
    return None if wanted is None else f"{wanted['control']}={wanted['value']}"


def wanted_keys(inputs) -> list[str]:
    """The prefixes some of ``inputs`` ask for, each once, sorted."""
    return sorted({key for key in map(key_of, inputs) if key is not None})


def is_prefixes_folder(name: str) -> bool:
    return (Path(name).expanduser() / INDEX_FILE).is_file()


def read_index(folder: Path) -> dict[str, str]:
    """``control=value`` to adapter name, from ``ctrlkit_prefixes.json``; a damaged one is one line."""
    path = folder / INDEX_FILE
    try:
        index = json.loads(path.read_text(encoding="utf-8"))["prefixes"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise ConfigurationError(f"{path}: not a readable prefix index ({exc})") from None
    if not isinstance(index, dict) or not index or not all(
            isinstance(key, str) and isinstance(name, str) and (folder / name / adapters.ADAPTER_CONFIG).is_file()
            for key, name in index.items()):
        raise ConfigurationError(f"{path}: field 'prefixes' must map each control=value to a subfolder holding "
                                 f"an adapter")
    return index


def save_index(folder: Path, index: dict[str, str]) -> None:
    (folder / INDEX_FILE).write_text(json.dumps({"prefixes": index}, indent=1, ensure_ascii=False) + "\n",
                                     encoding="utf-8")


def first_adapter(folder: Path, index: dict[str, str]) -> Path:
    """The subfolder whose adapter config names the base model (every prefix's names the same)."""
    return folder / next(iter(index.values()))


def attach(model, config_of, keys: list[str]):
    """``model`` wrapped with one fresh prefix per ``keys`` entry (``config_of()`` makes each
    one's peft config); returns the wrapped model and the index of adapter names."""
    index = {key: f"value{number}" for number, key in enumerate(keys)}
    names = list(index.values())
    wrapped = adapters.peft_model(model, config_of(), adapter_name=names[0])
    for name in names[1:]:
        wrapped.add_adapter(name, config_of())
    return wrapped, index


def load(model, folder: Path, index: dict[str, str], backbone: str):
    """``model`` with every prefix of ``folder`` loaded, trainable (a resumed training goes on)."""
    import peft

    wrapped = None
    for name in index.values():
        config = peft.PeftConfig.from_pretrained(str(folder / name))
        config.inference_mode = False
        if not config.is_prompt_learning:
            raise ConfigurationError(f"backbone '{backbone}': {folder / name} holds a {config.peft_type} adapter, "
                                     "not a prefix")
        try:
            if wrapped is None:
                wrapped = adapters.peft_model(model, config, adapter_name=name)
            else:
                wrapped.add_adapter(name, config)
            peft.set_peft_model_state_dict(wrapped, peft.load_peft_weights(str(folder / name), device="cpu"),
                                           adapter_name=name)
        except (RuntimeError, ValueError, OSError) as exc:
            raise ConfigurationError(f"backbone '{backbone}': the prefix in {folder / name} does not fit its base "
                                     f"model: {' '.join(str(exc).split())}") from None
    return wrapped


def groups(inputs, index: dict[str, str], backbone: str) -> list[tuple[str, list[int]]]:
    """The adapter name and the positions of the inputs that use it, for each prefix ``inputs``
    ask for; an input asking for none, or for a value the model has no prefix of, is one line."""
    chosen: dict[str, list[int]] = {}
    for position, model_input in enumerate(inputs):
        key = key_of(model_input)
        if key is None:
            raise ConfigurationError(f"backbone '{backbone}' holds one prefix per value ({', '.join(index)}); an input "
                                     "names none: run it with the soft-prefix controller, on examples that carry "
                                     "its control")
        if key not in index:
            raise ConfigurationError(f"backbone '{backbone}' has no prefix for {key}; it was trained for "
                                     f"{', '.join(index)}")
        chosen.setdefault(index[key], []).append(position)
    return list(chosen.items())
