"""A sweep's plan: its settings checked and completed with their defaults, and one cell per
(dataset, backbone, controller), each with the arguments of its run and, where its folder already
holds them, the results it can reuse (:func:`plan_sweep`)."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..api import backbone_name, get_dataset
from ..component_options import RunOptions, qualified
from ..controls import carries
from ..digest import data_digest
from ..engine.assembly import DEFAULT_METRICS, component_names, default_metrics, with_data
from ..errors import ConfigurationError
from ..outputs import check_output, slug
from ..plugins import get_registry
from ..sampling import draw_sample
from ..secrets import mask_secrets
from ..topic_source import ORACLE, topic_count
from ..uncertainty import DEFAULT_RESAMPLES
from .cells import cell_components, given_options, reusable_results
from .folder import check_earlier_sweep, release_claim
from .settings import DEFAULT_BACKBONES, DEFAULT_DATASETS, check_settings, sweep_components
from .variants import AXES, Entry, cell_options, check_variants, entries, recorded

logger = logging.getLogger("ctrlkit")


@dataclass
class Cell:
    """One run of a sweep: its folder (under the sweep's), the keywords of :func:`ctrlkit.run`,
    its labels by axis, what sweep.json records of it, and its results when the folder holds
    reusable ones (None: it runs)."""

    folder: str
    arguments: dict
    labels: dict[str, str]
    record: dict
    results: dict | None


@dataclass
class SweepPlan:
    """``settings`` is what sweep.json records; ``digests`` the data and topics files' digests
    as they are now; ``controller_specs`` each controller row's component (a variant's label maps
    to the component it varies)."""

    out_dir: Path
    settings: dict[str, Any]
    digests: dict
    cells: list[Cell]
    controller_specs: dict[str, str]
    cache: bool


def plan_sweep(given: dict[str, Any], out_dir: Path, overwrite: bool) -> SweepPlan:
    """The plan of a sweep given ``given`` (:func:`ctrlkit.sweep`'s settings, None where not given),
    refusing, before any cell, settings that cannot run and a folder holding another sweep."""
    checked, axes = _checked(given)
    _refuse_colliding_labels(axes)
    split, topics, limit, sample = (checked.get(key) for key in ("split", "topics", "limit", "sample"))
    seed, metrics = checked["seed"], checked.get("metrics")
    # every option must fit a component of some cell (each cell takes those of its own components)
    RunOptions(checked.get("options"), sweep_components(checked)).check_unused()
    check_output(out_dir)
    options, data = checked.get("options") or {}, checked.get("data") or {}
    # each dataset reads the file given for it, else (a variant) the one given for its component
    paths = {e.label: data.get(e.label) or data.get(e.spec) for e in axes["datasets"]}
    paths = {label: path for label, path in paths.items() if path is not None}
    read = {e.label: given_options(cell_options(with_data(options, e.spec, paths.get(e.label)),
                                                [("datasets", e.spec)], [e]), "datasets", e.spec)
            for e in axes["datasets"]}
    scoring = _scoring(axes["datasets"], read, metrics, split, limit, sample, seed)
    settings = {"controllers": list(checked["controllers"]),
                "metrics": [name for name in (metrics or DEFAULT_METRICS)
                            if any(name in names for names in scoring.values())],
                "backbones": list(checked["backbones"]), "datasets": list(checked["datasets"]), "data": paths,
                **{key: checked.get(key) for key in ("split", "topics", "only_topics")},
                "topic_source": given["topic_source"], "options": {k: dict(v) for k, v in options.items()},
                "variants": checked.get("variants") or {},
                **{key: checked.get(key) for key in ("judge", "limit", "sample", "seed", "batch_size", "baseline",
                                                     "reference", "reference_backbone", "bootstrap", "device")}}
    # what the files hold now: a cell made from other bytes runs again
    digests = {"data": {label: data_digest(options_read.get("path")) for label, options_read in read.items()},
               "topics": data_digest(topics)}
    check_earlier_sweep(out_dir, mask_secrets(settings), digests, overwrite)  # and claims the folder
    try:
        cells = _cells(out_dir, settings, axes, paths, scoring, digests)
    except BaseException:
        release_claim(out_dir, mask_secrets(settings))
        raise
    return SweepPlan(out_dir, settings, digests, cells, {e.label: e.spec for e in axes["controllers"]},
                     checked["cache"])


def _checked(given: dict[str, Any]) -> tuple[dict, dict[str, list[Entry]]]:
    """The settings with their defaults, checked as a configuration file's are, and each axis's
    entries (components and variants)."""
    defaults = {"backbones": DEFAULT_BACKBONES, "datasets": DEFAULT_DATASETS, "seed": 0, "batch_size": 16, "cache": True,
                "bootstrap": DEFAULT_RESAMPLES}
    given = {**given, **{key: value for key, value in defaults.items() if given[key] is None}}
    if (not given["controllers"] or (given["metrics"] is not None and not given["metrics"])
            or not given["backbones"] or not given["datasets"]):
        raise ConfigurationError("a sweep needs at least one controller, metric, backbone and dataset")
    checked = check_settings({key: list(value) if isinstance(value, tuple) else _plain(value)
                              for key, value in given.items()}, "sweep")
    check_variants(checked, "sweep")
    axes = {kind: entries(kind, checked[kind], checked.get("variants") or {}) for kind in AXES}
    reference, reference_backbone = checked.get("reference"), checked.get("reference_backbone")
    if reference is not None and reference not in [e.label for e in axes["controllers"]]:
        raise ConfigurationError(f"reference '{reference}' is not a controller of the sweep (controllers: "
                                 f"{', '.join(e.label for e in axes['controllers'])})")
    if reference_backbone is not None:
        if reference is not None:
            raise ConfigurationError("a sweep compares its rows with a reference controller or a reference backbone, "
                                     "not both: give reference or reference_backbone")
        if reference_backbone not in [e.label for e in axes["backbones"]]:
            shown = mask_secrets(", ".join(e.label for e in axes["backbones"]))
            raise ConfigurationError(f"reference_backbone '{mask_secrets(reference_backbone)}' is not a backbone of "
                                     f"the sweep (backbones: {shown})")
    if given["topic_source"] is not None:
        topic_count(given["topic_source"])  # a bad value is refused before any cell
    return checked, axes


def _cells(out_dir: Path, settings: dict, axes: dict[str, list[Entry]], paths: Mapping[str, str],
           scoring: Mapping[str, list[str]], digests: dict) -> list[Cell]:
    """One cell per (dataset, backbone, controller), in that order of nesting."""
    sweep_options = with_device(settings["options"], [e.spec for e in axes["backbones"]], settings["device"])
    shared = {key: settings[key] for key in ("split", "topics", "only_topics", "judge", "baseline", "limit",
                                             "sample", "seed", "batch_size", "bootstrap")}
    cells = []
    for dataset in axes["datasets"]:
        for backbone in axes["backbones"]:
            for controller in axes["controllers"]:
                arguments = dict(dataset=dataset.spec, data=paths.get(dataset.label), controller=controller.spec,
                                 backbone=backbone.spec, metrics=scoring[dataset.label],
                                 topic_source=settings["topic_source"] or ORACLE, options=sweep_options, **shared)
                cell = (controller, backbone, dataset)  # in the order of AXES
                arguments["options"] = cell_options(sweep_options, [*cell_components(arguments), *(
                    ("controllers", name) for name in component_names(settings["baseline"]))], cell)
                folder = cell_folder(dataset.label, backbone.label, controller.label)
                _refuse_linked_cell(out_dir, folder)
                cell_digests = {"data": digests["data"][dataset.label], "topics": digests["topics"]}
                labels = {AXES[kind]: entry.label for kind, entry in zip(AXES, cell)}
                record = mask_secrets(recorded(cell))
                cells.append(Cell(folder, arguments, labels, record,
                                  reusable_results(out_dir / folder, cell_digests, arguments, record)))
    return cells


MAX_CELL_NAME = 200
"""The longest cell folder name kept as it is: file systems allow 255 bytes, and a temporary name
beside it (``.NAME.old``) needs a few more."""


def cell_folder(dataset: str, backbone: str, controller: str) -> str:
    """The folder (under the sweep's) of the cell with these labels; a name over
    :data:`MAX_CELL_NAME` characters (a long variant name or checkpoint path) keeps its head and
    ends with a digest of the whole, so it stays one folder of its own."""
    name = f"{slug(dataset)}--{slug(backbone)}--{slug(controller)}"
    if len(name) > MAX_CELL_NAME:
        name = f"{name[:MAX_CELL_NAME - 17]}--{hashlib.sha256(name.encode()).hexdigest()[:15]}"
    return f"cells/{name}"


def _refuse_linked_cell(out_dir: Path, folder: str) -> None:
    """Refuse, before any cell runs, a link at the sweep's ``cells`` folder or at a cell's folder:
    a sweep makes those folders itself, so a link there was planted, and a cell would read its
    results from where it points and write them there."""
    for folder in ("cells", folder):
        if (out_dir / folder).is_symlink():
            raise ConfigurationError(f"{out_dir / folder} is a link; a sweep writes only into folders it makes: "
                                     "remove the link, or sweep into another folder")


def _refuse_colliding_labels(axes: dict[str, list[Entry]]) -> None:
    """Refuse two cells whose labels map to one folder name: ``tag-3`` and ``tag-3_``, ``Tag`` and
    ``tag`` (one folder on a case-insensitive file system), ``hf:a/b`` and ``hf:a_b``, or a dataset
    ``a--b`` with backbone ``c`` and a dataset ``a`` with backbone ``b--c``. Their cells would share
    a folder and read each other's results."""
    seen: dict[str, tuple[str, ...]] = {}
    for dataset in axes["datasets"]:
        for backbone in axes["backbones"]:
            for controller in axes["controllers"]:
                labels = (dataset.label, backbone.label, controller.label)
                folder = cell_folder(*labels)
                earlier = seen.setdefault(folder.casefold(), labels)
                if earlier != labels:
                    raise ConfigurationError(
                        f"the cells {_shown(earlier)} and {_shown(labels)} map to one folder "
                        f"({mask_secrets(folder)!r}); rename a controller, backbone or dataset (or variant)")


def _shown(labels: tuple[str, ...]) -> str:
    """A cell's labels as an error names them: ``(dataset 'd', backbone 'b', controller 'c')``."""
    return "(" + ", ".join(f"{kind} {mask_secrets(label)!r}"
                           for kind, label in zip(("dataset", "backbone", "controller"), labels)) + ")"


def _plain(value):
    """A mapping given to :func:`sweep` (options, variants) as plain dicts, however deeply nested."""
    if not isinstance(value, Mapping):
        return value
    return {key: _plain(item) if isinstance(item, Mapping) else item for key, item in value.items()}


def _scoring(datasets: Sequence[Entry], read: Mapping[str, dict], metrics: Sequence[str] | None, split: str | None,
             limit: int | None, sample: int | None, seed: int) -> dict[str, list[str]]:
    """The metrics each dataset's cells score (by label). Without ``metrics``: those a run given none
    would score (:func:`ctrlkit.engine.assembly.default_metrics`). With them, in a sweep of several datasets,
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
