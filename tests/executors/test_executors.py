"""Executors are components: the built-ins register through the same hook a plugin uses, a
third party's executor runs a run's generation and a sweep's cells, and the conformance kit
checks that an executor gives what the local one gives."""

from contextlib import contextmanager

import pytest

import ctrlkit
from ctrlkit.testing import check_executor

from helpers import invoke_ctrlkit


class Batches:
    """A generation pool that generates here, batch by batch, and counts what it was given: the
    interface RayGeneration implements, without Ray."""

    label = " (counting)"

    def __init__(self, backbone):
        self.backbone, self.batches_asked = backbone, 0

    def prepared(self, controller):
        pass

    def batches(self, inputs, keys, todo, ids, batch_size):
        for start in range(0, len(todo), batch_size):
            self.batches_asked += 1
            batch = todo[start:start + batch_size]
            yield batch, list(self.backbone.generate([inputs[i] for i in batch])), {}


class Backwards(ctrlkit.Executor):
    """Runs a sweep's cells last first, and generates through a counting pool."""

    pools: list = []
    cells: list = []

    @contextmanager
    def generation(self, address, spec, options, backbone, workers, cache):
        pool = Batches(backbone)
        Backwards.pools.append(pool)
        yield pool

    def run_cells(self, pending, *, out_dir, address, cache, progress, done, announce):
        from ctrlkit.plugin_api import run_cell

        for number, folder, arguments, record in reversed(pending):
            Backwards.cells.append(number)
            done(number, run_cell(out_dir / folder, arguments, record, cache, progress))


class Plugin:
    @ctrlkit.hookimpl
    def register_executors(self, register):
        register("backwards", Backwards)


@pytest.fixture
def backwards(throwaway_plugins, private_cache):
    Backwards.pools.clear()
    Backwards.cells.clear()
    throwaway_plugins(Plugin(), "backwards-executor")


def test_the_built_ins_are_registered_through_the_hook():
    from ctrlkit.plugins import get_registry

    registry = get_registry("executors")
    assert registry.names() == ["local", "ray"]
    assert {registry.entry(name).plugin for name in registry.names()} == {"ctrlkit.executors"}
    assert isinstance(ctrlkit.get_executor("local"), ctrlkit.Executor)


def test_a_plugins_executor_runs_generation_and_cells_and_conforms(throwaway_plugins, private_cache, tmp_path):
    @ctrlkit.hookimpl
    def register_executors(register):
        register("backwards", Backwards)

    class Module:  # the hook as a plugin module defines it
        pass

    Module.register_executors = staticmethod(register_executors)
    Backwards.pools.clear()
    Backwards.cells.clear()
    throwaway_plugins(Module(), "backwards-module")
    check_executor("backwards", tmp_path / "kit")
    assert sum(pool.batches_asked for pool in Backwards.pools) >= 2  # the run's arms were generated through it
    assert Backwards.cells == [2, 1]  # the sweep's cells ran through it, last first


def test_the_command_line_takes_a_plugins_executor_and_lists_it(backwards, tmp_path):
    done = invoke_ctrlkit("sweep", "--controllers", "none,tag", "--metrics", "stas", "--limit", "4",
                          "--executor", "backwards", "-o", tmp_path / "s")
    assert done.returncode == 0, done.stderr
    assert Backwards.cells == [2, 1]
    listed = invoke_ctrlkit("list", "executors")
    assert "backwards" in listed.stdout and "local" in listed.stdout and "ray" in listed.stdout


def test_an_executor_that_takes_no_workers_refuses_them_in_one_line(backwards):
    with pytest.raises(ctrlkit.OptionError, match=r"^--workers needs --executor ray"):
        ctrlkit.run(executor="backwards", workers=2, limit=2)
