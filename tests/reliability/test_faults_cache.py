"""Faults in the SQLite cache ($CTRLKIT_CACHE_DIR/cache.sqlite3): damaged pages and values, a file
that is not a database, cut in half or with a damaged WAL, a table of another shape, a cache
folder that is a file, writes refused (read-only, disk full, I/O error, locked past the busy
timeout) on the Nth write. Each ends in one warning line naming the file, the run goes on without
the cache and gives the metrics of an uncached run; the file is never deleted. ``--no-cache``
never touches the cache at all.

Tests run as root here, where chmod stops nothing, so refusals are injected at the SQLite level:
a read-only connection (``mode=ro``), a page limit (SQLite's own "database or disk is full"), a
real lock held by another connection, or a connection that raises on its Nth INSERT.
"""

import json
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

import ctrlkit
from ctrlkit import cache as cache_module
from helpers import run_ctrlkit
from helpers.faulty_chat import OPENAI_FAULT, FaultyChat, start_chat

RUN = dict(controller="tag", metrics=["stas"], baseline=None, limit=8, batch_size=2)
CLI = ["run", "-c", "tag", "-m", "stas", "--limit", "8", "--batch-size", "2", "--no-baseline"]
PAGE = 4096
FILLER_ROWS = 18


@pytest.fixture(scope="module")
def uncached():
    """The metrics every faulty run must give: those of a run without any cache."""
    return ctrlkit.run(**RUN, cache=False).metrics


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _populate(folder: Path, limit: int = 8) -> Path:
    """A cache that a finished run filled (its WAL checkpointed into the file on close)."""
    result = ctrlkit.run(**{**RUN, "limit": limit})
    assert result.results["cache"] == {"hits": 0, "misses": limit}
    return folder / cache_module.FILE_NAME


def _rows(path: Path, table: str = "generations") -> int:
    with sqlite3.connect(path) as connection:
        return connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def _cache_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "ctrlkit" and "the cache " in r.getMessage()]


def _one_warning(caplog, path: Path, says: str) -> None:
    warnings = _cache_warnings(caplog)
    assert len(warnings) == 1, warnings
    assert str(path) in warnings[0] and says in warnings[0] and "\n" not in warnings[0]
    assert warnings[0].startswith("ctrlkit: warning: the cache ")


def _cli_goes_on(folder: Path, out: Path, uncached: dict, says: str) -> str:
    """``ctrlkit run`` in a fresh process: exit 0, one warning line naming the file, no traceback,
    results.json with the uncached metrics."""
    result = run_ctrlkit(*CLI, "-o", str(out), env={"CTRLKIT_CACHE_DIR": str(folder)})
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    warnings = [line for line in result.stderr.splitlines() if "the cache " in line]
    assert len(warnings) == 1, result.stderr
    assert warnings[0].startswith("ctrlkit: warning: the cache ") and str(folder) in warnings[0]
    assert says in warnings[0], warnings[0]
    assert json.loads((out / "results.json").read_text())["metrics"] == uncached
    return warnings[0]


# ---------------------------------------------------------------- a damaged file, end to end


def _zero_table_page(data: bytes) -> bytes:
    return data[:PAGE] + bytes(PAGE) + data[2 * PAGE:]  # page 2: the generations table


def _garble_index_page(data: bytes) -> bytes:
    return data[:2 * PAGE] + b"\xff" * 12 + data[2 * PAGE + 12:]  # page 3: the key index's header


