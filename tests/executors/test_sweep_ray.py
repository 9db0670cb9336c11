"""``ctrlkit sweep --executor ray``: the cells run as tasks on a real local Ray cluster (the
``ray_address`` fixture) and the sweep folder holds what a local sweep writes there."""

import importlib.util
import json
import os
import socket
import sqlite3
import textwrap

import pytest

import ctrlkit
from ctrlkit.executors import ray_cells
from ctrlkit.cache import FILE_NAME
from ctrlkit.executors.ray_support import worker_env_vars
from ctrlkit.sweeps.sweep import sweep

from helpers import run_ctrlkit
from helpers.faulty_chat import FaultyChat, start_chat

SMALL = dict(controllers=["none", "tag"], metrics=["stas"], limit=6)
VOLATILE = ("timings", "created", "cache")
"""What differs between two runs of the same cell: how long it took, when, and what the generation
cache held (a Ray worker uses its node's cache)."""


@pytest.fixture(scope="module", autouse=True)
def disconnected_at_the_end():
    """The tests in this process share one connection to the cluster; it is closed before the
    cluster stops."""
    yield
    import sys

    if "ray" in sys.modules:
        sys.modules["ray"].shutdown()


def _cells(folder):
    return sorted(path.name for path in (folder / "cells").iterdir())


def _steady(folder, cell) -> dict:
    results = json.loads((folder / "cells" / cell / "results.json").read_text())
    judge = results["config"].get("judge_options") or {}
    judge.pop("endpoints", None)  # the requests each endpoint served: what this run asked, as the cache counts
    return {key: value for key, value in results.items() if key not in VOLATILE}


def _table(folder) -> dict:
    table = json.loads((folder / "table.json").read_text())
    for row in table["rows"]:
        del row["cache"], row["reused"]  # how this sweep came by the cell, not what it holds
    return table


def assert_same_sweep(one, other):
    """Two sweep folders hold the same cells, samples, scores and tables (timings and cache counts aside)."""
    assert _cells(one) == _cells(other) and _cells(one)
    for cell in _cells(one):
        assert _steady(one, cell) == _steady(other, cell), cell
        assert (one / "cells" / cell / "samples.jsonl").read_bytes() == \
            (other / "cells" / cell / "samples.jsonl").read_bytes(), cell
    assert _table(one) == _table(other)
    for name in ("table.md", "table.csv", "table.tex", "sweep.json"):
        assert (one / name).read_bytes() == (other / name).read_bytes(), name


def test_a_ray_sweep_writes_what_a_local_sweep_writes_and_resumes(ray_address, private_cache, tmp_path):
    local = sweep(out=str(tmp_path / "local"), **SMALL)
    on_ray = sweep(out=str(tmp_path / "ray"), executor="ray", address=ray_address, **SMALL)
    assert [{k: v for k, v in row.items() if k != "cache"} for row in on_ray] == \
        [{k: v for k, v in row.items() if k != "cache"} for row in local]
    assert not any(row["reused"] for row in on_ray) and len(on_ray) == 2
    assert_same_sweep(tmp_path / "local", tmp_path / "ray")

    cells = tmp_path / "ray" / "cells"
    written = {cell.name: (cell / "results.json").stat().st_mtime_ns for cell in cells.iterdir()}
    again = sweep(out=str(tmp_path / "ray"), executor="ray", address=ray_address, **SMALL)
    assert all(row["reused"] for row in again)
    assert {cell.name: (cell / "results.json").stat().st_mtime_ns for cell in cells.iterdir()} == written

    (cells / "sample--extractive--tag" / "results.json").unlink()  # killed before the cell was whole
    resumed = sweep(out=str(tmp_path / "ray"), executor="ray", address=ray_address, **SMALL)
    assert [row["reused"] for row in resumed] == [True, False]
    assert (cells / "sample--extractive--none" / "results.json").stat().st_mtime_ns == \
        written["sample--extractive--none"]
    assert_same_sweep(tmp_path / "local", tmp_path / "ray")
    # the executor is not a setting: a local sweep resumes the Ray one, with nothing to run
    assert all(row["reused"] for row in sweep(out=str(tmp_path / "ray"), **SMALL))


