import os
import secrets
import sys
import tempfile
from pathlib import Path

import pytest

# the assert in browser.chromium, moved there from test_report, keeps pytest's account of a failure
pytest.register_assert_rewrite("helpers.browser")

from helpers import local_ray  # noqa: E402  (tests/ is on sys.path: pythonpath in pyproject.toml)
from helpers.paths import ROOT  # noqa: E402

# A hub-name lookup would retry for over a minute on this offline machine.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# One torch thread, here and in the commands tests run: the tiny models gain nothing from more, and on a
# machine whose few cores other processes share, torch's threads spin waiting for each other (a file of
# tiny trainings took 94 s with two threads on 2 busy cores, 78 s with one, and half the CPU time).
os.environ.setdefault("OMP_NUM_THREADS", "1")
# The libraries stay quiet as a user's plain command keeps them, whatever the shell asked for.
os.environ.pop("CTRLKIT_VERBOSE", None)
# The generation and judge caches of a test session live apart from the user's.
os.environ["CTRLKIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="ctrlkit-test-cache-")
# The Ray cluster of ``ray_cluster`` and its clients (this process, the commands tests run) share a
# token of the session's own and the setting that keeps them on loopback, in the environment only,
# set before anything imports ray (local_ray.py says why).
os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
local_ray.set_environment()

@pytest.fixture(scope="session", autouse=True)
def no_new_run_folder_in_the_repository():
    """A test that runs a command without --out gives it a cwd under tmp_path; otherwise its default
    runs/DATASET-CONTROLLER-TIME folder would land in the repository."""
    runs = ROOT / "runs"
    before = set(runs.iterdir()) if runs.is_dir() else set()
    yield
    left = sorted(str(path) for path in (set(runs.iterdir()) if runs.is_dir() else set()) - before)
    assert not left, f"tests left run folders in the repository: {', '.join(left)}"


HAND_MADE: set[Path] = set()
"""The tmp_path of each test marked ``hand_made_records``: its records come from hand-made or broken input."""


@pytest.fixture(scope="session", autouse=True)
def every_record_follows_its_schema(tmp_path_factory):
    """At the session's end, every results.json, sweep.json and table.json a test's run wrote (in
    this process or a command it started) is checked against its JSON Schema (record_schemas.py),
    except in the folders of tests that make records from hand-made or broken input on purpose."""
    yield
    from helpers.record_schemas import problems

    found = [line for line in problems(tmp_path_factory.getbasetemp())
             if not any(line.startswith(f"{folder}/") for folder in HAND_MADE)]
    assert not found, "records that do not follow their schema:\n" + "\n".join(found[:20])


@pytest.fixture(autouse=True)
def hand_made_records_are_left_out(request):
    if request.node.get_closest_marker("hand_made_records"):
        HAND_MADE.add(request.getfixturevalue("tmp_path"))


HEAVY_FIXTURES = {"ray_cluster", "ray_address", "smollm2_gguf", "tiny_bart"}
"""Fixtures that start a Ray cluster, load a real language model or train a model: a test using one
is marked ``heavy``, which ``make test-fast`` leaves out."""


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HEAVY_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.heavy)


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """The real SmolLM2-135M-Instruct GGUF (scripts/real_models.py, which `make test` runs), its
    digest checked once per session; skips with the command that installs it when it is absent."""
    from importlib.util import module_from_spec, spec_from_file_location

    spec = spec_from_file_location("real_models", ROOT / "scripts" / "real_models.py")
    real_models = module_from_spec(spec)
    spec.loader.exec_module(real_models)
    try:
        return real_models.checked("smollm2")
    except real_models.ModelError as exc:
        pytest.skip(f"needs the real SmolLM2 model: {exc}")


@pytest.fixture(scope="session")
def tiny_bart(tmp_path_factory) -> Path:
    """The folder of a tiny BART (``tiny_models.build_bart``), built once per session: tests only read it."""
    pytest.importorskip("torch", reason="the tiny BART needs torch")
    pytest.importorskip("transformers", reason="the tiny BART needs transformers")
    from helpers import tiny_models

    return tiny_models.build_bart(tmp_path_factory.mktemp("tiny") / "bart")


@pytest.fixture(scope="session")
def ray_cluster():
    """A real local Ray cluster (:class:`local_ray.LocalCluster`, 2 CPUs, loopback only, the
    session's token), started once per session and stopped at its end; skips without Ray."""
    pytest.importorskip("ray", reason="the Ray executor's tests need ray (requirements-test.txt)")
    with local_ray.LocalCluster(cpus=2) as cluster:
        try:
            yield cluster
        finally:
            if "ray" in sys.modules and sys.modules["ray"].is_initialized():
                sys.modules["ray"].shutdown()  # a driver here that loses its cluster ends this process


@pytest.fixture(scope="session")
def ray_address(ray_cluster):
    """``127.0.0.1:PORT`` of :func:`ray_cluster`."""
    return ray_cluster.address


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """A generation cache of the test's own (returned), and no proxy, OpenAI key or base URL from the machine."""
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("no_proxy", "*")  # a proxy configured on the machine must not take 127.0.0.1
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "cache"


@pytest.fixture
def throwaway_plugins():
    """Register plugin objects for one test: ``throwaway_plugins(obj, "name")``."""
    from ctrlkit.plugins import load_plugins, pm

    load_plugins()
    names = []

    def register(plugin, name):
        pm.register(plugin, name=name)
        names.append(name)

    yield register
    for name in names:
        pm.unregister(name=name)
