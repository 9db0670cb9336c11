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

import logging
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..api import backbone_name, get_dataset, get_executor
from ..component_options import RunOptions, qualified
from ..controls import carries
from ..digest import data_digest
from ..engine.setup import DEFAULT_METRICS, component_names, default_metrics, with_data
from ..errors import ConfigurationError
from ..files import atomic_write_json
from ..outputs import check_output, leaves_no_empty_folder, slug
from ..plugins import get_registry
from ..progress import say
from ..quiet import quietly
from ..report_files import remove_stale_report
from ..results import SCHEMA_VERSION, versions
from ..sampling import draw_sample
from ..secrets import mask_secrets
from ..topic_source import ORACLE, topic_count
from ..uncertainty import DEFAULT_RESAMPLES
from .cells import cell_components, given_options, reusable_results
from .compare import Reference, compare
from .folder import SETTINGS_FILE, check_earlier_sweep
from .recipes import Recipe, given_settings, load_recipe, meta_evaluate_recipe, overlaid
from .settings import DEFAULT_BACKBONES, DEFAULT_DATASETS, check_settings, sweep_components
from .table import comparisons_record, write_table
from .variants import AXES, Entry, cell_options, check_variants, entries, recorded

logger = logging.getLogger("ctrlkit")


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
    (:mod:`ctrlkit.sweeps.ray_cells`). The executor changes where cells run, not what they give, so it is
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
    defaults = {"backbones": DEFAULT_BACKBONES, "datasets": DEFAULT_DATASETS, "seed": 0, "batch_size": 16, "cache": True,
                "bootstrap": DEFAULT_RESAMPLES}
    given.update({key: value for key, value in defaults.items() if given[key] is None})
    if not controllers or (metrics is not None and not metrics) or not given["backbones"] or not given["datasets"]:
        raise ConfigurationError("a sweep needs at least one controller, metric, backbone and dataset")
    seed, batch_size, cache, bootstrap = given["seed"], given["batch_size"], given["cache"], given["bootstrap"]
    checked = check_settings({key: list(value) if isinstance(value, tuple) else _plain(value)
                              for key, value in given.items()}, "sweep")
    check_variants(checked, "sweep")
    variants = checked.get("variants") or {}
    axes = {kind: entries(kind, checked[kind], variants) for kind in AXES}
    metrics = checked.get("metrics")
    data, options, baseline, device = (checked.get(key) for key in ("data", "options", "baseline", "device"))
    only_topics = checked.get("only_topics")
    reference = checked.get("reference")
    if reference is not None and reference not in [e.label for e in axes["controllers"]]:
        raise ConfigurationError(f"reference '{reference}' is not a controller of the sweep (controllers: "
                                 f"{', '.join(e.label for e in axes['controllers'])})")
    reference_backbone = checked.get("reference_backbone")
    if reference_backbone is not None:
        if reference is not None:
            raise ConfigurationError("a sweep compares its rows with a reference controller or a reference backbone, "
                                     "not both: give reference or reference_backbone")
        if reference_backbone not in [e.label for e in axes["backbones"]]:
            shown = mask_secrets(", ".join(e.label for e in axes["backbones"]))
            raise ConfigurationError(f"reference_backbone '{mask_secrets(reference_backbone)}' is not a backbone of "
                                     f"the sweep (backbones: {shown})")
    if topic_source is not None:
        topic_count(topic_source)  # a bad value is refused before any cell
    # every option must fit a component of some cell (each cell takes those of its own components)
    RunOptions(options, sweep_components(checked)).check_unused()
    out_dir = Path(out)
    check_output(out_dir)
    options = options or {}
    # each dataset reads the file given for it, else (a variant) the one given for its component
    paths = {e.label: (data or {}).get(e.label) or (data or {}).get(e.spec) for e in axes["datasets"]}
    paths = {label: path for label, path in paths.items() if path is not None}
    read = {e.label: given_options(cell_options(with_data(options, e.spec, paths.get(e.label)),
                                                [("datasets", e.spec)], [e]), "datasets", e.spec)
            for e in axes["datasets"]}
    scoring = _scoring(axes["datasets"], read, metrics, split, limit, sample, seed)
    metrics = [name for name in (metrics or DEFAULT_METRICS) if any(name in names for names in scoring.values())]
    settings = {"controllers": list(checked["controllers"]), "metrics": metrics,
                "backbones": list(checked["backbones"]), "datasets": list(checked["datasets"]), "data": paths,
                "split": split, "topics": topics, "only_topics": only_topics, "topic_source": topic_source,
                "options": {k: dict(v) for k, v in options.items()},
                "variants": variants, "judge": judge, "limit": limit, "sample": sample, "seed": seed,
                "batch_size": batch_size, "baseline": baseline, "reference": reference,
                "reference_backbone": reference_backbone, "bootstrap": bootstrap, "device": device}
    # what the files hold now: a cell made from other bytes runs again
    digests = {"data": {label: data_digest(given.get("path")) for label, given in read.items()},
               "topics": data_digest(topics)}
    check_earlier_sweep(out_dir, mask_secrets(settings), digests, overwrite)
    sweep_options = with_device(settings["options"], [e.spec for e in axes["backbones"]], device)
    cells = []
    for dataset in axes["datasets"]:
        for backbone in axes["backbones"]:
            for controller in axes["controllers"]:
                arguments = dict(dataset=dataset.spec, data=paths.get(dataset.label), split=split,
                                 controller=controller.spec, backbone=backbone.spec, metrics=scoring[dataset.label],
                                 topics=topics, only_topics=only_topics, topic_source=topic_source or ORACLE,
                                 options=sweep_options, judge=judge, baseline=baseline, limit=limit,
                                 sample=sample, seed=seed, batch_size=batch_size, bootstrap=bootstrap)
                cell = (controller, backbone, dataset)  # in the order of AXES
                arguments["options"] = cell_options(sweep_options, [*cell_components(arguments), *(
                    ("controllers", name) for name in component_names(baseline))], cell)
                folder = f"cells/{slug(dataset.label)}--{slug(backbone.label)}--{slug(controller.label)}"
                cell_digests = {"data": digests["data"][dataset.label], "topics": digests["topics"]}
                labels = {AXES[kind]: entry.label for kind, entry in zip(AXES, cell)}
                record = mask_secrets(recorded(cell))
                cells.append((folder, arguments, labels, record,
                              reusable_results(out_dir / folder, cell_digests, arguments, record)))
    reusable = sum(done is not None for *_, done in cells)
    if progress and reusable:
        say(f"sweep: resuming: {reusable} of {len(cells)} cells already done")

    def write_settings() -> None:  # once a cell is done, so a sweep that fails at once leaves nothing
        atomic_write_json(out_dir / SETTINGS_FILE, {"schema_version": SCHEMA_VERSION, "settings": mask_secrets(settings),
                                                    "digests": digests, "versions": versions(),
                                                    **({"recipe": dict(recorded_recipe)} if recorded_recipe else {})})

    if reusable:
        write_settings()
    finished: dict[int, dict] = {}

    def done(number: int, results: dict) -> None:
        if not finished and not reusable:
            write_settings()
        finished[number] = results

    pending = [(number, folder, arguments, record) for number, (folder, arguments, _, record, results)
               in enumerate(cells, 1) if results is None]
    def announce(number: int) -> None:
        shown = mask_secrets(cells[number - 1][2])
        say(f"sweep: cell {number} of {len(cells)}: controller {shown['controller']}, backbone "
            f"{shown['backbone']}, dataset {shown['dataset']}")

    if pending:
        executing.run_cells(pending, out_dir=out_dir, address=address, cache=cache, progress=progress, done=done,
                            announce=announce)
    rows, recorded_options = [], {}
    for number, (folder, _, labels, _, results) in enumerate(cells, 1):
        shown = mask_secrets({name: labels[name] for name in ("controller", "backbone", "dataset")})
        reused = results is not None
        results = results if reused else finished[number]
        rows.append({**shown, "run": folder, "metrics": results["metrics"], "intervals": results.get("intervals"),
                     "cache": results.get("cache"), "reused": reused})
        recorded_options[folder] = results["config"]["options"]  # the metrics compare() makes again
    against = (Reference("backbone", mask_secrets(reference_backbone)) if reference_backbone
               else Reference("controller", reference))
    compare(out_dir, rows, against, {e.label: e.spec for e in axes["controllers"]}, bootstrap, seed, recorded_options)
    write_table(out_dir, rows, comparisons_record(rows, against, bootstrap, seed))
    if not all(row["reused"] for row in rows):
        remove_stale_report(out_dir, "the sweep's earlier cells")
    return rows


