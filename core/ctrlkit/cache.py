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
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import time
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Iterator

from .errors import CtrlkitError
from .files import to_json

FILE_NAME = "cache.sqlite3"
BUSY_TIMEOUT_S = 30.0
_NAMESPACE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def cache_dir() -> Path:
    """``$CTRLKIT_CACHE_DIR``, else ``~/.cache/ctrlkit`` (read at each use, so tests can move it)."""
    return Path(os.environ.get("CTRLKIT_CACHE_DIR") or Path.home() / ".cache" / "ctrlkit")


def cache_key(key_parts: Any) -> str:
    """sha256 of the canonical JSON of ``key_parts`` (sorted keys, no spaces, unicode kept; a lone
    surrogate, which UTF-8 cannot encode, is hashed as its own code point)."""
    canonical = json.dumps(key_parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


class Cache:
    """JSON values by key in the namespace's table: ``Cache("judge").get(parts)``.

    ``get`` returns None for a missing key, so None itself is not worth storing.
    """

    def __init__(self, namespace: str):
        if not _NAMESPACE.fullmatch(namespace):
            raise ValueError(f"cache namespace must be an identifier, got {namespace!r}")
        self.namespace = namespace
        self.path = cache_dir() / FILE_NAME
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._use_wal()
            with self._connection() as connection:
                connection.execute(f"CREATE TABLE IF NOT EXISTS {namespace} "
                                   "(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        except (OSError, sqlite3.Error) as exc:
            raise CtrlkitError(f"cannot open the cache at {self.path}: {exc} "
                               "(set CTRLKIT_CACHE_DIR to a writable folder)") from None

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
            except sqlite3.OperationalError:
                if attempt == 199:
                    raise
                time.sleep(0.05)

    def get(self, key_parts: Any) -> Any:
        with self._connection() as connection:
            row = connection.execute(f"SELECT value FROM {self.namespace} WHERE key = ?",
                                     (cache_key(key_parts),)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key_parts: Any, value: Any) -> None:
        """Store ``value`` (JSON-serialisable), replacing what the key held; as strict JSON, so a
        lone surrogate is stored as U+FFFD and a NaN as null (``files.to_json``)."""
        with self._connection() as connection:
            connection.execute(f"INSERT OR REPLACE INTO {self.namespace} (key, value) VALUES (?, ?)",
                               (cache_key(key_parts), to_json(value)))

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """A fresh connection whose block is one transaction: committed on success, rolled back
        on error, and closed either way."""
        with closing(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)) as connection:
            connection.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable enough for a cache, far fewer fsyncs
            with connection:
                yield connection
