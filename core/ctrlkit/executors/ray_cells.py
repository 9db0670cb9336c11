"""A sweep's cells run on a Ray cluster (``ctrlkit sweep --executor ray [--address HOST:PORT]``).

Each cell to run is one Ray task: it runs :func:`ctrlkit.sweeps.cells.run_cell`, the function the local
executor calls, in a temporary folder on its worker and returns the contents of the files written
there (results.json, samples.jsonl), the warning lines the run logged, and the cache entries the
run found or stored (:func:`ctrlkit.cache.recording`). As the cells finish, in the order they
finish, the driver stores each one's entries in its own cache, then writes its files into the
sweep folder as a local run writes them (atomically, results.json last, so a cell whose
results.json is there is whole, and its entries are in the driver's cache); no filesystem is
shared. The sweep's tables are written once every cell is done. A cell whose worker or node died
is tried again (``MAX_RETRIES`` times); a cell that fails as a run fails (a
:class:`ctrlkit.CtrlkitError`, a bug) does not, and the sweep fails with its error, as a local
sweep would, once the other cells are written: a rerun resumes from them.

Resources: a cell takes ``CPUS_PER_CELL`` CPUs, and one GPU when one of its components takes a
``device`` option (the ``hf`` and ``hf-causal`` backbones, a judge among them, ``bertscore``) whose
value is ``cuda`` (or ``cuda:N``; Ray shows the task only the GPU it was given, as ``cuda:0``), or
is left empty while the cluster has GPUs: such a component picks CUDA where it is present, so it
would pick the node's GPU (the cluster's resources decide, not the driver's: the driver may have
no GPU). ``cpu`` asks for none, and so does every other cell (``extractive``; ``openai``, whose
work is on the API's side). A topic vectorizer (``embedding``) counts only with its device set
to ``cuda``: which vectorizers a cell uses is known only once it runs.

What the cluster must have: ctrlkit and its plugins in the same Python environment on every
node (a cell whose node has other versions fails in one line: :func:`ctrlkit.executors.ray_support.check_installed`).
A worker gets the driver's ``PYTHONPATH`` and plugin switches
(:func:`ctrlkit.executors.ray_support.worker_environment`), so it loads the plugins the driver loads, from
the same paths; a plugin registered at run time in the driver (``pm.register``) is not seen there.
The files a cell reads (data, topics, prompt and judge templates, model folders) must be at the
same paths on every node. Everything else is the node's own: API keys, ``HF_HOME``, and the cache
(``CTRLKIT_CACHE_DIR`` there), which a cell reads and fills as a local run does. Its generations and
judge answers, found there or made, also reach the driver's cache (as they were stored, under the
same keys), so that a rerun of the sweep or of any of its cells on the driver's machine, local or
on Ray, generates and asks nothing again; where the driver and a worker share a machine, and so a
cache file, the driver writes the worker's entries again, unchanged. With the cache off
(``cache=False``, ``--no-cache``) no cache is read or written, on any node.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import tempfile
from pathlib import Path, PurePosixPath
from typing import Callable, Sequence

from ..cache import recording, scope as cache_scope, store
from ..component_options import RunOptions
from ..errors import ConfigurationError, CtrlkitError
from ..files import atomic_write_bytes
from ..plugins import get_registry
from ..progress import Progress, say
from .ray_support import check_installed, connect, installed, match_torch_threads, worker_environment
from ..report_files import remove_stale_report
from ..sweeps.cells import cell_components, run_cell

logger = logging.getLogger("ctrlkit")

CPUS_PER_CELL = 1
MAX_RETRIES = 2
"""Tries after the first for a cell whose worker process or node died (never for an error a cell raised)."""
COMPLETE = "results.json"
"""Written last: a cell folder holding it is whole (:func:`ctrlkit.sweeps.cells.reusable_results`)."""

Pending = tuple[int, str, dict, dict]
"""A cell to run: its number in the sweep, its folder under the sweep's, its run's arguments, its variants."""


def run_cells(cells: Sequence[Pending], *, out_dir: Path, address: str | None, cache: bool, progress: bool,
              done: Callable[[int, dict], None]) -> None:
    """Run ``cells`` on the Ray cluster at ``address``, write each into ``out_dir`` as it finishes and
    call ``done(number, results)``; then raise the error of the first cell (in sweep order) that failed."""
    ray = connect(address)
    resources = ray.cluster_resources()
    cluster_gpus = resources.get("GPU", 0) > 0
    where = address or "RAY_ADDRESS or a local instance"
    gpus = {number: needs_gpu(arguments, cluster_gpus) for number, _, arguments, _ in cells}
    if not cluster_gpus and any(gpus.values()):  # its task would wait for a GPU for ever
        folder = next(folder for number, folder, *_ in cells if gpus[number])
        raise ConfigurationError(f"sweep cell {folder} runs on CUDA (a device option set to cuda), but the Ray "
                                 f"cluster at {where} has no GPU; set the device to cpu, or add a node with a GPU")
    task = ray.remote(run_on_worker)
    driver = installed()  # each worker's must be the same
    if progress:
        say(f"sweep: {len(cells)} cells on the Ray cluster at {where} ({resources.get('CPU', 0):g} CPUs, "
            f"{resources.get('GPU', 0):g} GPUs)")
    running = {task.options(num_cpus=CPUS_PER_CELL, num_gpus=1 if gpus[number] else 0,
                            max_retries=MAX_RETRIES, retry_exceptions=False, runtime_env=worker_environment(),
                            name=f"ctrlkit sweep {folder}").remote(arguments, record, cache, driver): (number, folder)
               for number, folder, arguments, record in cells}
    failures: dict[int, tuple[BaseException, BaseException]] = {}  # number: (the error, Ray's report of it)
    # Ray prints what it says of the cluster (a worker died, and its task runs again) on stdout,
    # where the command prints the table: it goes to stderr with ctrlkit's own lines
    with contextlib.redirect_stdout(sys.stderr), cache_scope(enabled=cache), \
            Progress("sweep", len(cells), "cells", enabled=progress) as bar:
        try:
            while running:
                [ready], _ = ray.wait(list(running), num_returns=1)
                number, folder = running.pop(ready)
                try:
                    output = ray.get(ready)
                except ray.exceptions.RayTaskError as exc:  # the cell's own error, as a local cell raises it
                    failures[number] = (exc.cause if isinstance(exc.cause, BaseException) else exc, exc)
                except _deaths(ray) as exc:  # on every try
                    failures[number] = (CtrlkitError(f"sweep cell {folder}: its Ray worker died on each of "
                                                     f"{MAX_RETRIES + 1} tries ({' '.join(str(exc).split())})"), exc)
                except ray.exceptions.RayError as exc:  # Ray could not run it (its runtime_env, a cancel)
                    failures[number] = (CtrlkitError(f"sweep cell {folder}: Ray could not run it: "
                                                     f"{' '.join(str(exc).split())}"), exc)
                else:
                    for line in output["warnings"]:
                        logger.warning("%s", line)
                    store(output["cached"])  # before the cell is whole: a cell written has its entries here
                    done(number, write_cell(out_dir / folder, output["files"]))
                bar.update(1, note=folder.rpartition("/")[2])
        except BaseException:
            for ref in running:  # interrupted: the cells still running are stopped, not left to no one
                ray.cancel(ref, force=True)
            raise
    if failures:  # a ctrlkit error is one line, as locally; a bug keeps the worker's traceback
        error, report = failures[min(failures)]
        raise error from (None if isinstance(error, CtrlkitError) or error is report else report)


def _deaths(ray) -> tuple[type, ...]:
    """Ray's errors for a task whose worker process or node died (after its retries)."""
    return (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError, ray.exceptions.OutOfMemoryError,
            ray.exceptions.LocalRayletDiedError)


