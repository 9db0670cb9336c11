"""``ctrlkit sweep``: the cross product of controllers x backbones x datasets, each cell a run
with the same metrics, and the table a paper prints (rows: cells, columns: metric values).

Each cell is a run folder under ``OUT/cells/``; with a ``baseline``, each cell's run scores it
beside the cell's controller on the same examples and records it, as ``ctrlkit run`` does (the
table keeps one row per cell: name the baseline among the controllers for a row of its own).
A cell whose results.json already holds the same configuration (secrets aside: a new API key
gives the same outputs), made from data holding the same bytes (``data_digest``), is reused; any
other cell, or one whose results.json is damaged, runs again, and the shared generation cache
makes that cheap: rerunning a sweep with one more metric generates nothing. A sweep killed at
any moment resumes the same way. A folder holding a sweep with other settings is refused
(:mod:`ctrlkit.sweeps.folder`). A variant (:mod:`ctrlkit.sweeps.variants`) is a component with
other options, named as a row, backbone or dataset of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ..api import get_executor
from ..errors import ConfigurationError
from ..files import atomic_write_json
from ..outputs import leaves_no_empty_folder
from ..progress import say
from ..quiet import quietly
from ..report_files import remove_stale_report
from ..results import SCHEMA_VERSION, versions
from ..secrets import mask_secrets
from .compare import Reference, compare
from .folder import SETTINGS_FILE, release_claim
from .plan import SweepPlan, plan_sweep
from .recipes import Recipe, given_settings, load_recipe, meta_evaluate_recipe, overlaid
from .table import comparisons_record, write_table


@leaves_no_empty_folder
@quietly
def sweep(
    *,
    out: str,
    controllers: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    backbones: Sequence[str] | None = None,
    datasets: Sequence[str] | None = None,
    data: Mapping[str, str] | None = None,
    split: str | None = None,
    topics: str | None = None,
    only_topics: Sequence[str] | str | None = None,
    topic_source: str | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    variants: Mapping[str, Mapping[str, Any]] | None = None,
    judge: str | None = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int | None = None,
    batch_size: int | None = None,
    baseline: str | None = None,
    reference: str | None = None,
    reference_backbone: str | None = None,
    bootstrap: int | None = None,
    device: str | None = None,
    cache: bool | None = None,
    recipe: str | None = None,
    overwrite: bool = False,
    progress: bool = False,
    executor: str = "local",
    address: str | None = None,
    recorded_recipe: Mapping[str, str] | None = None,
) -> list[dict]:
    """Run every (dataset, backbone, controller) cell; write the table; return its rows.

    ``recipe`` (a name from :func:`ctrlkit.recipes`, or a recipe file) gives the settings, and
    those given here win over its own (:func:`ctrlkit.sweeps.recipes.run_recipe`, which passes
    ``recorded_recipe``, the recipe's name and file digest, for sweep.json). Otherwise a setting
    left None takes its default: backbones extractive, datasets sample, seed 0, batch_size 16,
    cache on.
    ``data`` maps a dataset name to the file it reads. ``baseline`` is a controller each cell's
    run scores beside its own (recorded in the cell's results.json). ``device`` is set on every
    backbone that takes one. ``cache``, ``only_topics`` and ``topic_source`` as in :func:`ctrlkit.run`
    (``topic_source`` None: oracle). A folder holding a sweep with
    other settings is refused unless these only add controllers, metrics, backbones or datasets
    (the sweep resumes), or ``overwrite`` removes the earlier sweep's cells, tables and report
    first. The settings are checked as a configuration file's are, so names may also be one
    comma-separated string. ``variants`` names a component with other options, used where a
    controller, backbone or dataset is named (``{"few-shot": {"of": "prompt", "options": {"template":
    "few-shot"}}}``, :mod:`ctrlkit.sweeps.variants`); its cells, rows and ``data`` key carry its name.
    ``sample`` draws that many examples of each dataset at random with the
    seed, as :func:`ctrlkit.run` does (every cell of a dataset gets the same ones), where ``limit``
    takes the first N; not both. Without ``metrics``, each dataset's cells score rouge, and stas when
    some example of that dataset (of those the cells read) has a topic: a dataset without topics
    drops stas, in one line, rather than failing its cells. ``bootstrap`` (default 1000, 0 skips)
    is each cell's count of resamples; ``reference`` names the controller each (dataset, backbone)
    compares its other rows with (:mod:`ctrlkit.sweeps.compare`; default ``none``);
    ``reference_backbone`` instead names a backbone each (dataset, controller) compares its other
    backbones' rows with (a fine-tuned model against the one it was trained from). Changing any
    resumes the sweep (:data:`ctrlkit.sweeps.folder.RECOMPUTED`).

    ``executor`` ``"local"`` (default) runs the cells one after another in this process; ``"ray"``
    runs each as a task on the Ray cluster at ``address`` (``HOST:PORT``; None: ``RAY_ADDRESS``, else
    a new local Ray instance), all at once as its resources allow, and writes them here
    (:mod:`ctrlkit.executors.ray_cells`). The executor changes where cells run, not what they give, so it is
    not a setting of the sweep: a sweep begun with one resumes with the other."""
    executing = get_executor(executor)
    executing.check_sweep(address)
    given = {"controllers": controllers, "metrics": metrics, "backbones": backbones, "datasets": datasets,
             "data": data, "split": split, "topics": topics, "only_topics": only_topics,
             "topic_source": topic_source, "options": options, "variants": variants,
             "judge": judge, "limit": limit, "sample": sample, "seed": seed, "batch_size": batch_size,
             "baseline": baseline, "reference": reference, "reference_backbone": reference_backbone,
             "bootstrap": bootstrap, "device": device, "cache": cache}
    if recipe is not None:
        return run_recipe(recipe, out=out, overwrite=overwrite, progress=progress, executor=executor, address=address,
                          **given)
    plan = plan_sweep(given, Path(out), overwrite)
    try:
        return _run_plan(plan, executing, address, progress, recorded_recipe)
    finally:
        release_claim(plan.out_dir, mask_secrets(plan.settings))


def _run_plan(plan: SweepPlan, executing, address: str | None, progress: bool,
              recorded_recipe: Mapping[str, str] | None) -> list[dict]:
    """Run the planned sweep's pending cells, compare its rows and write its table; its rows."""
    reusable = sum(cell.results is not None for cell in plan.cells)
    if progress and reusable:
        say(f"sweep: resuming: {reusable} of {len(plan.cells)} cells already done")
    finished = run_pending(plan, executing, address, progress, recorded_recipe)
    rows, recorded_options = [], {}
    for number, cell in enumerate(plan.cells, 1):
        shown = mask_secrets({name: cell.labels[name] for name in ("controller", "backbone", "dataset")})
        reused = cell.results is not None
        results = cell.results if reused else finished[number]
        rows.append({**shown, "run": cell.folder, "metrics": results["metrics"], "intervals": results.get("intervals"),
                     "cache": results.get("cache"), "reused": reused})
        recorded_options[cell.folder] = results["config"]["options"]  # the metrics compare() makes again
    settings = plan.settings
    against = (Reference("backbone", mask_secrets(settings["reference_backbone"])) if settings["reference_backbone"]
               else Reference("controller", settings["reference"]))
    compare(plan.out_dir, rows, against, plan.controller_specs, settings["bootstrap"], settings["seed"],
            recorded_options)
    write_table(plan.out_dir, rows, comparisons_record(rows, against, settings["bootstrap"], settings["seed"]))
    if not all(row["reused"] for row in rows):
        remove_stale_report(plan.out_dir, "the sweep's earlier cells")
    return rows


def run_pending(plan: SweepPlan, executing, address: str | None, progress: bool,
                recorded_recipe: Mapping[str, str] | None) -> dict[int, dict]:
    """Run the cells that are not done on the executor; each one's results.json by cell number.
    sweep.json is written once a cell is done (or is found done), so a sweep that fails at once
    leaves nothing behind."""
    def write_settings() -> None:
        atomic_write_json(plan.out_dir / SETTINGS_FILE, {
            "schema_version": SCHEMA_VERSION, "settings": mask_secrets(plan.settings), "digests": plan.digests,
            "versions": versions(), **({"recipe": dict(recorded_recipe)} if recorded_recipe else {})})

    reusable = any(cell.results is not None for cell in plan.cells)
    if reusable:
        write_settings()
    finished: dict[int, dict] = {}

    def done(number: int, results: dict) -> None:
        if not finished and not reusable:
            write_settings()
        finished[number] = results

    def announce(number: int) -> None:
        shown = mask_secrets(plan.cells[number - 1].labels)
        say(f"sweep: cell {number} of {len(plan.cells)}: controller {shown['controller']}, backbone "
            f"{shown['backbone']}, dataset {shown['dataset']}")

    pending = [(number, cell.folder, cell.arguments, cell.record) for number, cell in enumerate(plan.cells, 1)
               if cell.results is None]
    if pending:
        executing.run_cells(pending, out_dir=plan.out_dir, address=address, cache=plan.cache,
                            progress=progress, done=done, announce=announce)
    return finished


def run_recipe(recipe: str | Path | Recipe, *, out: str, overwrite: bool = False, progress: bool = False,
               executor: str = "local", address: str | None = None, **given: Any) -> list[dict]:
    """Run ``recipe`` into ``out`` with the settings ``given`` (None: not given) over its own;
    returns the rows of the table it writes (a sweep's; a meta-eval's, one per score). ``executor``
    and ``address`` say where a sweep's cells run (:func:`sweep`)."""
    if not isinstance(recipe, Recipe):
        recipe = load_recipe(recipe)
    given = given_settings(given)
    if recipe.kind == "meta-eval":
        if executor != "local":
            raise ConfigurationError(f"recipe '{recipe.name}' is a meta-evaluation: it scores the dataset's own "
                                     f"outputs here and has no cells for executor '{executor}' to run")
        return meta_evaluate_recipe(recipe, out, given, progress)
    return sweep(out=out, overwrite=overwrite, progress=progress, executor=executor, address=address,
                 recorded_recipe=recipe.record(), **overlaid(recipe, given))
