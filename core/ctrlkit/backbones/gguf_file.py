"""GGUF files: checking that a path is one, reading the metadata a backbone needs (architecture,
training context, chat template) without loading the weights, and the file's SHA-256, taken
once per file rather than once per run.

The metadata is read from the file's header by this module (standard library only), so that
the ``llamacpp`` backbone can refuse a wrong file and a context too small before its runtime
loads anything, and so that ``ctrlkit list`` imports nothing heavy. Only GGUF versions 2 and 3
(every llama.cpp since 2023) are read; a count or length larger than the file itself is refused
as damage rather than believed.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

from ..errors import ConfigurationError

MAGIC = b"GGUF"
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9
DIGESTS_FILE = "gguf-sha256.json"
"""In the cache folder: each GGUF's digest, keyed by what its metadata said when it was taken."""


class GGUFError(ConfigurationError):
    """A path that is no GGUF file this module can read; the message names the file."""


def read_metadata(path: str | os.PathLike) -> dict:
    """The key-value metadata of the GGUF file at ``path``: scalars and strings as Python values;
    arrays (the vocabulary, merges) as their length only, under the same key."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            return _Reader(handle, size, path).metadata()
    except OSError as exc:
        raise GGUFError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def model_facts(path: str | os.PathLike) -> dict:
    """What a backbone needs to know of a GGUF model before loading it: ``architecture``,
    ``context_length`` (its training context; None when the file does not say), ``chat_template``
    (None for a base model without one) and ``name``."""
    metadata = read_metadata(path)
    architecture = metadata.get("general.architecture")
    context = metadata.get(f"{architecture}.context_length")
    template = metadata.get("tokenizer.chat_template")
    return {"architecture": architecture if isinstance(architecture, str) else None,
            "context_length": context if isinstance(context, int) and context > 0 else None,
            "chat_template": template if isinstance(template, str) and template.strip() else None,
            "name": metadata.get("general.name") if isinstance(metadata.get("general.name"), str) else None}


def is_gguf_file(name: str) -> bool:
    """Whether ``name`` is a path to a file starting with GGUF's magic bytes."""
    path = Path(name).expanduser()
    try:
        with path.open("rb") as handle:
            return path.is_file() and handle.read(4) == MAGIC
    except OSError:
        return False


def check_gguf_path(path: str, where: str) -> Path:
    """``path`` as a Path when it names a readable GGUF file, else one GGUFError naming it."""
    if not path:
        raise GGUFError(f"{where} needs a GGUF file: --backbone NAME:PATH.gguf")
    file = Path(path).expanduser()
    if not file.is_file():
        raise GGUFError(f"{where}: no GGUF file at {path}" + (" (it is a folder)" if file.is_dir() else ""))
    try:
        with file.open("rb") as handle:
            head = handle.read(4)
    except OSError as exc:
        raise GGUFError(f"{where}: cannot read {path} ({exc.strerror or exc})") from None
    if head != MAGIC:
        raise GGUFError(f"{where}: {path} is not a GGUF file (it does not start with 'GGUF')")
    return file


def gguf_sha256(path: str | os.PathLike) -> str:
    """``sha256:...`` of the file, from the cache folder's record where the file's size, times and
    inode are as recorded (a 1 GB model is hashed once, not at every run); taken and recorded
    otherwise. A record that cannot be read or written only costs the hashing again."""
    from ..cache import cache_dir
    from ..digest import data_digest
    from ..files import atomic_write_text
    from ..errors import CtrlkitError

    file = Path(path).expanduser().resolve()
    info = file.stat()
    signature = [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]
    record_path = cache_dir() / DIGESTS_FILE
    try:
        records = json.loads(record_path.read_text(encoding="utf-8"))
        records = records if isinstance(records, dict) else {}
    except (OSError, ValueError):
        records = {}
    known = records.get(str(file))
    if isinstance(known, dict) and known.get("signature") == signature and isinstance(known.get("sha256"), str):
        return known["sha256"]
    digest = data_digest(file)
    records[str(file)] = {"signature": signature, "sha256": digest}
    try:
        atomic_write_text(record_path, json.dumps(records, indent=1, sort_keys=True))
    except CtrlkitError:
        pass  # a read-only cache folder: the digest is right, only not remembered
    return digest


class _Reader:
    def __init__(self, handle, size: int, path: Path):
        self.handle, self.size, self.path = handle, size, path

    def fail(self, what: str):
        raise GGUFError(f"{self.path}: not a GGUF file ctrlkit can read ({what})")

    def read(self, count: int) -> bytes:
        data = self.handle.read(count)
        if len(data) != count:
            self.fail("it ends inside its header")
        return data

    def unpack(self, fmt: str):
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def count(self, what: str) -> int:
        value = self.unpack("<Q")
        if value > self.size:  # no count or length can exceed the file's bytes
            self.fail(f"a {what} of {value} in a file of {self.size} bytes")
        return value

    def string(self) -> str:
        return self.read(self.count("string length")).decode("utf-8", errors="replace")

    def value(self, kind: int, keep: bool = True):
        if kind in SCALARS:
            return self.unpack(SCALARS[kind])
        if kind == STRING:
            return self.string()
        if kind == ARRAY:
            item_kind, length = self.unpack("<I"), self.count("array length")
            if item_kind in SCALARS:
                self.handle.seek(struct.calcsize(SCALARS[item_kind]) * length, os.SEEK_CUR)
            else:
                for _ in range(length):
                    self.value(item_kind, keep=False)
            return length
        self.fail(f"value type {kind}")

    def metadata(self) -> dict:
        if self.handle.read(4) != MAGIC:
            self.fail("it does not start with 'GGUF'")
        version = self.unpack("<I")
        if version not in (2, 3):
            self.fail(f"GGUF version {version}; versions 2 and 3 are read")
        self.count("tensor count")
        entries = self.count("metadata count")
        return {self.string(): self.value(self.unpack("<I")) for _ in range(entries)}