def _entries(cache_folder) -> dict:
    """``{table: {key: (value, checksum)}}`` of a cache file, read with sqlite3 itself ({}: no file)."""
    if not (cache_folder / FILE_NAME).exists():
        return {}
    with sqlite3.connect(cache_folder / FILE_NAME) as connection:
        tables = [name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {table: {key: (value, checksum) for key, value, checksum in
                        connection.execute(f"SELECT key, value, checksum FROM {table}")} for table in tables}


def test_what_ray_cells_generate_judge_or_find_on_their_node_reaches_the_drivers_cache(ray_address, tmp_path,
                                                                                        monkeypatch):
    """The workers use a cache folder of their own, as on another node. What the cells make there
    reaches the driver's cache, and so does what a later sweep's cells find there (with a fresh
    driver cache); a local rerun on the driver then generates nothing, asks the judge nothing, and
    writes the same cells and tables."""
    judge = FaultyChat("drop", good=10**6)  # a chat server that answers every fm prompt
    start_chat(judge)
    worker_cache = tmp_path / "worker-cache"
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "driver-cache"))
    monkeypatch.setenv("no_proxy", "*")
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(ray_cells, "worker_environment", lambda: {"env_vars": {
        **worker_env_vars(), "CTRLKIT_CACHE_DIR": str(worker_cache), "no_proxy": "*"}})
    given = dict(controllers=["none", "tag"], metrics=["stas", "fm"], limit=6, judge="openai:m", bootstrap=0,
                 options={"openai": {"base_url": judge.url, "max_retries": 1, "backoff": 0.01}})
    try:
        made = sweep(out=str(tmp_path / "made"), executor="ray", address=ray_address, **given)
        assert [row["cache"] for row in made] == [{"hits": 0, "misses": 6}] * 2
        asked = judge.answered
        assert asked > 0 and judge.faulted == 0
        worker = _entries(worker_cache)  # the cells ran there, on the workers' cache
        predictions = {json.loads(line)["prediction"] for cell in _cells(tmp_path / "made")
                       for line in (tmp_path / "made" / "cells" / cell / "samples.jsonl").read_text().splitlines()}
        assert {json.loads(value) for value, _ in worker["generations"].values()} == predictions
        assert len(worker["judge"]) > 0
        assert _entries(tmp_path / "driver-cache") == worker  # each entry as the worker stored it, checksum included

        monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "fresh-driver-cache"))
        found = sweep(out=str(tmp_path / "found"), executor="ray", address=ray_address, **given)
        assert [row["cache"] for row in found] == [{"hits": 6, "misses": 0}] * 2 and judge.answered == asked
        assert _entries(worker_cache) == worker
        assert _entries(tmp_path / "fresh-driver-cache") == worker  # the hits too

        local = sweep(out=str(tmp_path / "local"), **given)
        assert [row["cache"] for row in local] == [{"hits": 6, "misses": 0}] * 2  # generated nothing
        assert judge.answered == asked  # asked nothing
        assert_same_sweep(tmp_path / "made", tmp_path / "local")
        assert_same_sweep(tmp_path / "found", tmp_path / "local")
        assert all(row["metrics"]["fm"]["failed"] == 0 for row in local)
    finally:
        judge.http.shutdown()
        judge.http.server_close()


def test_a_ray_sweep_without_the_cache_fills_no_cache(ray_address, tmp_path, monkeypatch):
    worker_cache, driver_cache = tmp_path / "worker-cache", tmp_path / "driver-cache"
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(driver_cache))
    monkeypatch.setattr(ray_cells, "worker_environment", lambda: {"env_vars": {
        **worker_env_vars(), "CTRLKIT_CACHE_DIR": str(worker_cache)}})
    rows = sweep(out=str(tmp_path / "ray"), executor="ray", address=ray_address, cache=False, **SMALL)
    assert [row["cache"] for row in rows] == [None, None] and _cells(tmp_path / "ray")
    assert not worker_cache.exists() and not driver_cache.exists()


PLUGIN = '''
    import logging
    import os
    from pathlib import Path

    import ctrlkit
    from ctrlkit.backbones.extractive import ExtractiveBackbone
    from ctrlkit.errors import CtrlkitError
    from ctrlkit.options import Option

    HERE = Path(__file__).parent


    class Fragile(ExtractiveBackbone):
        """The extractive backbone, whose process dies at a generation while fewer than `crashes`
        crashed-N markers lie beside this file, or which fails as a run fails when told to; it
        says how many summaries it made in a warning line, as a component says what went wrong."""

        options = (*ExtractiveBackbone.options,
                   Option("crashes", int, 0, "times a process dies here before this generates"),
                   Option("fail", bool, False, "fail as a run fails"),
                   Option("device", str, "", "a torch device, for the sweep to give it a GPU; unused"))

        def generate(self, inputs):
            if self.options["fail"]:
                raise CtrlkitError("backbone 'fragile': told to fail")
            crashed = len(list(HERE.glob("crashed-*")))
            if crashed < self.options["crashes"]:
                (HERE / f"crashed-{crashed + 1}").touch()
                os._exit(1)  # as a worker dies: killed, out of memory, its node gone
            logging.getLogger("ctrlkit").warning("ctrlkit: backbone 'fragile' made %d summaries", len(inputs))
            return super().generate(inputs)


    @ctrlkit.hookimpl
    def register_backbones(register):
        register("fragile", Fragile)
'''


