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
import re
from pathlib import Path

from ..errors import ConfigurationError
from ..files import atomic_write_text, read_json
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


NAME = re.compile(r"[A-Za-z0-9_-]{1,100}")
"""A prefix's subfolder name, which is also its adapter's name in peft (which saves the adapter
into a subfolder of that name, and takes no '.' in a module name): a plain name, never a path."""


def check_name(name, where: str) -> str:
    """``name`` when it is a plain subfolder name (:data:`NAME`: no '/', '\\', '..', '.', NUL, not
    absolute nor empty); else one ConfigurationError naming ``where``: a name that were a path
    would be read from, and a resumed training's save would write to, a folder outside the model's."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ConfigurationError(f"{where}: {str(name)[:80]!r} is not a subfolder name (letters, digits, _ or -, "
                                 "at most 100): a prefix lives in a subfolder of the model folder")
    return name


def read_index(folder: Path) -> dict[str, str]:
    """``control=value`` to adapter name, from ``ctrlkit_prefixes.json``; a damaged one, or one
    naming anything but a subfolder of ``folder`` that holds an adapter, is one line."""
    path = folder / INDEX_FILE
    index = read_json(path, dict, ConfigurationError, "a prefix index").get("prefixes")
    if not isinstance(index, dict) or not index or not all(isinstance(key, str) for key in index):
        raise ConfigurationError(f"{path}: field 'prefixes' must map each control=value to a subfolder holding "
                                 f"an adapter")
    check_names(index, path)
    if not all((folder / name / adapters.ADAPTER_CONFIG).is_file() for name in index.values()):
        raise ConfigurationError(f"{path}: field 'prefixes' must map each control=value to a subfolder holding "
                                 f"an adapter")
    return index


def check_names(index: dict[str, str], path: Path) -> None:
    """Every subfolder ``index`` names is a plain name (:func:`check_name`), each named once."""
    seen = set()
    for key, name in index.items():
        where = f"{path}: entry {key[:80]!r}"
        check_name(name, where)
        if name in seen or name == "default":  # peft saves its adapter 'default' in the folder itself
            problem = "reserved" if name == "default" else "named twice"
            raise ConfigurationError(f"{where}: the subfolder {name!r} is {problem}")
        seen.add(name)


def save_index(folder: Path, index: dict[str, str]) -> None:
    """Write ``ctrlkit_prefixes.json`` (atomically) into ``folder``, the names checked first."""
    check_names(index, folder / INDEX_FILE)
    atomic_write_text(folder / INDEX_FILE, json.dumps({"prefixes": index}, indent=1, ensure_ascii=False) + "\n")


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
        adapters.read_adapter_config(folder / name)  # a damaged one is one line, not peft's traceback
        try:
            config = peft.PeftConfig.from_pretrained(str(folder / name))
        except (OSError, ValueError, TypeError) as exc:
            raise ConfigurationError(f"backbone '{backbone}': cannot read the prefix in {folder / name}: "
                                     f"{' '.join(str(exc).split())[:200]}") from None
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
        except adapters.damaged_weights() as exc:  # a cut-short or damaged weights file
            raise ConfigurationError(f"backbone '{backbone}': cannot read the prefix's weights in {folder / name}: "
                                     f"{' '.join(str(exc).split())[:200]}") from None
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
