"""The predictions file of ``ctrlkit evaluate``, read once and indexed by id, so that a million
predictions cost a few bytes each in memory rather than their text.

Each line is checked as it is read (an ``id``, a string ``prediction``, no id twice); the index
keeps, per line, a 64-bit hash of its id, where the line starts and its number. A prediction is
read again from the file when its example is scored, and its id compared with the example's, so a
hash shared by two ids (odds of about 1 in 3.7 x 10^7 among a million) is an error, never a wrong match.
"""

from __future__ import annotations

import os
from array import array
from typing import Iterable

import numpy as np

from .digest import hash64
from .errors import DatasetError
from .files import read_jsonl_line, read_jsonl_offsets
from .intake import Intake


def id_hashes(identifiers: Iterable[str]) -> np.ndarray:
    return np.fromiter((hash64(identifier) for identifier in identifiers), dtype=np.uint64)


class PredictionIndex:
    """The lines of a predictions file by id. ``find`` says which ids have a line; ``records``
    reads the lines of some ids; ``unused`` names the lines no example asked for."""

    def __init__(self, path: str):
        self.path = path
        self.state = _file_state(path)
        hashes, offsets, lines = array("Q"), array("q"), array("q")
        intake = Intake(path)
        for line, offset, record in read_jsonl_offsets(path):
            record = checked_prediction(record, path, line, intake)
            hashes.append(hash64(str(record["id"])))
            offsets.append(offset)
            lines.append(line)
        intake.report()
        order = np.argsort(np.frombuffer(hashes, dtype=np.uint64), kind="stable")
        self.hashes = np.frombuffer(hashes, dtype=np.uint64)[order]
        self.offsets = np.frombuffer(offsets, dtype=np.int64)[order]
        self.lines = np.frombuffer(lines, dtype=np.int64)[order]
        self._refuse_duplicates()
        self.used = np.zeros(len(self.hashes), dtype=bool)

    def __len__(self) -> int:
        return len(self.hashes)

    def _refuse_duplicates(self) -> None:
        """One error naming the first line (in the file) whose id an earlier line has."""
        same = np.flatnonzero(self.hashes[1:] == self.hashes[:-1])
        if not len(same):
            return
        repeats = []
        for at in same:
            first, second = self._record(at), self._record(at + 1)
            if str(first["id"]) == str(second["id"]):  # 1 and "1" are one id, as the index keys it
                repeats.append((max(self.lines[at], self.lines[at + 1]), second["id"]))
            else:
                raise DatasetError(f"{self.path}: ids {shown_id(first['id'])!r} and {shown_id(second['id'])!r} share "
                                   "one index hash; give one of them another id")
        if repeats:
            line, identifier = min(repeats)
            raise DatasetError(f"{self.path}:{line}: duplicate id '{shown_id(identifier)}'")

    def _record(self, at: int) -> dict:
        if _file_state(self.path) != self.state:
            raise DatasetError(f"{self.path} changed while it was evaluated; nothing was written; evaluate it again")
        record = read_jsonl_line(self.path, int(self.offsets[at]), int(self.lines[at]))
        return checked_prediction(record, self.path, int(self.lines[at]), Intake(self.path))

    def find(self, identifiers: list[str]) -> np.ndarray:
        """For each id, whether a line has it (marking those lines used)."""
        hashes = id_hashes(identifiers)
        at = np.minimum(np.searchsorted(self.hashes, hashes), max(len(self.hashes) - 1, 0))
        found = (self.hashes[at] == hashes) if len(self.hashes) else np.zeros(len(hashes), dtype=bool)
        self.used[at[found]] = True
        return found

    def records(self, identifiers: list[str]) -> list[dict]:
        """The cleaned line of each id (every one must have a line: :meth:`find` said so)."""
        at = np.minimum(np.searchsorted(self.hashes, id_hashes(identifiers)), len(self.hashes) - 1)
        records = []
        for identifier, position in zip(identifiers, at):
            record = self._record(position)
            if str(record["id"]) != identifier:
                raise DatasetError(f"{self.path}: ids {shown_id(identifier)!r} and {shown_id(record['id'])!r} share one "
                                   "index hash; give one of them another id")
            records.append(record)
        return records

    def unused(self) -> tuple[int, str | None]:
        """How many lines no example asked for, and the id of the first of them in the file."""
        left = np.flatnonzero(~self.used)
        if not len(left):
            return 0, None
        first = left[np.argmin(self.lines[left])]
        return len(left), str(self._record(first)["id"])


def shown_id(identifier) -> str:
    """An id as a message quotes it: cut to 80 characters (a 1 MB id must not make a 1 MB line)."""
    text = str(identifier)
    return text if len(text) <= 80 else text[:77] + "..."


def checked_prediction(record: dict, path: str, line: int, intake: Intake) -> dict:
    """A predictions line cleaned (lone surrogates to U+FFFD, NaN or infinite numbers to null, as
    ``intake`` counts), with its ``id`` and string ``prediction`` required."""
    record = {intake.text(name, "given"): intake.value(value, name if name in ("id", "prediction") else "given")
              for name, value in record.items()}
    if record.get("id") in (None, ""):
        raise DatasetError(f"{path}:{line}: field 'id' is missing")
    if "prediction" not in record:
        raise DatasetError(f"{path}:{line}: field 'prediction' is missing (fields: {', '.join(record)})")
    if not isinstance(record["prediction"], str):
        raise DatasetError(f"{path}:{line}: field 'prediction' must be a string, got "
                           f"{'null' if record['prediction'] is None else type(record['prediction']).__name__}")
    return record


def _file_state(path: str) -> tuple:
    """What tells that a file was replaced or changed: its inode, size and modification time."""
    try:
        found = os.stat(path)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return found.st_ino, found.st_size, found.st_mtime_ns
