"""A GGUF file as a transformers model folder, for ``hf-causal:FILE.gguf``.

transformers reads a GGUF file (``from_pretrained(folder, gguf_file=NAME)``, with the ``gguf``
package) by dequantizing every tensor to float32, which takes a minute for a small model. The
result is kept in the cache folder, under ``gguf-torch/`` and the file's SHA-256, as an ordinary
model folder (config, safetensors weights, tokenizer), so that every later load takes seconds and
every load, the first too, reads the same folder. The folder is written whole under a temporary
name and renamed into place, so a load that is killed leaves nothing another load would take.

The saved config has no ``quantization_config``: the weights are plain float tensors, and a
model marked as GGUF-quantized cannot be saved again (``ctrlkit train`` saves what it trains).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from importlib.util import find_spec
from pathlib import Path

from ..errors import ConfigurationError
from ..secrets import scrub_text
from .gguf_file import gguf_sha256

FOLDER = "gguf-torch"
COMPLETE = "ctrlkit-gguf-complete"
"""Written last into a converted folder: a folder without it is not used."""


def dequantized_folder(gguf: str, backbone: str) -> Path:
    """The model folder holding ``gguf``'s weights as float32, made on first use."""
    from ..cache import cache_dir

    file = Path(gguf).expanduser().resolve()
    folder = cache_dir() / FOLDER / gguf_sha256(file).removeprefix("sha256:")
    if (folder / COMPLETE).is_file():
        return folder
    if find_spec("gguf") is None:
        raise ConfigurationError(f"backbone '{backbone}' reads {gguf} through transformers, which needs the gguf "
                                 "package: pip install 'ctrlkit[hf]'")
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
        try:
            _convert(file, building, backbone)
            (building / COMPLETE).write_text(str(file) + "\n", encoding="utf-8")
            try:
                os.rename(building, folder)
            except OSError:  # another process finished first (or left an incomplete folder: replace it)
                if not (folder / COMPLETE).is_file():
                    shutil.rmtree(folder, ignore_errors=True)
                    os.rename(building, folder)
        finally:
            shutil.rmtree(building, ignore_errors=True)
    except OSError as exc:  # a cache folder that cannot be written, a full disk
        raise ConfigurationError(f"backbone '{backbone}' cannot keep the float32 copy of {gguf} in {folder.parent}: "
                                 f"{exc.strerror or exc} (CTRLKIT_CACHE_DIR chooses the folder)") from None
    return folder


def _convert(file: Path, folder: Path, backbone: str) -> None:
    import torch
    import transformers
    from safetensors.torch import save_model

    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(file.parent, gguf_file=file.name)
        model = transformers.AutoModelForCausalLM.from_pretrained(file.parent, gguf_file=file.name,
                                                                  dtype=torch.float32)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:  # e.g. an architecture transformers cannot read
        raise ConfigurationError(scrub_text(f"backbone '{backbone}' cannot read {file} through transformers: "
                                            f"{' '.join(str(exc).split())}")) from None
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.save_pretrained(folder)
    model.generation_config.save_pretrained(folder)
    save_model(model, str(folder / "model.safetensors"))  # shared tensors (tied embeddings) once
    tokenizer.save_pretrained(folder)
