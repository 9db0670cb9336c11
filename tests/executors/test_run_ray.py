"""``run --executor ray``: data-parallel generation on a real local Ray cluster (``ray_address``,
2 CPUs). Each Ray run is compared with a local run of the same settings: results.json (less what
differs from run to run: timings, the creation time, cache counts and the executor itself) and
samples.jsonl must be equal.

The probe backbone is a plugin distribution written here (a ``*.dist-info`` on PYTHONPATH), so
that the workers load it too: its text is a function of the input alone, or with ``say_pid`` the
id of the process that generated it (``say_threads``: how many threads its torch runs); it
appends each input it generates to ``log``, and with ``crash_marker`` the first process to
generate creates that file and exits on the spot. Its ``load()`` appends the process id to
``load_log``, or fails while the file ``fail_load`` exists.
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

import ctrlkit
from helpers import run_ctrlkit
from ctrlkit import ModelInput, get_controller, get_dataset
from ctrlkit.errors import ConfigurationError, OptionError

VOLATILE = ("timings", "created", "cache")

PROBE = '''
import json
import os

from ctrlkit import Backbone, Option, hookimpl
from ctrlkit.errors import ConfigurationError


class Probe(Backbone):
    options = (
        Option("log", str, "", "file to append each generated input to"),
        Option("crash_marker", str, "", "the first process to generate creates this file and exits"),
        Option("say_pid", bool, False, "answer the id of the generating process"),
        Option("say_threads", bool, False, "answer how many threads torch runs in the generating process"),
        Option("load_log", str, "", "file to append the id of each process that loads the backbone to"),
        Option("fail_load", str, "", "loading fails while this file exists"),
    )

    def load(self):
        if self.options["fail_load"] and os.path.exists(self.options["fail_load"]):
            raise ConfigurationError(f"backbone '{self.name}' cannot load: {self.options['fail_load']} exists")
        if self.options["load_log"]:
            with open(self.options["load_log"], "a", encoding="utf-8") as log:
                log.write(f"{os.getpid()}\\n")

    def generate(self, inputs):
        if self.options["crash_marker"]:
            try:
                os.close(os.open(self.options["crash_marker"], os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                os._exit(1)
        if self.options["log"]:
            with open(self.options["log"], "a", encoding="utf-8") as log:
                log.write("".join(f"{os.getpid()}\\t{json.dumps(i.source)}\\n" for i in inputs))
        if self.options["say_pid"]:
            return [str(os.getpid()) for _ in inputs]
        if self.options["say_threads"]:
            return [str(__import__("torch").get_num_threads()) for _ in inputs]
        return [" ".join(reversed(i.source.split()[:12])) for i in inputs]


@hookimpl
def register_backbones(register):
    register("probe", "ctrlkit_probe_plugin:Probe")
'''


@pytest.fixture
def probe_env(tmp_path):
    """The environment of a CLI run that sees the probe plugin; its driver cache is its own."""
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "ctrlkit_probe_plugin.py").write_text(textwrap.dedent(PROBE))
    info = plugin / "ctrlkit_probe-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ctrlkit-probe\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[ctrlkit]\nctrlkit-probe = ctrlkit_probe_plugin\n")
    path = os.pathsep.join(filter(None, [str(plugin), os.environ.get("PYTHONPATH")]))
    return {"PYTHONPATH": path, "CTRLKIT_CACHE_DIR": str(tmp_path / "driver-cache")}


def _comparable(results: dict) -> dict:
    kept = {key: value for key, value in results.items() if key not in VOLATILE}
    kept["config"] = {key: value for key, value in results["config"].items() if key not in ("executor", "workers")}
    return kept


def _written(folder: Path) -> tuple[dict, list[dict]]:
    results = json.loads((folder / "results.json").read_text())
    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    return results, samples


def _sample_examples():
    sample = get_dataset("sample")
    return sample.load(sample.default_split)


def _independent_shards(example_ids: list[str], shards: int) -> dict[str, int]:
    """The shard of each (distinct) id computed apart from ctrlkit: the ids sorted by their sha256's
    hex digits, then the first to shard 0, the second to shard 1, and so on round the shards."""
    by_digest = sorted(example_ids, key=lambda example_id: hashlib.sha256(example_id.encode("utf-8")).hexdigest())
    return {example_id: rank % shards for rank, example_id in enumerate(by_digest)}


@pytest.mark.parametrize("shards", [1, 2, 3, 7, 200])
def test_shards_differ_in_size_by_one_at_most_and_not_with_the_order_of_the_ids(shards):
    from ctrlkit.executors.ray_support import stable_shards

    ids = [example.id for example in _sample_examples()]
    assert len(set(ids)) == 120
    found = stable_shards(ids, shards)
    assert dict(zip(ids, found)) == _independent_shards(ids, shards)
    sizes = Counter(found)
    assert len(sizes) == min(shards, len(ids)) and max(sizes.values()) - min(sizes.values()) <= 1
    assert dict(zip(ids[::-1], stable_shards(ids[::-1], shards))) == dict(zip(ids, found))
    assert Counter(stable_shards(["same"] * 5, 2)) == {0: 3, 1: 2}  # equal ids too, by their position


def _log(path: Path) -> list[tuple[str, str]]:
    return [(pid, json.loads(source)) for pid, source in
            (line.split("\t", 1) for line in path.read_text(encoding="utf-8").splitlines())]


def test_two_workers_give_the_local_run_with_its_baseline_and_the_controllers_preparation(ray_address, tmp_path,
                                                                                          monkeypatch):
    # prepend's separator reaches the extractive backbone only through prepare() (add_special_tokens):
    # a worker whose backbone was not prepared would read the prefix as part of the document
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "driver-cache"))
    settings = dict(controller="prepend", baseline="none", metrics=["rouge", "stas"], bootstrap=100, batch_size=8,
                    options={"prepend": {"separator": "||"}})
    ray_run = ctrlkit.run(**settings, executor="ray", workers=2, address=ray_address, out=str(tmp_path / "ray"))
    local = ctrlkit.run(**settings, cache=False, out=str(tmp_path / "local"))
    ray_results, ray_samples = _written(tmp_path / "ray")
    local_results, local_samples = _written(tmp_path / "local")
    assert ray_results["config"]["executor"] == "ray" and ray_results["config"]["workers"] == 2
    assert local_results["config"]["executor"] == "local" and local_results["config"]["workers"] is None
    assert _comparable(ray_results) == _comparable(local_results)
    assert ray_samples == local_samples and len(ray_samples) == 120
    assert ray_run.metrics == local.metrics
    example = _sample_examples()[0]
    source = get_controller("prepend", separator="||").apply(example, ModelInput(source=example.document)).source
    assert ctrlkit.get_backbone("extractive").generate([ModelInput(source=source)])[0] != ray_samples[0]["prediction"]


def test_the_driver_cache_holds_what_the_workers_generated_and_found(ray_address, tmp_path, monkeypatch):
    options = {"extractive": {"lead_weight": 0.8125}}  # keys of this test's own
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "first-driver"))
    first = ctrlkit.run(controller="tag", baseline=None, options=options, bootstrap=0, executor="ray", workers=2,
                        address=ray_address)
    assert first.results["cache"] == {"hits": 0, "misses": 120}
    local = ctrlkit.run(controller="tag", baseline=None, options=options, bootstrap=0)
    assert local.results["cache"] == {"hits": 120, "misses": 0}  # generated nothing
    assert local.samples == first.samples
    # a driver with an empty cache: the workers find every generation in their node's cache
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "second-driver"))
    second = ctrlkit.run(controller="tag", baseline=None, options=options, bootstrap=0, executor="ray", workers=2,
                         address=ray_address)
    assert second.results["cache"] == {"hits": 120, "misses": 0} and second.samples == first.samples
    again = ctrlkit.run(controller="tag", baseline=None, options=options, bootstrap=0)
    assert again.results["cache"] == {"hits": 120, "misses": 0}  # what workers found is stored here too


def test_examples_are_sharded_by_a_stable_hash_of_their_id_and_generated_once_in_the_local_order(
        ray_address, tmp_path, probe_env):
    log = tmp_path / "generated.log"
    result = run_ctrlkit("run", "-b", "probe", "--set", "probe.say_pid=true", "--set", f"probe.log={log}",
                         "-c", "prepend", "--no-baseline", "-m", "rouge", "--bootstrap", "0", "--batch-size", "7",
                         "--executor", "ray", "--workers", "2", "--address", ray_address, "-o", str(tmp_path / "out"),
                         env={**probe_env, "CTRLKIT_PROGRESS_SECONDS": "0.1"})
    assert result.returncode == 0, result.stderr
    assert "ctrlkit: generate [prepend] on 2 Ray workers: 120/120 examples" in result.stderr  # the bar's last line
    results, samples = _written(tmp_path / "out")
    assert results["cache"] == {"hits": 0, "misses": 120}
    by_pid = defaultdict(set)
    for sample in samples:
        by_pid[sample["prediction"]].add(sample["id"])
    by_shard = defaultdict(set)
    for example_id, shard in _independent_shards([sample["id"] for sample in samples], 2).items():
        by_shard[shard].add(example_id)
    assert len(by_pid) == 2 and sorted(map(sorted, by_pid.values())) == sorted(map(sorted, by_shard.values()))
    assert sorted(map(len, by_pid.values())) == [60, 60]  # a hash modulo 2 would give 63 and 57

    examples = _sample_examples()
    prepend = get_controller("prepend")
    inputs = {example.id: prepend.apply(example, ModelInput(source=example.document)).source for example in examples}
    generated = _log(log)
    assert sorted(source for _, source in generated) == sorted(inputs.values())  # each example once
    for pid, ids in by_pid.items():
        shard_in_input_order = [inputs[example.id] for example in examples if example.id in ids]
        longest_first = sorted(shard_in_input_order, key=len, reverse=True)  # stable: input order among equals
        assert [source for who, source in generated if who == pid] == longest_first


def test_a_worker_that_dies_mid_run_is_restarted_and_the_result_is_complete_and_identical(ray_address, tmp_path,
                                                                                          probe_env):
    marker, log = tmp_path / "crashed", tmp_path / "generated.log"
    probe = ["-b", "probe", "--set", f"probe.crash_marker={marker}", "--set", f"probe.log={log}", "-c", "tag",
             "-m", "rouge", "--bootstrap", "20", "--batch-size", "8"]
    on_ray = run_ctrlkit("run", *probe, "--executor", "ray", "--workers", "2", "--address", ray_address,
                         "-o", str(tmp_path / "ray"), env=probe_env)
    assert on_ray.returncode == 0, on_ray.stderr
    assert marker.exists()  # a worker did exit in its first batch
    generated = len(_log(log))  # the exit comes before the log: what was logged was generated and returned
    local = run_ctrlkit("run", *probe, "-o", str(tmp_path / "local"),
                        env={**probe_env, "CTRLKIT_CACHE_DIR": str(tmp_path / "local-cache")})
    assert local.returncode == 0, local.stderr
    ray_results, ray_samples = _written(tmp_path / "ray")
    local_results, local_samples = _written(tmp_path / "local")
    # the run's and the baseline's 120 inputs, each generated once (a baseline input that the tag run left
    # as it was is found in the cache)
    assert ray_results["cache"]["misses"] == generated and ray_results["cache"]["hits"] + generated == 240
    assert _comparable(ray_results) == _comparable(local_results) and ray_samples == local_samples


@pytest.mark.parametrize(("controller", "system"), [("tag", None), ("prompt", None),
                                                   ("prompt", "Follow these rules. " * 80)])
def test_a_tiny_bart_on_two_workers_generates_what_it_generates_here(ray_address, tmp_path, monkeypatch, caplog,
                                                                     controller, system):
    """And the run's truncation line is the local one: the sample's documents are longer than the
    model's 256 tokens, so they are cut; a system message longer than that leaves the prompts to
    the tokenizer's cut, and they lose their end."""
    from helpers.tiny_models import build_bart

    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "driver-cache"))
    monkeypatch.chdir(tmp_path)  # the workers resolve the relative model path where the driver does
    build_bart(tmp_path / "bart", init_std=0.3)
    # tag adds [TAG] to the untrained model in every worker and in the driver: its row is drawn from a seed
    # of its text, the same in every process whatever each drew before (backbones/seeded_rows.py)
    options = {"hf": {"device": "cpu", "max_new_tokens": 8, "num_beams": 2}, **({"prompt": {"system": system}}
                                                                                  if system else {})}
    settings = dict(backbone="hf:./bart", controller=controller, baseline=None, metrics=["rouge"], bootstrap=0,
                    limit=16, batch_size=3, options=options)
    runs, lines = [], []
    for executor in ({"executor": "ray", "workers": 2, "address": ray_address}, {"cache": False}):
        caplog.clear()
        with caplog.at_level("WARNING", logger="ctrlkit"):
            runs.append(ctrlkit.run(**settings, **executor))
        lines.append([record.getMessage() for record in caplog.records if "truncated" in record.getMessage()])
    on_ray, local = runs
    assert [s["prediction"] for s in on_ray.samples] == [s["prediction"] for s in local.samples]
    # with the long system message, the prompts' first 256 tokens are all the same: one output for all
    assert len({s["prediction"] for s in local.samples}) > 1 or system
    assert on_ray.metrics == local.metrics
    [line] = lines[1]
    assert lines[0] == lines[1] and "16 of 16 inputs truncated to 256 tokens" in line
    assert ("16 of them prompts cut at their end" in line) == bool(system), line