def _cut_in_half(data: bytes) -> bytes:
    return data[:len(data) // 2]


def _not_a_database(data: bytes) -> bytes:
    return b"these are someone's notes, not a database\n" * 300


DAMAGE = {"zeroed table page": (_zero_table_page, "database disk image is malformed"),
          "garbled index page": (_garble_index_page, "database disk image is malformed"),
          "cut in half": (_cut_in_half, "database disk image is malformed"),
          "not a database": (_not_a_database, "file is not a database")}


def _damage(folder: Path, damage: str) -> tuple[Path, bytes]:
    path = _populate(folder)
    assert path.stat().st_size == 3 * PAGE  # schema, table, index: the pages the damage aims at
    damaged = DAMAGE[damage][0](path.read_bytes())
    path.write_bytes(damaged)
    return path, damaged


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_cache_file_is_one_warning_and_the_run_gives_the_uncached_metrics(damage, folder, tmp_path,
                                                                                   uncached, caplog):
    path, damaged = _damage(folder, damage)
    result = ctrlkit.run(**RUN, out=str(tmp_path / "run"))
    assert result.metrics == uncached
    assert json.loads((tmp_path / "run" / "results.json").read_text())["metrics"] == uncached
    _one_warning(caplog, path, DAMAGE[damage][1])
    assert path.exists(), "the user's cache file is never deleted"
    if damage == "not a database":
        assert path.read_bytes() == damaged, "nor written over"


@pytest.mark.parametrize("damage", ["zeroed table page", "not a database"])
def test_the_command_says_a_damaged_cache_in_one_line_and_exits_0(damage, folder, tmp_path, uncached):
    _damage(folder, damage)
    _cli_goes_on(folder, tmp_path / "run", uncached, DAMAGE[damage][1])


def test_a_damaged_value_that_still_parses_is_computed_again_not_used(folder, tmp_path, uncached, caplog):
    path = _populate(folder)
    with sqlite3.connect(path) as connection:
        stored = [row[0] for row in connection.execute("SELECT value FROM generations")]
    data = path.read_bytes()
    # one letter changed inside a stored summary: the page stays valid, the JSON still parses
    text = stored[0][-60:-10].encode("utf-8")
    at = data.index(text) + 20
    flipped = data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]
    assert flipped != data
    path.write_bytes(flipped)
    result = ctrlkit.run(**RUN, out=str(tmp_path / "run"))
    assert result.metrics == uncached
    _one_warning(caplog, path, "damaged entries")
    assert result.results["cache"] == {"hits": 7, "misses": 1}
    caplog.clear()
    again = ctrlkit.run(**RUN)  # the entry was rewritten: all hits, no warning
    assert again.results["cache"] == {"hits": 8, "misses": 0} and not _cache_warnings(caplog)


@pytest.mark.parametrize("seed", range(6))
def test_random_bytes_anywhere_past_the_header_never_change_the_metrics(seed, folder, uncached, caplog):
    path = _populate(folder)
    data = bytearray(path.read_bytes())
    rng = random.Random(seed)
    start = rng.randrange(PAGE, len(data) - 64)  # page 1's header damaged is "not a database", tested above
    data[start:start + 64] = rng.randbytes(64)
    path.write_bytes(bytes(data))
    assert ctrlkit.run(**RUN).metrics == uncached
    assert len(_cache_warnings(caplog)) <= 1


def test_a_damaged_wal_file_left_by_a_crash_is_ignored_by_sqlite_and_the_run_completes(folder, tmp_path,
                                                                                     uncached):
    path = _populate(folder, limit=4)
    holder = sqlite3.connect(path)  # keeps the WAL from being checkpointed away when the run ends
    holder.execute("SELECT 1 FROM generations").fetchall()
    ctrlkit.run(**RUN)  # the 4 other generations are in the WAL only
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    shutil.copy(path, crashed / path.name)
    wal = (folder / (path.name + "-wal")).read_bytes()
    holder.close()
    assert len(wal) > 2 * PAGE
    middle = len(wal) // 2
    (crashed / (path.name + "-wal")).write_bytes(wal[:middle] + b"\x00" * 512 + wal[middle + 512:])
    result = run_ctrlkit(*CLI, "-o", str(tmp_path / "run"), env={"CTRLKIT_CACHE_DIR": str(crashed)})
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert json.loads((tmp_path / "run" / "results.json").read_text())["metrics"] == uncached


# ---------------------------------------------------------------- a cache that cannot be opened


def test_a_cache_folder_that_is_a_file_is_one_warning_and_the_run_goes_on(tmp_path, uncached):
    (tmp_path / "file").write_text("not a folder")
    line = _cli_goes_on(tmp_path / "file", tmp_path / "run", uncached, "cannot be opened")
    assert "Not a directory" in line or "File exists" in line
    assert (tmp_path / "file").read_text() == "not a folder"


@pytest.mark.parametrize("columns", ["key TEXT PRIMARY KEY, value TEXT NOT NULL, created INTEGER NOT NULL",
                                     "k TEXT PRIMARY KEY, v TEXT"])
