"""``cache.recording()`` and ``cache.store()``: what a run's caches find or store, kept as stored and
written into another cache file (how a Ray sweep cell's entries reach the driver's cache; the
cluster side is in test_sweep_ray.py)."""

import sqlite3

import pytest

import ctrlkit
from ctrlkit.cache import FILE_NAME, Cache, recording, scope, store

RUN = dict(controller="tag", metrics=["stas"], baseline=None, limit=6, bootstrap=0,
           options={"extractive": {"lead_weight": 0.8125}})  # keys of this file's own


def _rows(folder, table="generations") -> dict:
    """``{key: (value, checksum)}`` of a cache file's table, read with sqlite3 itself."""
    with sqlite3.connect(folder / FILE_NAME) as connection:
        return {key: (value, checksum)
                for key, value, checksum in connection.execute(f"SELECT key, value, checksum FROM {table}")}


def _use(monkeypatch, folder):
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(folder))
    return folder


def test_what_a_run_stores_or_finds_is_kept_as_stored_and_another_cache_given_it_generates_nothing(
        tmp_path, monkeypatch):
    first = _use(monkeypatch, tmp_path / "first")
    with recording() as made:
        generated = ctrlkit.run(**RUN)
    assert generated.results["cache"] == {"hits": 0, "misses": 6}
    assert made == {"generations": {key: value for key, (value, _) in _rows(first).items()}}
    with recording() as found:
        again = ctrlkit.run(**RUN)
    assert again.results["cache"] == {"hits": 6, "misses": 0}
    assert found == made  # the hits, as they were stored

    other = _use(monkeypatch, tmp_path / "other")
    store(found)
    assert _rows(other) == _rows(first)  # the same bytes, checksums included
    store(found)  # again, as on a machine whose worker shares the driver's file: nothing changes
    assert _rows(other) == _rows(first)
    rerun = ctrlkit.run(**RUN)
    assert rerun.results["cache"] == {"hits": 6, "misses": 0} and rerun.samples == generated.samples


def test_a_cache_that_cannot_be_opened_still_keeps_what_its_run_made(tmp_path, monkeypatch, caplog):
    broken = _use(monkeypatch, tmp_path / "broken")
    broken.mkdir()
    (broken / FILE_NAME).write_bytes(b"not a database" * 400)
    with recording() as made:
        generated = ctrlkit.run(**RUN)
    assert any("cannot be opened" in record.getMessage() for record in caplog.records)
    assert len(made["generations"]) == 6

    _use(monkeypatch, tmp_path / "driver")
    store(made)
    rerun = ctrlkit.run(**RUN)
    assert rerun.results["cache"] == {"hits": 6, "misses": 0} and rerun.samples == generated.samples


def test_with_the_cache_off_nothing_is_kept_or_written(tmp_path, monkeypatch):
    folder = _use(monkeypatch, tmp_path / "cache")
    with recording() as kept:
        ctrlkit.run(**RUN, cache=False)
        with scope(enabled=False):
            Cache("generations").put(["a"], "text")
    assert kept == {}
    with scope(enabled=False):
        store({"generations": {"0" * 64: '"text"'}})
    assert not folder.exists()


@pytest.mark.parametrize("value", ["text", {"score": 0.5, "labels": ["a", "b"]}, 3])
def test_a_value_kept_reads_back_equal_from_the_cache_it_is_stored_in(tmp_path, monkeypatch, value):
    _use(monkeypatch, tmp_path / "here")
    with recording() as kept:
        Cache("judge").put({"judge": "j", "messages": ["m"]}, value)
        assert Cache("judge").get({"judge": "j", "messages": ["absent"]}) is None  # a miss keeps nothing
    assert list(kept) == ["judge"] and len(kept["judge"]) == 1
    _use(monkeypatch, tmp_path / "there")
    store(kept)
    assert Cache("judge").get({"judge": "j", "messages": ["m"]}) == value