@pytest.fixture
def probe_here(probe_env, monkeypatch, throwaway_plugins):
    """The probe backbone registered in this process too, and on the PYTHONPATH its Ray workers get."""
    plugin = probe_env["PYTHONPATH"].split(os.pathsep)[0]
    monkeypatch.setenv("PYTHONPATH", probe_env["PYTHONPATH"])
    monkeypatch.syspath_prepend(plugin)
    import ctrlkit_probe_plugin

    throwaway_plugins(ctrlkit_probe_plugin, "ctrlkit-probe-here")


def _pool(address, workers, **options):
    from ctrlkit.executors.ray_generation import RayGeneration

    backbone = ctrlkit.get_backbone("probe", **options)
    return RayGeneration(address, "probe", options, backbone, workers, use_cache=False)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_the_workers_load_their_backbones_as_the_block_opens_and_use_them_for_every_batch(ray_address, tmp_path,
                                                                                          probe_here):
    loads = tmp_path / "loads.log"
    examples = _sample_examples()[:16]
    inputs = [ModelInput(source=example.document) for example in examples]
    ids = [example.id for example in examples]
    with _pool(ray_address, 2, load_log=str(loads), say_pid=True) as pool:
        deadline = time.monotonic() + 120
        while len(_lines(loads)) < 2:  # no batch asked for yet: the workers load on their own
            assert time.monotonic() < deadline, "the workers did not load their backbones before a batch"
            time.sleep(0.2)
        batches = list(pool.batches(inputs, [], list(range(len(inputs))), ids, 3))
    loaded_by = _lines(loads)
    assert len(loaded_by) == len(set(loaded_by)) == 2  # each worker loaded once, whatever its batches
    generated_by = {pid for _, outputs, _ in batches for pid in outputs}
    assert generated_by == set(loaded_by)
    assert sorted(i for batch, _, _ in batches for i in batch) == list(range(len(inputs)))


