"""The ``local`` executor: a run generates in this process, a sweep's cells run here one after another."""

from __future__ import annotations

from pathlib import Path

from ..components import Executor


class LocalExecutor(Executor):
    """Everything in this process: a run's generation, and a sweep's cells one after another."""

    def run_cells(self, pending, *, out_dir, address, cache, progress, done, announce) -> None:
        from ..sweeps.cells import run_cell

        for number, folder, arguments, record in pending:
            if progress:
                announce(number)
            done(number, run_cell(Path(out_dir) / folder, arguments, record, cache, progress))
