"""What a data file or folder holds, as one SHA-256 digest, so that a sweep reuses a cell only
while its data is unchanged: a path says where the data was, not what it was.

A file is hashed as a stream of its bytes, so the same bytes under another name or with another
modification time give the same digest. A folder is hashed as the sorted list of the files under
it (path relative to the folder, and each file's digest), so neither the order the disk lists
them in nor their times count, but a renamed file inside it does (a dataset picks files by name).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .errors import DatasetError

_CHUNK = 1 << 20
# Digests already taken in this process, keyed by what the files' metadata said then: a sweep
# asks for the same data once per cell. Any write changes a file's ctime (which, unlike its
# mtime, cannot be set back), so a changed file is hashed again.
_seen: dict[tuple, str] = {}


def data_digest(path: str | os.PathLike | None) -> str | None:
    """``"sha256:..."`` of the file or folder at ``path``; None when nothing is there (no path,
    or a name such as a Hub dataset id that the dataset resolves by itself)."""
    if not path:
        return None
    root = Path(path)
    try:
        if root.is_file():
            files = [("", root)]
        elif root.is_dir():
            files = sorted((file.relative_to(root).as_posix(), file) for file in _files(root))
        else:
            return None
        signature = (str(root.resolve()), *((name, *_stat(file)) for name, file in files))
        if signature not in _seen:
            if root.is_file():
                _seen[signature] = "sha256:" + _file_digest(root)
            else:
                outer = hashlib.sha256()
                for name, file in files:
                    outer.update(f"{name}\0{_file_digest(file)}\n".encode("utf-8", "surrogateescape"))
                _seen[signature] = "sha256:" + outer.hexdigest()
        return _seen[signature]
    except OSError as exc:
        raise DatasetError(f"{getattr(exc, 'filename', None) or path}: cannot read it to fingerprint the data "
                           f"({exc.strerror or exc})") from None


def _files(root: Path):
    """Every file under ``root``, following linked folders once each (a link cycle ends there)."""
    visited = set()
    for folder, subfolders, names in os.walk(root, followlinks=True, onerror=_raise):
        info = os.stat(folder)
        if (info.st_dev, info.st_ino) in visited:
            subfolders.clear()
            continue
        visited.add((info.st_dev, info.st_ino))
        for name in names:
            file = Path(folder) / name
            if file.is_file():
                yield file


def _raise(error: OSError):
    raise error


def _stat(file: Path) -> tuple[int, ...]:
    info = file.stat()
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def _file_digest(file: Path) -> str:
    digest = hashlib.sha256()
    with open(file, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def backbone_digest(backbone) -> str:
    """``"sha256:..."`` of a backbone's identity (what its generation cache key holds: name, options
    without secrets, and for a local model folder its files' names, sizes and times), so that a sweep
    runs a cell again after a model is trained again into the same folder."""
    identity = json.dumps(backbone.identity(), sort_keys=True, default=str, ensure_ascii=False)
    return "sha256:" + hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()


def hash64(text: str) -> int:
    """A 64-bit hash of ``text``, for indexes that hold a million keys in 8 bytes each (ids, group
    keys): two texts share one with odds of about 1 in 3.7 x 10^7 among a million."""
    data = text.encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")