@pytest.fixture
def fragile(tmp_path, monkeypatch, throwaway_plugins):
    """The ``fragile`` backbone, installed as an entry point in a folder put on PYTHONPATH (which the
    Ray workers get from the driver) and registered in this process; returns the folder."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "fragile_plugin.py").write_text(textwrap.dedent(PLUGIN))
    info = folder / "ctrlkit_fragile-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ctrlkit-fragile\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[ctrlkit]\nctrlkit-fragile = fragile_plugin\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")])))
    spec = importlib.util.spec_from_file_location("fragile_plugin", folder / "fragile_plugin.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    throwaway_plugins(module, "ctrlkit-fragile")
    return folder


def test_a_cell_whose_worker_dies_runs_again_and_the_sweep_completes_the_same(ray_address, fragile, tmp_path):
    arguments = [*("--controllers", "none,tag", "--metrics", "stas", "--limit", "6", "--backbones", "fragile"),
                 *("--set", "fragile.crashes=1")]
    env = {"CTRLKIT_CACHE_DIR": str(tmp_path / "cache")}
    on_ray = run_ctrlkit("sweep", *arguments, "-o", str(tmp_path / "ray"), "--executor", "ray", "--address",
                         ray_address, env=env)
    assert on_ray.returncode == 0, on_ray.stderr
    assert (fragile / "crashed-1").exists() and not (fragile / "crashed-2").exists()  # one worker died, once
    assert "A worker died" in on_ray.stderr  # what Ray says of it, kept off stdout
    assert on_ray.stderr.count("ctrlkit: backbone 'fragile' made 6 summaries\n") == 2  # the workers' warnings
    assert on_ray.stdout == (tmp_path / "ray" / "table.md").read_text()  # the table, and nothing else
    # the plugin in its versions; on a cache of its own, where the Ray cells' generations are not
    local = run_ctrlkit("sweep", *arguments, "-o", str(tmp_path / "local"),
                        env={"CTRLKIT_CACHE_DIR": str(tmp_path / "local-cache")})
    assert local.returncode == 0, local.stderr
    assert on_ray.stdout == local.stdout
    assert local.stderr.count("ctrlkit: backbone 'fragile' made 6 summaries\n") == 2
    assert_same_sweep(tmp_path / "local", tmp_path / "ray")


def test_a_cell_whose_worker_dies_on_every_try_fails_in_one_line(ray_address, fragile, tmp_path):
    with pytest.raises(ctrlkit.CtrlkitError) as raised:
        sweep(out=str(tmp_path / "ray"), controllers=["none"], metrics=["stas"], limit=6, backbones=["fragile"],
              options={"fragile": {"crashes": 99}}, executor="ray", address=ray_address)
    message = str(raised.value)
    assert message.startswith("sweep cell cells/sample--fragile--none: its Ray worker died on each of 3 tries (")
    assert "\n" not in message
    assert len(list(fragile.glob("crashed-*"))) == 3
    assert not (tmp_path / "ray").exists()  # nothing was done, so nothing is left


def test_a_cell_that_fails_fails_as_locally_and_the_other_cells_are_written(ray_address, fragile, private_cache,
                                                                             tmp_path):
    given = dict(controllers=["none", "tag"], metrics=["stas"], limit=6, backbones=["fragile", "extractive"],
                 options={"fragile": {"fail": True}})
    with pytest.raises(ctrlkit.CtrlkitError) as here:
        sweep(out=str(tmp_path / "local"), **given)
    with pytest.raises(ctrlkit.CtrlkitError) as there:
        sweep(out=str(tmp_path / "ray"), executor="ray", address=ray_address, **given)
    assert type(there.value) is type(here.value) and str(there.value) == str(here.value) == \
        "backbone 'fragile': told to fail"
    assert _cells(tmp_path / "ray") == ["sample--extractive--none", "sample--extractive--tag"]
    assert not (tmp_path / "ray" / "table.md").exists()
    written = {cell: (tmp_path / "ray" / "cells" / cell / "results.json").stat().st_mtime_ns
               for cell in _cells(tmp_path / "ray")}
    with pytest.raises(ctrlkit.CtrlkitError, match="told to fail"):  # again: the cells written are reused
        sweep(out=str(tmp_path / "ray"), executor="ray", address=ray_address, **given)
    assert {cell: (tmp_path / "ray" / "cells" / cell / "results.json").stat().st_mtime_ns
            for cell in _cells(tmp_path / "ray")} == written


def test_a_cell_on_cuda_where_the_cluster_has_no_gpu_is_refused_at_once(ray_address, fragile, tmp_path):
    with pytest.raises(ctrlkit.ConfigurationError) as raised:  # rather than wait for a GPU for ever
        sweep(out=str(tmp_path / "ray"), controllers=["none"], metrics=["stas"], limit=6,
              backbones=["extractive", "fragile"], device="cuda", executor="ray", address=ray_address)
    assert str(raised.value) == (
        f"sweep cell cells/sample--fragile--none runs on CUDA (a device option set to cuda), but the Ray cluster at "
        f"{ray_address} has no GPU; set the device to cpu, or add a node with a GPU")
    assert not (tmp_path / "ray").exists()


def test_an_address_without_the_ray_executor_is_refused_in_one_line(tmp_path):
    result = run_ctrlkit("sweep", "--controllers", "none", "--address", "127.0.0.1:6379", "-o", str(tmp_path / "s"))
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        "Error: address '127.0.0.1:6379' names a Ray cluster; it is for executor 'ray' (--executor ray --address "
        "HOST:PORT), not 'local'"]
    assert not (tmp_path / "s").exists()
    with pytest.raises(ctrlkit.ConfigurationError, match="unknown executor 'dask'; choose one of local, ray"):
        sweep(out=str(tmp_path / "s"), controllers=["none"], executor="dask")
    with pytest.raises(ctrlkit.ConfigurationError, match="^recipe 'fd-meta-eval' is a meta-evaluation: it scores the "
                                                         "dataset's own outputs here and has no cells for executor "
                                                         "'ray' to run$"):
        sweep(out=str(tmp_path / "s"), recipe="fd-meta-eval", executor="ray")
    assert not (tmp_path / "s").exists()


def test_an_address_where_no_cluster_runs_is_one_line_at_once(tmp_path):
    pytest.importorskip("ray", reason="the Ray executor's tests need ray (requirements-test.txt)")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = run_ctrlkit("sweep", "--controllers", "none", "--metrics", "stas", "--limit", "2", "--executor", "ray",
                         "--address", f"127.0.0.1:{port}", "-o", str(tmp_path / "s"))
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        f"Error: --executor ray: cannot connect to 127.0.0.1:{port}: Connection refused; is a Ray cluster running "
        f"there (ray start --head)?"]
    assert not (tmp_path / "s").exists()


def _cell(backbone="extractive", metrics=("stas",), judge=None, **options):
    return dict(dataset="sample", controller="tag", backbone=backbone, metrics=list(metrics), judge=judge,
                options=options)


@pytest.mark.parametrize("cell, cluster_gpus, gpu", [
    (_cell("hf:/models/bart", **{"backbone:hf": {"device": "cuda"}}), False, True),
    (_cell("hf:/models/bart", hf={"device": "cuda:1"}), False, True),
    (_cell("hf-causal:/models/gpt2", **{"hf-causal": {"device": "cpu"}}), True, False),
    (_cell("hf:/models/bart"), True, True),  # unset: CUDA where the node has it, as hf picks
    (_cell("hf:/models/bart"), False, False),
    (_cell("extractive"), True, False),
    (_cell("openai:gpt-4o-mini"), True, False),
    (_cell("extractive", judge="hf-causal:/models/judge", metrics=("stas",), **{"hf-causal": {"device": "cuda"}}),
     False, True),  # a judge on the GPU
    (_cell("extractive", metrics=("bertscore",), bertscore={"device": "cuda"}), False, True),
    (_cell("extractive", metrics=("bertscore",)), True, True),
    (_cell("extractive", embedding={"device": "cuda"}), False, True),  # a vectorizer: only when told
])
def test_a_cell_asks_for_a_gpu_when_a_component_of_it_would_use_cuda(cell, cluster_gpus, gpu):
    from ctrlkit.executors.ray_cells import needs_gpu

    assert needs_gpu(cell, cluster_gpus) is gpu
