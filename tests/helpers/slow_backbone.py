"""A backbone slow enough to interrupt: the extractive backbone, a quarter second per batch, as
plugin ``slow`` that a ``ctrlkit`` process started with :func:`slow_backbone`'s environment loads,
and a count of the generations such a run has cached so far."""

import os
import sqlite3
import textwrap


SLOW_PLUGIN = """
    import time

    import ctrlkit
    from ctrlkit.backbones.extractive import ExtractiveBackbone


    class Slow(ExtractiveBackbone):
        '''The extractive backbone, a quarter second per batch.'''

        def generate(self, inputs):
            time.sleep(0.25)
            return super().generate(inputs)


    @ctrlkit.hookimpl
    def register_backbones(register):
        register("slow", Slow)
"""


def slow_backbone(tmp_path):
    """Write plugin ``slow`` under ``tmp_path``; returns the environment (its cache ``tmp_path/cache``)
    in which a ``ctrlkit`` process loads it."""
    (tmp_path / "slow_plugin.py").write_text(textwrap.dedent(SLOW_PLUGIN))
    info = tmp_path / "ctrlkit_slow-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ctrlkit-slow\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[ctrlkit]\nctrlkit-slow = slow_plugin\n")
    # before, not instead of, the caller's PYTHONPATH: a checkout on it is the ctrlkit under test
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "CTRLKIT_CACHE_DIR": str(tmp_path / "cache")}


def cached_generations(cache_dir) -> int:
    """How many generations the cache in ``cache_dir`` holds (0 while it cannot be read)."""
    try:
        with sqlite3.connect(cache_dir / "cache.sqlite3", timeout=5) as connection:
            return connection.execute("SELECT COUNT(*) FROM generations").fetchone()[0]
    except sqlite3.Error:
        return 0
