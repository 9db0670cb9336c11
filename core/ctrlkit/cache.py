"""An on-disk key-value cache, so that a rerun or a resumed run never pays twice for an answer
(a judge's rating now, generations later).

One SQLite file, ``$CTRLKIT_CACHE_DIR/cache.sqlite3`` (default ``~/.cache/ctrlkit``), one table
per namespace. SQLite because it is in the standard library and already solves what a
folder of JSON files would not: several processes (parallel runs, a sweep) read and write the
same cache at once. WAL mode lets readers proceed while one process writes; the busy timeout
makes a writer wait its turn instead of failing; every operation is its own short transaction
on its own connection, so no process holds a lock for long and nothing is shared across
threads or forks.

A key is the sha256 of a canonical JSON of whatever determines the value (for a judge: its
backbone name, its options without secrets, and the messages), so keys are short and equal
inputs give equal keys whatever the order of dict entries.

A cache only saves time, so it never stops a run. A cache that cannot be opened or read
(damaged, not a database, a table of another shape, a folder that is a file) is reported in
one warning line naming the file, and the run goes on without it, computing what it would have
read; one that cannot be written (read-only, disk full, locked past the busy timeout) is
reported likewise and still read, but written no more. Each value is stored with a checksum of
its key and text, so a damaged page that still parses is a miss (computed again and
rewritten), never a wrong answer. The file is never deleted or moved. A run is one ``scope``:
each fault is reported once in it, and ``scope(enabled=False)`` (``--no-cache``) keeps the run
off the disk altogether.

Inside ``recording()`` every entry a cache reads or stores is also kept, as stored (the key's hash
and the value's JSON text), for :func:`store` to copy into the cache of another process: a Ray
sweep cell's entries go from its worker's node to the driver's (:mod:`ctrlkit.executors.ray_cells`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sqlite3
import time
from contextlib import closing, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .errors import CtrlkitError
from .files import to_json
from .intake import check_nesting

FILE_NAME = "cache.sqlite3"
BUSY_TIMEOUT_S = 30.0
COLUMNS = ("key", "value", "checksum")
_NAMESPACE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
logger = logging.getLogger("ctrlkit")


def cache_dir() -> Path:
    """``$CTRLKIT_CACHE_DIR``, else ``~/.cache/ctrlkit`` (read at each use, so tests can move it)."""
    return Path(os.environ.get("CTRLKIT_CACHE_DIR") or Path.home() / ".cache" / "ctrlkit")


def cache_key(key_parts: Any) -> str:
    """sha256 of the canonical JSON of ``key_parts`` (sorted keys, no spaces, unicode kept; a lone
    surrogate, which UTF-8 cannot encode, is hashed as its own code point)."""
    canonical = json.dumps(key_parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class _Scope:
    """What one run knows of the cache: whether it is off, and which files it stopped using, stopped
    writing to, or found damaged entries in (each reported once)."""

    off: bool = False
    unused: set[Path] = field(default_factory=set)
    unwritable: set[Path] = field(default_factory=set)
    damaged: set[Path] = field(default_factory=set)


_scope: ContextVar[_Scope] = ContextVar("ctrlkit_cache_scope", default=_Scope())  # outside any run: the process
Recorded = dict[str, dict[str, str]]
"""Cache entries as stored: ``{namespace: {key (the sha256 of its parts): value (its JSON text)}}``."""
_recording: ContextVar[Recorded | None] = ContextVar("ctrlkit_cache_recording", default=None)


@contextmanager
def scope(enabled: bool = True) -> Iterator[None]:
    """One run's use of the cache. Without ``enabled``, every ``Cache`` made inside is off: it
    neither reads nor writes, and the cache folder and file are not touched (``--no-cache``, judge
    answers included). Each fault of a file is reported once inside, and what failed (the whole
    file, or its writes) is not tried again until the scope ends."""
    token = _scope.set(_Scope(off=not enabled or _scope.get().off))
    try:
        yield
    finally:
        _scope.reset(token)


@contextmanager
def recording() -> Iterator[Recorded]:
    """Keep every entry that a ``Cache`` made inside finds (a hit) or stores, in the mapping this
    yields, whether or not its file could be read or written: what a run inside used or made. A
    cache that is off (``scope(enabled=False)``) keeps nothing. A key stored twice keeps its last value."""
    entries: Recorded = {}
    token = _recording.set(entries)
    try:
        yield entries
    finally:
        _recording.reset(token)


def store(entries: Recorded) -> None:
    """Write ``entries`` (kept by :func:`recording`, here or in another process) into this
    process's cache as they were stored there, replacing what their keys held; one transaction
    per namespace. Inside ``scope(enabled=False)`` nothing is written; a file that cannot be
    written is reported as ``Cache.put`` reports it."""
    for namespace, stored in entries.items():
        Cache(namespace).put_stored(stored)


class Cache:
    """JSON values by key in the namespace's table: ``Cache("judge").get(parts)``.

    ``get`` returns None for a missing key, so None itself is not worth storing.
    """

    def __init__(self, namespace: str):
        if not _NAMESPACE.fullmatch(namespace):
            raise ValueError(f"cache namespace must be an identifier, got {namespace!r}")
        self.namespace = namespace
        self.path = cache_dir() / FILE_NAME
        self._scope = _scope.get()
        self._recorded = None if self._scope.off else _recording.get()
        self.off = self._scope.off or self.path in self._scope.unused
        self.writable = self.path not in self._scope.unwritable
        if self.off:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._use_wal()
            columns = self._create_table()
        except (OSError, sqlite3.Error) as exc:
            self._stop_using("cannot be opened", exc)
            return
        if columns != COLUMNS:
            self._stop_using(f"has a table '{namespace}' of another shape, from another version of ctrlkit",
                             f"columns {', '.join(columns)}; expected {', '.join(COLUMNS)}")

    def _create_table(self) -> tuple[str, ...]:
        """Create the namespace's table if missing, add the checksum column to one made before
        checksums (its rows are read unchecked), and return the table's columns."""
        with self._connection() as connection:
            connection.execute(f"CREATE TABLE IF NOT EXISTS {self.namespace} "
                               "(key TEXT PRIMARY KEY, value TEXT NOT NULL, checksum TEXT)")
            columns = self._columns(connection)
            if columns == COLUMNS[:2]:
                try:
                    connection.execute(f"ALTER TABLE {self.namespace} ADD COLUMN checksum TEXT")
                except sqlite3.OperationalError as exc:
                    if "duplicate column" not in str(exc):  # else another process added it first
                        raise
                columns = self._columns(connection)
        return columns

    def _columns(self, connection: sqlite3.Connection) -> tuple[str, ...]:
        return tuple(row[1] for row in connection.execute(f"PRAGMA table_info({self.namespace})"))

    def _use_wal(self) -> None:
        """Switch the file to WAL (persistent, stored in the file). Switching fails at once, without
        waiting on the busy timeout, while another process has the file open, as two runs starting
        together do; so read the mode first, and retry the switch for a while."""
        for attempt in range(200):
            try:
                with self._connection() as connection:
                    if connection.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
                        return
                    connection.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if attempt == 199 or "locked" not in str(exc):
                    raise
                time.sleep(0.05)

    def get(self, key_parts: Any) -> Any:
        if self.off:
            return None
        key = cache_key(key_parts)
        try:
            with self._connection() as connection:
                connection.text_factory = bytes  # a damaged value that is not UTF-8 is one bad entry, not a bad file
                row = connection.execute(f"SELECT value, checksum FROM {self.namespace} WHERE key = ?",
                                         (key,)).fetchone()
        except sqlite3.Error as exc:
            self._stop_using("cannot be read", exc)
            return None
        if row is None:
            return None
        try:
            text = _checked_text(key, *row)
            value = check_nesting(json.loads(text), "a cached value", ValueError)
        except (ValueError, RecursionError) as exc:
            self._report_damaged_entry(exc)
            return None
        self._record({key: text})
        return value

    def put(self, key_parts: Any, value: Any) -> None:
        """Store ``value`` (JSON-serialisable), replacing what the key held; as strict JSON, so a
        lone surrogate is stored as U+FFFD and a NaN as null (``files.to_json``)."""
        if self._recorded is None and (self.off or not self.writable):
            return
        try:
            stored = to_json(value)
        except CtrlkitError as exc:
            raise CtrlkitError(f"cannot store a value in the cache: {exc}") from None
        self.put_stored({cache_key(key_parts): stored})

    def put_stored(self, stored: dict[str, str]) -> None:
        """Store values as stored (``{key: JSON text}``, keys already hashed), in one transaction."""
        self._record(stored)
        if self.off or not self.writable or not stored:
            return
        try:
            with self._connection() as connection:
                for key, text in stored.items():
                    connection.execute(f"INSERT OR REPLACE INTO {self.namespace} (key, value, checksum) "
                                       "VALUES (?, ?, ?)", (key, text, _checksum(key, text)))
        except sqlite3.Error as exc:
            self._stop_writing(exc)

    def _record(self, stored: dict[str, str]) -> None:
        """Keep ``stored`` for the ``recording()`` this cache was made in, if any."""
        if self._recorded is not None:
            self._recorded.setdefault(self.namespace, {}).update(stored)

    def _stop_using(self, what: str, reason: Any) -> None:
        """Turn this cache, and every later one on the same file in this run, off; say so once."""
        self.off = True
        if self.path not in self._scope.unused:
            self._scope.unused.add(self.path)
            logger.warning("ctrlkit: warning: the cache %s %s (%s); going on without it for this run: what it "
                           "holds is computed again, nothing is stored (the file is left as it is; move it aside, "
                           "or set CTRLKIT_CACHE_DIR elsewhere, for a fresh cache)", self.path, what, reason)

    def _stop_writing(self, reason: Exception) -> None:
        """A write failed (read-only, disk full, locked past the busy timeout): keep reading, stop
        writing for the rest of the run, so each later result is not another wait and warning."""
        self.writable = False
        if self.path not in self._scope.unwritable:
            self._scope.unwritable.add(self.path)
            logger.warning("ctrlkit: warning: the cache %s cannot be written (%s); going on, reading it but "
                           "storing nothing new in it for this run", self.path, reason)

    def _report_damaged_entry(self, reason: Exception) -> None:
        if self.path not in self._scope.damaged:
            self._scope.damaged.add(self.path)
            logger.warning("ctrlkit: warning: the cache %s holds damaged entries (%s); they are computed "
                           "again and rewritten", self.path, reason)

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """A fresh connection whose block is one transaction: committed on success, rolled back
        on error, and closed either way."""
        with closing(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)) as connection:
            connection.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable enough for a cache, far fewer fsyncs
            with connection:
                yield connection


def _checksum(key: str, text: str) -> str:
    return hashlib.sha256(f"{key}\n{text}".encode("utf-8")).hexdigest()[:16]


def _checked_text(key: str, value: Any, checksum: Any) -> str:
    """The JSON text stored for ``key`` (read as bytes); ValueError when it is damaged: not UTF-8
    text, or text whose checksum does not match. A row without a checksum (written before checksums,
    or by an older ctrlkit sharing the file) is read as it is."""
    if not isinstance(value, bytes) or not isinstance(checksum, (bytes, type(None))):
        raise ValueError("a value or checksum that is not text")
    text = value.decode("utf-8")
    if checksum is not None and checksum.decode("utf-8") != _checksum(key, text):
        raise ValueError("checksum mismatch")
    return text