def needs_gpu(arguments: dict, cluster_gpus: bool) -> bool:
    """Whether a cell's run (``arguments``) asks Ray for a GPU (the rule in the module's docstring)."""
    options = RunOptions(arguments["options"], cell_components(arguments), strict=False)
    for kind, name in options.components:
        registry = get_registry(kind)
        taken = {option.name: option for option in getattr(registry.entry(name).load(registry.kind), "options", ())}
        if "device" not in taken:
            continue
        device = str(options.of(kind, name).get("device", taken["device"].default) or "")
        # which topic vectorizers a cell uses is known only once its components are made
        if device.startswith("cuda") or (not device and cluster_gpus and kind != "vectorizers"):
            return True
    return False


def run_on_worker(arguments: dict, record: dict, cache: bool, driver_installed: dict) -> dict:
    """The Ray task of one cell: ``{"files": {relative path: bytes}, "warnings": [line], "cached":
    the cache entries its run found or stored}`` (:data:`ctrlkit.cache.Recorded`; none without ``cache``),
    once the node's ctrlkit install is found to be the driver's (``driver_installed``)."""
    check_installed(driver_installed)
    match_torch_threads()
    kept = _Kept()
    ctrlkit_logger = logging.getLogger("ctrlkit")
    ctrlkit_logger.addHandler(kept)
    try:
        with tempfile.TemporaryDirectory(prefix="ctrlkit-cell-") as temporary, recording() as cached:
            folder = Path(temporary) / "cell"
            run_cell(folder, arguments, record, cache, progress=False)
            files = {path.relative_to(folder).as_posix(): path.read_bytes()
                     for path in sorted(folder.rglob("*")) if path.is_file()}
    finally:
        ctrlkit_logger.removeHandler(kept)
    return {"files": files, "warnings": kept.lines, "cached": cached}


class _Kept(logging.Handler):
    """The warning lines ctrlkit logs in a worker, for the driver to show (a worker's stderr is its node's)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def write_cell(folder: Path, files: dict[str, bytes]) -> dict:
    """Write a cell's ``files`` into its ``folder`` in the sweep, results.json last (a report made
    from the folder's earlier results is removed, as a run removes it); return its results."""
    if COMPLETE not in files:
        raise CtrlkitError(f"sweep cell {folder}: its Ray worker returned no {COMPLETE}")
    for name in sorted(files, key=lambda name: name == COMPLETE):
        relative = PurePosixPath(name)
        if relative.is_absolute() or ".." in relative.parts:
            raise CtrlkitError(f"sweep cell {folder}: its Ray worker returned a file outside the cell ({name!r})")
        atomic_write_bytes(folder / relative, files[name])
    remove_stale_report(folder, "the folder's earlier results")
    return json.loads(files[COMPLETE])