def test_a_worker_on_the_cpu_runs_torch_on_one_thread_its_one_cpu(ray_address):
    # ctrlkit gives the worker no environment of its own (Ray may hand it a process it started
    # beforehand); Ray sets OMP_NUM_THREADS to the CPUs it holds, on a cluster started without one
    from ctrlkit.executors.ray_generation import RayGeneration

    with RayGeneration(ray_address, "extractive", {}, ctrlkit.get_backbone("extractive"), 1, use_cache=False) as pool:
        threads = pool.ray.get(pool.actors[0].__ray_call__.remote(lambda worker: __import__("torch").get_num_threads()))
    assert threads == 1 < os.cpu_count()


PLAIN_TASK = """
import sys

from ctrlkit.executors.ray_support import connect

ray = connect(sys.argv[1])


@ray.remote(num_cpus=1)
def plain_task():
    imported = "torch" in sys.modules
    return imported, __import__("torch").get_num_threads()


print(*ray.get(plain_task.remote()))
"""


@pytest.mark.heavy  # starts a Ray cluster of its own (not through the ray_cluster fixture)
def test_a_worker_whose_process_imported_torch_before_ray_set_its_threads_still_runs_one(probe_env, tmp_path):
    """A cluster may import torch in each worker process as it starts (RAY_preload_python_modules):
    torch then takes its default threads (one per core) before Ray sets OMP_NUM_THREADS to the one
    CPU the worker holds, as a plain task shows; a run's generation workers and a sweep's cells set
    torch's threads again."""
    pytest.importorskip("ray", reason="the Ray executor's tests need ray (requirements-test.txt)")
    from helpers import local_ray

    probe = ["--set", "probe.say_threads=true", "--limit", "2", "--bootstrap", "0", "--no-cache", "--executor", "ray"]
    with local_ray.LocalCluster(cpus=1, environment={"RAY_preload_python_modules": "torch"}) as cluster:
        plain = subprocess.run([sys.executable, "-c", PLAIN_TASK, cluster.address], capture_output=True, text=True,
                               timeout=300)
        assert plain.returncode == 0, plain.stderr[-3000:]
        imported, threads = plain.stdout.split()
        assert imported == "True"
        if int(threads) < 2:
            pytest.skip("torch's default here is one thread: a preloaded worker runs one anyway")
        run = run_ctrlkit("run", *probe, "-b", "probe", "-c", "none", "-m", "stats", "--no-baseline",
                          "--address", cluster.address, "-o", str(tmp_path / "run"), env=probe_env)
        swept = run_ctrlkit("sweep", *probe, "--backbones", "probe", "--controllers", "none", "--metrics", "stats",
                            "--address", cluster.address, "-o", str(tmp_path / "sweep"), env=probe_env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert [sample["prediction"] for sample in _written(tmp_path / "run")[1]] == ["1", "1"]
    assert swept.returncode == 0, swept.stderr[-3000:]
    [cell] = (tmp_path / "sweep" / "cells").iterdir()
    assert [sample["prediction"] for sample in _written(cell)[1]] == ["1", "1"]


def test_a_worker_that_cannot_load_fails_its_first_batch_in_one_line_and_a_worker_without_work_nothing(
        ray_address, tmp_path, probe_here):
    failing = tmp_path / "no-weights"
    failing.touch()
    examples = _sample_examples()[:4]
    inputs = [ModelInput(source=example.document) for example in examples]
    ids = [example.id for example in examples]
    with _pool(ray_address, 2, fail_load=str(failing)) as pool:
        assert list(pool.batches(inputs, [], [], ids, 2)) == []  # nothing to generate: no error to report
        with pytest.raises(ConfigurationError, match=rf"^backbone 'probe' cannot load: {re.escape(str(failing))} "
                                                     r"exists$"):
            list(pool.batches(inputs, [], [0], ids, 2))
    assert not pool.actors  # stopped on leaving the block


def test_a_transformers_backbone_reads_its_weights_on_load_and_not_before(tmp_path, monkeypatch):
    from helpers.tiny_models import build_bart

    monkeypatch.chdir(tmp_path)
    backbone = ctrlkit.get_backbone(f"hf:{build_bart(tmp_path / 'bart')}", device="cpu")
    assert backbone._model is None  # lazy: nothing read when made
    backbone.load()
    assert backbone._model is not None and backbone._tokenizer is not None
    with pytest.raises(ConfigurationError, match=r"^backbone 'hf': no model folder at ./absent$"):
        ctrlkit.get_backbone("hf:./absent").load()


def test_an_error_on_a_worker_is_the_local_runs_one_line(ray_address, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match=r"^backbone 'hf': no model folder at ./absent$"):
        ctrlkit.run(backbone="hf:./absent", baseline=None, bootstrap=0, limit=2, cache=False)
    with pytest.raises(ConfigurationError, match=r"^backbone 'hf': no model folder at ./absent$"):
        ctrlkit.run(backbone="hf:./absent", baseline=None, bootstrap=0, limit=2, cache=False, executor="ray",
                    address=ray_address)


@pytest.mark.parametrize("args, message", [
    (["--workers", "2"], "Error: --workers needs --executor ray (executor='ray')"),
    (["--address", "127.0.0.1:1"], "Error: --address needs --executor ray (executor='ray')"),
    (["--workers", "2", "--address", "127.0.0.1:1"], "Error: --workers and --address need --executor ray"),
])
def test_ray_options_without_the_ray_executor_are_refused_in_one_line(tmp_path, args, message):
    result = run_ctrlkit("run", "--limit", "2", *args, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().startswith(message) and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_run_and_sweep_declare_the_ray_options_once_with_their_own_words():
    from click.testing import CliRunner

    from ctrlkit import cli_options
    from ctrlkit.cli import cli

    def options(command):
        return {param.name: param for param in cli.commands[command].params}

    run_options, sweep_options = options("run"), options("sweep")
    # any registered executor (a plugin's too), checked against the registry when the command runs
    assert run_options["executor"].metavar == sweep_options["executor"].metavar == "NAME"
    assert all("ctrlkit list executors" in o["executor"].help for o in (run_options, sweep_options))
    assert run_options["executor"].default == sweep_options["executor"].default == "local"
    assert run_options["address"].help == sweep_options["address"].help
    assert "workers" in run_options and "workers" not in sweep_options
    assert "generated there, data-parallel on --workers" in run_options["executor"].help
    assert "each cell is a task there" in sweep_options["executor"].help
    source = Path(cli_options.__file__).with_name("cli.py").read_text(encoding="utf-8")
    assert '"--executor"' not in source and '"--workers"' not in source and '"--address"' not in source
    for command in ("run", "sweep"):
        shown = CliRunner().invoke(cli, [command, "--help"])
        assert shown.exit_code == 0
        assert "--executor NAME" in shown.output and "--address HOST:PORT" in shown.output
        assert ("--workers N" in shown.output) == (command == "run")


def test_fewer_than_one_worker_and_an_unknown_executor_are_refused():
    result = run_ctrlkit("run", "--executor", "ray", "--workers", "0")
    assert result.returncode == 2 and "Invalid value for '--workers': 0 is not in the range x>=1" in result.stderr
    with pytest.raises(OptionError, match=r"^workers must be a whole number of at least 1, got 0$"):
        ctrlkit.run(executor="ray", workers=0)
    with pytest.raises(OptionError, match=r"^--workers needs --executor ray"):
        ctrlkit.run(workers=2)
    with pytest.raises(ConfigurationError, match=r"^unknown executor 'dask'; choose one of local, ray$"):
        ctrlkit.run(executor="dask")


def test_more_workers_than_the_cluster_can_hold_are_refused_before_any_work(ray_address):
    refusal = r"^--executor ray with backbone 'extractive' needs 3 CPUs \(3 workers, 1 each\); the Ray cluster has 2: "
    with pytest.raises(ConfigurationError, match=refusal + "give fewer --workers$"):
        ctrlkit.run(executor="ray", workers=3, address=ray_address)


def test_an_address_other_than_the_connected_clusters_is_refused_in_one_line(ray_address, monkeypatch):
    from ctrlkit.executors import ray_support
    from ctrlkit.executors.ray_support import connect, host_and_port

    ray = connect(ray_address)
    port = int(ray_address.rpartition(":")[2])
    current = ray.get_runtime_context().gcs_address  # Ray names a loopback address by the node's IP
    assert current.endswith(f":{port}")
    assert connect(None) is ray and connect("auto") is ray and connect(f"localhost:{port}") is ray
    monkeypatch.setattr(ray_support, "_GIVEN", {})  # as if the user had connected: only the GCS address
    assert connect(ray_address) is ray and connect(f"localhost:{port}") is ray and connect(current) is ray
    refusal = (rf"^--executor ray: this process is connected to the Ray cluster at {re.escape(current)}, not "
               rf"127\.0\.0\.1:{port + 1}; give no address to use it, or call ray\.shutdown\(\) first$")
    with pytest.raises(ConfigurationError, match=refusal):
        connect(f"127.0.0.1:{port + 1}")
    with pytest.raises(ConfigurationError, match=rf"^--executor ray: .*, not localhost:{port + 1}; "):
        ctrlkit.run(executor="ray", address=f"localhost:{port + 1}", limit=2, bootstrap=0)
    with pytest.raises(ConfigurationError, match=r", not 192\.0\.2\.77:"):  # another host, the same port
        connect(f"192.0.2.77:{port}")
    assert ray.is_initialized() and ray.get_runtime_context().gcs_address == current  # still connected
    assert host_and_port("ray://[::1]:10001") == ("::1", 10001) and host_and_port("head:6379") == ("head", 6379)
    assert host_and_port("auto") is None and host_and_port("local") is None


def test_a_client_that_would_look_for_a_loopback_only_cluster_elsewhere_is_told_at_once(ray_address, tmp_path):
    # the session's cluster listens on 127.0.0.1 alone; a client without the variable would have Ray
    # look for it at this node's outward address, and retry there for minutes
    started = time.monotonic()
    result = run_ctrlkit("run", "--limit", "2", "--bootstrap", "0", "--no-cache", "--executor", "ray", "--address",
                         ray_address, "-o", str(tmp_path / "out"), env={"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1"})
    assert result.returncode == 1 and time.monotonic() - started < 60
    assert re.fullmatch(rf"Error: --executor ray: the Ray cluster at {re.escape(ray_address)} answers on loopback "
                        r"only, and Ray looks for it at this node's address, \S+: set "
                        r"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 here, as where the cluster was started\n", result.stderr)
    assert not (tmp_path / "out").exists()


def test_a_local_run_does_not_import_ray():
    script = ("import sys, ctrlkit\n"
              "ctrlkit.run(limit=4, bootstrap=0, cache=False)\n"
              "print('ray' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize("options, cluster, wanted", [
    ({"max_words": 60}, {"CPU": 2, "GPU": 1}, {"num_cpus": 1}),  # extractive: no device at all
    ({"device": "cpu"}, {"CPU": 2, "GPU": 1}, {"num_cpus": 1}),
    ({"device": ""}, {"CPU": 2}, {"num_cpus": 1}),  # CUDA when present: none on the cluster
    ({"device": ""}, {"CPU": 2, "GPU": 4}, {"num_gpus": 1}),
    ({"device": "cuda:1"}, {"CPU": 2, "GPU": 4}, {"num_gpus": 1}),
])
def test_a_worker_reserves_a_gpu_for_a_cuda_backbone_and_a_cpu_otherwise(options, cluster, wanted):
    from ctrlkit.executors.ray_support import backbone_resources

    assert backbone_resources(options, cluster) == wanted


def test_a_gpu_worker_uses_the_gpu_ray_gives_it_and_a_cluster_without_gpus_is_refused():
    from ctrlkit.executors.ray_generation import _on_assigned_gpu
    from ctrlkit.executors.ray_support import check_capacity

    assert _on_assigned_gpu({"device": "cuda:1", "model": "m"}, {"num_gpus": 1}) == {"device": "cuda", "model": "m"}
    assert _on_assigned_gpu({"device": "cuda:1"}, {"num_cpus": 1}) == {"device": "cuda:1"}
    with pytest.raises(ConfigurationError, match=r"^run needs 2 GPUs \(2 workers, 1 each\); the Ray cluster has 0: "):
        check_capacity({"num_gpus": 1}, 2, {"CPU": 16}, "run")
    check_capacity({"num_gpus": 1}, 2, {"CPU": 16, "GPU": 2}, "run")
