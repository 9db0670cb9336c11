"""The ``ray`` executor: a run's generation data-parallel on Ray workers (:mod:`ctrlkit.executors.ray_generation`),
a sweep's cells as Ray tasks (:mod:`ctrlkit.executors.ray_cells`); Ray itself is imported only then
(:mod:`ctrlkit.executors.ray_support`)."""

from __future__ import annotations

from ..components import Executor
from ..errors import OptionError


class RayExecutor(Executor):
    """A Ray cluster: the one at --address, else $RAY_ADDRESS, else a new local Ray instance."""

    def check_run(self, workers, address):
        if workers is None:
            return 1
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise OptionError(f"workers must be a whole number of at least 1, got {workers!r}")
        return workers

    def check_sweep(self, address):
        """Any address: the cluster is reached (or refused, in one line) when the cells start."""

    def generation(self, address, spec, options, backbone, workers, cache):
        from .ray_generation import RayGeneration

        return RayGeneration(address, spec, options, backbone, workers, cache)

    def run_cells(self, pending, *, out_dir, address, cache, progress, done, announce) -> None:
        from .ray_cells import run_cells

        run_cells(pending, out_dir=out_dir, address=address, cache=cache, progress=progress, done=done)