def test_a_table_of_another_shape_is_one_warning_and_left_alone(columns, folder, tmp_path, uncached, caplog):
    folder.mkdir()
    path = folder / cache_module.FILE_NAME
    with sqlite3.connect(path) as connection:
        connection.execute(f"CREATE TABLE generations ({columns})")
    result = ctrlkit.run(**RUN, out=str(tmp_path / "run"))
    assert result.metrics == uncached
    _one_warning(caplog, path, "of another shape")
    with sqlite3.connect(path) as connection:  # the table is as it was: same columns, no rows added
        schema = connection.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
        assert schema == [(f"CREATE TABLE generations ({columns})",)]
        assert connection.execute("SELECT COUNT(*) FROM generations").fetchone() == (0,)


def test_a_table_from_before_checksums_is_read_and_stays_readable_by_an_older_ctrlkit(folder, uncached, caplog):
    """A cache written by the previous version (no checksum column) keeps its hits; the column is
    added, and what this version writes is plain JSON in ``value`` as before."""
    done = ctrlkit.run(**{**RUN, "limit": 4}, cache=False)
    folder.mkdir()
    path = folder / cache_module.FILE_NAME
    with sqlite3.connect(path) as connection:  # what the previous version wrote for those 4 examples
        connection.execute("CREATE TABLE generations (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        generations = iter(sample["prediction"] for sample in done.samples)
        keys = _generation_keys(4)
        connection.executemany("INSERT INTO generations VALUES (?, ?)",
                               [(key, json.dumps(next(generations), ensure_ascii=False)) for key in keys])
    result = ctrlkit.run(**RUN)
    assert result.metrics == uncached and result.results["cache"] == {"hits": 4, "misses": 4}
    assert not _cache_warnings(caplog)
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT value, checksum FROM generations").fetchall()
    assert len(rows) == 8 and sum(checksum is None for _, checksum in rows) == 4
    assert all(isinstance(json.loads(value), str) for value, _ in rows)  # what an older reader does


def test_processes_starting_together_on_a_table_from_before_checksums_all_use_it(folder):
    folder.mkdir()
    path = folder / cache_module.FILE_NAME
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE shared (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    script = ("import sys\nfrom ctrlkit.cache import Cache\n"
              "for i in range(20):\n"
              "    Cache('shared').put([sys.argv[1], i], i)\n"
              "    assert Cache('shared').get([sys.argv[1], i]) == i\n")
    workers = [subprocess.Popen([sys.executable, "-c", script, str(worker)], stderr=subprocess.PIPE, text=True)
               for worker in range(4)]
    errors = [worker.communicate(timeout=120)[1] for worker in workers]
    assert [worker.returncode for worker in workers] == [0] * 4 and errors == [""] * 4, errors
    with sqlite3.connect(path) as connection:
        assert [row[1] for row in connection.execute("PRAGMA table_info(shared)")] == list(cache_module.COLUMNS)
        assert connection.execute("SELECT COUNT(*) FROM shared WHERE checksum IS NOT NULL").fetchone() == (80,)


def test_a_checksum_column_another_process_added_first_is_taken_as_it_is(folder, caplog, monkeypatch):
    """The race above made certain: another process adds the column between this one's look at the
    table and its own ALTER TABLE."""
    folder.mkdir()
    path = folder / cache_module.FILE_NAME
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE shared (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    real, looks = cache_module.Cache._columns, []

    def columns_then_another_process_alters(self, connection):
        looks.append(real(self, connection))
        if len(looks) == 1:
            with sqlite3.connect(path) as other:
                other.execute("ALTER TABLE shared ADD COLUMN checksum TEXT")
        return looks[-1]

    monkeypatch.setattr(cache_module.Cache, "_columns", columns_then_another_process_alters)
    cache = cache_module.Cache("shared")
    assert looks[0] == ("key", "value") and not cache.off and cache.writable and not _cache_warnings(caplog)
    cache.put(["a"], "x")
    assert cache.get(["a"]) == "x"


def _generation_keys(limit: int) -> list[str]:
    """The cache keys a run of RUN with ``limit`` gives its inputs, in the dataset's order."""
    keys = []
    real = cache_module.Cache.get

    def record(self, key_parts):
        keys.append(cache_module.cache_key(key_parts))
        return real(self, key_parts)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cache_module.Cache, "get", record)
        patch.setenv("CTRLKIT_CACHE_DIR", str(Path(os.environ["CTRLKIT_CACHE_DIR"]).parent / "keys"))
        ctrlkit.run(**{**RUN, "limit": limit})
    return keys


# ---------------------------------------------------------------- a file or folder that is really read-only


@contextmanager
def _read_only(path: Path):
    """``path`` made read-only by the operating system, root included: chattr +i (immutable) as
    root, whom chmod does not stop; chmod otherwise."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(mode & ~0o222)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    if not shutil.which("chattr") or subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode:
        pytest.skip("running as root where chattr +i is unavailable, and chmod does not stop root")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_read_only_cache_file_is_still_read_and_warned_about_once(folder, tmp_path, uncached):
    path = _populate(folder, limit=4)
    before = path.read_bytes()
    with _read_only(path):
        line = _cli_goes_on(folder, tmp_path / "run", uncached, "cannot be written")
    assert "readonly database" in line
    assert json.loads((tmp_path / "run" / "results.json").read_text())["cache"] == {"hits": 4, "misses": 4}
    assert path.read_bytes() == before


def test_a_read_only_cache_folder_is_one_warning_and_the_run_goes_on(folder, tmp_path, uncached):
    path = _populate(folder, limit=4)
    assert sorted(p.name for p in folder.iterdir()) == [path.name]  # no WAL left: one must be created
    with _read_only(folder):
        line = _cli_goes_on(folder, tmp_path / "run", uncached, "cannot be opened")
    assert "unable to open database file" in line


# ---------------------------------------------------------------- writes refused mid-run


def _connect_with(monkeypatch, prepare):
    """Every cache connection goes through ``prepare(connection)`` first."""
    real = sqlite3.connect

    def connect(*args, **kwargs):
        connection = real(*args, **kwargs)
        prepare(connection)
        return connection

    monkeypatch.setattr(cache_module.sqlite3, "connect", connect)


def _fail_the_nth_insert(monkeypatch, error: Exception, n: int) -> dict:
    real, calls = sqlite3.connect, {"inserts": 0}

    class Failing(sqlite3.Connection):
        def execute(self, sql, *args):
            if sql.startswith("INSERT"):
                calls["inserts"] += 1
                if calls["inserts"] >= n:
                    raise error
            return super().execute(sql, *args)

    monkeypatch.setattr(cache_module.sqlite3, "connect", lambda *a, **k: real(*a, factory=Failing, **k))
    return calls


WRITE_ERRORS = {"disk I/O error": sqlite3.OperationalError("disk I/O error"),
                "disk full": sqlite3.OperationalError("database or disk is full"),
                "malformed": sqlite3.DatabaseError("database disk image is malformed"),
                "read-only": sqlite3.OperationalError("attempt to write a readonly database")}


@pytest.mark.parametrize("error", WRITE_ERRORS)
def test_a_write_failing_on_the_nth_batch_warns_once_and_keeps_the_generations(error, folder, tmp_path, uncached,
                                                                               caplog, monkeypatch):
    calls = _fail_the_nth_insert(monkeypatch, WRITE_ERRORS[error], n=3)  # batch 2 of 4
    result = ctrlkit.run(**RUN, out=str(tmp_path / "run"))
    assert result.metrics == uncached
    assert json.loads((tmp_path / "run" / "results.json").read_text())["metrics"] == uncached
    path = folder / cache_module.FILE_NAME
    _one_warning(caplog, path, "cannot be written")
    assert str(WRITE_ERRORS[error]) in _cache_warnings(caplog)[0]
    assert calls["inserts"] == 3, "after the failure the cache is left alone for the rest of the run"
    monkeypatch.undo()
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(folder))
    caplog.clear()
    resumed = ctrlkit.run(**RUN)  # the next run uses the cache again, keeping what was stored
    assert resumed.results["cache"] == {"hits": 2, "misses": 6} and not _cache_warnings(caplog)
    assert resumed.metrics == uncached


def test_after_a_failed_write_the_cache_is_still_read_for_the_rest_of_the_run(folder, caplog, monkeypatch):
    with_baseline = {**RUN, "baseline": "none"}
    ctrlkit.run(**{**with_baseline, "limit": 4})  # both arms of the first 4 examples cached
    calls = _fail_the_nth_insert(monkeypatch, sqlite3.OperationalError("database or disk is full"), n=1)
    result = ctrlkit.run(**with_baseline)
    # the run arm's first write fails; the baseline arm still reads its 4 hits, and writes nothing
    assert result.results["cache"] == {"hits": 8, "misses": 8} and calls["inserts"] == 1
    assert result.metrics == ctrlkit.run(**with_baseline, cache=False).metrics
    _one_warning(caplog, folder / cache_module.FILE_NAME, "cannot be written (database or disk is full)")


def test_a_read_only_cache_file_gives_its_hits_and_warns_once_about_writes(folder, tmp_path, uncached, caplog,
                                                                           monkeypatch):
    path = _populate(folder, limit=4)
    before = path.read_bytes()
    real = sqlite3.connect
    monkeypatch.setattr(cache_module.sqlite3, "connect",
                        lambda target, **k: real(f"file:{target}?mode=ro", uri=True, **k))
    result = ctrlkit.run(**RUN)
    assert result.metrics == uncached and result.results["cache"] == {"hits": 4, "misses": 4}
    _one_warning(caplog, path, "readonly database")
    assert path.read_bytes() == before


def test_a_full_disk_stops_the_cache_not_the_run(folder, uncached, caplog, monkeypatch):
    path = _populate(folder, limit=4)
    pages = path.stat().st_size // PAGE
    # SQLite's own "database or disk is full" (SQLITE_FULL), as on a full disk: the file may not grow
    _connect_with(monkeypatch, lambda connection: connection.execute(f"PRAGMA max_page_count = {pages}"))
    result = ctrlkit.run(**{**RUN, "limit": 60})
    assert result.metrics == ctrlkit.run(**{**RUN, "limit": 60}, cache=False).metrics
    _one_warning(caplog, path, "database or disk is full")
    assert 4 < _rows(path) < 60


def test_a_file_size_limit_refusing_writes_mid_run_is_one_warning_in_a_fresh_process(folder, tmp_path):
    """The operating system refuses the cache's writes mid-run (RLIMIT_FSIZE: EFBIG, as a full disk
    refuses them with ENOSPC), root included; the outputs, smaller than the limit, are written."""
    path = _populate(folder, limit=4)
    filler = cache_module.Cache("filler")  # other entries, so the file nears the limit before the run
    for number in range(FILLER_ROWS):
        filler.put(["filler", number], "x" * 1000)
    del filler
    limit = 32 * 1024  # the -shm index needs 32 KiB
    command = [sys.executable, "-m", "ctrlkit", *CLI, "--limit", "20", "-o", str(tmp_path / "run")]
    result = subprocess.run(command, env={**os.environ, "CTRLKIT_CACHE_DIR": str(folder)}, capture_output=True,
                            text=True, timeout=120,
                            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "the cache " in line]
    assert warnings == [f"ctrlkit: warning: the cache {path} cannot be written (disk I/O error); going on, "
                        "reading it but storing nothing new in it for this run"]
    written = json.loads((tmp_path / "run" / "results.json").read_text())
    assert written["n_examples"] == 20 and written["cache"] == {"hits": 4, "misses": 16}
    assert written["metrics"] == ctrlkit.run(**{**RUN, "limit": 20}, cache=False).metrics
    assert 4 < _rows(path) < 20


def test_a_lock_held_past_the_busy_timeout_is_one_warning_and_the_run_completes(folder, uncached, caplog,
                                                                               monkeypatch):
    path = _populate(folder, limit=4)
    monkeypatch.setattr(cache_module, "BUSY_TIMEOUT_S", 0.2)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writing, and not letting go
    try:
        result = ctrlkit.run(**RUN)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert result.metrics == uncached and result.results["cache"] == {"hits": 4, "misses": 4}
    _one_warning(caplog, path, "database is locked")
    assert _rows(path) == 4


def test_a_lock_released_within_the_busy_timeout_is_waited_for_as_before(folder, uncached, caplog):
    path = _populate(folder, limit=4)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    threading.Timer(0.5, lambda: (other.execute("COMMIT"), other.close())).start()
    started = time.monotonic()
    result = ctrlkit.run(**RUN)
    assert result.metrics == uncached and not _cache_warnings(caplog)
    assert _rows(path) == 8 and time.monotonic() - started >= 0.5


# ---------------------------------------------------------------- judge answers and --no-cache


@pytest.fixture
def judge_server(monkeypatch):
    monkeypatch.setenv("no_proxy", "*")
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    chat = FaultyChat("drop", good=10**6)
    start_chat(chat)
    yield chat
    chat.http.shutdown()
    chat.http.server_close()


def _judged(chat, **extra):
    return dict(controller="none", backbone="extractive", metrics=["fm"], baseline=None, limit=6, judge="openai:m",
                options={"openai": {"base_url": chat.url, **OPENAI_FAULT}}, **extra)


def test_evaluate_with_a_judge_and_a_broken_cache_warns_once_and_scores_as_uncached(judge_server, folder, tmp_path,
                                                                                  caplog):
    run = ctrlkit.run(**_judged(judge_server), cache=False, out=str(tmp_path / "run"))
    arguments = dict(predictions=str(tmp_path / "run" / "samples.jsonl"), metrics=["fm"], limit=6,
                     judge="openai:m", options={"openai": {"base_url": judge_server.url, **OPENAI_FAULT}})
    folder.mkdir()
    path = folder / cache_module.FILE_NAME
    path.write_bytes(_not_a_database(b""))
    result = ctrlkit.evaluate(**arguments)
    assert result.metrics == run.metrics and result.metrics["fm"]["failed"] == 0
    _one_warning(caplog, path, "file is not a database")


def test_a_broken_cache_is_reported_once_for_generations_and_judge_answers(judge_server, folder, caplog):
    reference = ctrlkit.run(**_judged(judge_server), cache=False).metrics
    folder.mkdir()
    path = folder / cache_module.FILE_NAME
    path.write_bytes(_not_a_database(b""))
    result = ctrlkit.run(**_judged(judge_server))
    assert result.metrics == reference and result.metrics["fm"]["failed"] == 0
    _one_warning(caplog, path, "file is not a database")


def test_no_cache_never_touches_the_cache_even_for_judge_answers(judge_server, folder):
    ctrlkit.run(**_judged(judge_server), cache=False)
    assert not folder.exists(), "--no-cache created the cache folder"
    _populate(folder)
    path = folder / cache_module.FILE_NAME
    before = (path.read_bytes(), path.stat().st_mtime_ns, sorted(p.name for p in folder.iterdir()))
    asked = judge_server.answered
    ctrlkit.run(**_judged(judge_server), cache=False)
    assert judge_server.answered > asked
    assert (path.read_bytes(), path.stat().st_mtime_ns, sorted(p.name for p in folder.iterdir())) == before
    assert "judge" not in {row[0] for row in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")}


def test_no_cache_on_the_command_line_leaves_a_broken_cache_unread(tmp_path, uncached):
    (tmp_path / "file").write_text("not a folder")
    result = run_ctrlkit(*CLI, "--no-cache", "-o", str(tmp_path / "run"),
                         env={"CTRLKIT_CACHE_DIR": str(tmp_path / "file")})
    assert result.returncode == 0 and "the cache " not in result.stderr, result.stderr
    assert json.loads((tmp_path / "run" / "results.json").read_text())["metrics"] == uncached


# ---------------------------------------------------------------- direct use


def test_a_cache_given_up_on_reads_nothing_writes_nothing_and_deletes_nothing(folder, caplog):
    folder.mkdir()
    path = folder / cache_module.FILE_NAME
    path.write_bytes(b"\x00" * 3 * PAGE)  # zero bytes throughout: not a database
    before = path.read_bytes()
    with cache_module.scope():
        cache = cache_module.Cache("judge")
        cache.put(["a"], "x")
        assert cache.get(["a"]) is None and cache.off
        assert cache_module.Cache("generations").off  # the same file, the same run: not tried again
    assert path.read_bytes() == before
    assert len(_cache_warnings(caplog)) == 1