def _plain(value):
    """A mapping given to :func:`sweep` (options, variants) as plain dicts, however deeply nested."""
    if not isinstance(value, Mapping):
        return value
    return {key: _plain(item) if isinstance(item, Mapping) else item for key, item in value.items()}


def _scoring(datasets: Sequence[Entry], read: Mapping[str, dict], metrics: Sequence[str] | None, split: str | None,
             limit: int | None, sample: int | None, seed: int) -> dict[str, list[str]]:
    """The metrics each dataset's cells score (by label). Without ``metrics``: those a run given none
    would score (:func:`ctrlkit.engine.setup.default_metrics`). With them, in a sweep of several datasets,
    a metric reading a control that no example of one dataset carries (keywords in CCSBench's
    length subset) is left out of that dataset's cells, in one warning line, where another dataset
    of the sweep has it; a metric no dataset can feed stays, and its cells refuse it as a run would."""
    registry = get_registry("metrics")
    reads = {name: getattr(registry.entry(name).load(registry.kind), "reads", ()) for name in metrics or ()}
    if metrics and (len(datasets) == 1 or not any(reads.values())):  # nothing to leave out: read no data here
        return {e.label: list(metrics) for e in datasets}
    examples = {e.label: _examples(e, read[e.label], split, limit, sample, seed) for e in datasets}
    if not metrics:
        return {label: default_metrics(found, label, "--metrics") for label, found in examples.items()}
    lacking = {label: {name: [attribute for attribute in reads[name]
                              if not any(carries(example, attribute) for example in found)]
                       for name in metrics} for label, found in examples.items()}
    fed = {name for name in metrics if any(not missing[name] for missing in lacking.values())}
    scoring = {}
    for dataset, missing in lacking.items():
        dropped = [name for name in metrics if missing[name] and name in fed]
        if dropped:
            logger.warning("ctrlkit: no example of dataset '%s' has a %s control, so its cells do not score %s "
                           "(other datasets of the sweep do)", dataset,
                           " or ".join(dict.fromkeys(a for name in dropped for a in missing[name])), ", ".join(dropped))
        scoring[dataset] = [name for name in metrics if name not in dropped]
    return scoring


def _examples(dataset: Entry, options: dict, split: str | None, limit: int | None, sample: int | None,
              seed: int) -> list:
    """The examples the cells of ``dataset`` will read (``options``: the dataset's, its file included)."""
    source = get_dataset(dataset.spec, **options)
    examples = source.load(split if split is not None else source.default_split)[:limit]
    return draw_sample(examples, sample, seed, dataset.label) if sample is not None else examples


def with_device(options: dict, backbones: Sequence[str], device: str | None) -> dict:
    """``options`` with ``device`` set on every backbone of the sweep that takes a device option."""
    if device is None:
        return options
    registry = get_registry("backbones")
    names = list(dict.fromkeys(backbone_name(backbone) for backbone in backbones))
    taking = [name for name in names
              if any(option.name == "device" for option in getattr(registry.entry(name).load(registry.kind),
                                                                    "options", ()))]
    if not taking:
        raise ConfigurationError(f"device {device!r}: no backbone of the sweep takes a device ({', '.join(names)})")
    keys = [qualified(("backbones", name)) for name in taking]
    return {**options, **{key: {**options.get(key, {}), "device": device} for key in keys}}


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
