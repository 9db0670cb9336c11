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
(:mod:`ctrlkit.sweep_folder`). A variant (:mod:`ctrlkit.sweep_variants`) is a component with
other options, named as a row, backbone or dataset of its own.
"""

from __future__ import annotations

import csv
import io
import logging
from pathlib import Path
from typing import Any, Mapping, Sequence

from .errors import ConfigurationError, CtrlkitError, DatasetError, OptionError
from .digest import backbone_digest, data_digest
from .files import atomic_write_json, atomic_write_text, read_json
from .markdown import escape_markdown, markdown_table
from .metric_values import best, better, directions, is_count, label
from .options import Option
from .report import describe_difference, describe_interval, flatten, remove_stale_report
from .api import backbone_name, get_dataset
from .component_options import RunOptions, qualified
from .controls import carries
from .engine.run import run
from .engine.setup import DEFAULT_METRICS, component_names, components, default_metrics, with_data
from .plugins import get_registry
from .outputs import check_output, leaves_no_empty_folder, slug
from .progress import say
from .quiet import quietly
from .ray_support import check_executor
from .results import value_text, versions
from .sampling import draw_sample
from .secrets import mask_secrets
from .sweep_folder import SETTINGS_FILE, check_earlier_sweep
from .sweep_compare import CONFIDENCE, DEFAULT_REFERENCE, Reference, blocks, compare, reference_phrase
from .sweep_settings import DEFAULT_BACKBONES, DEFAULT_DATASETS, check_settings, sweep_components
from .sweep_tex import write_tex
from .uncertainty import DEFAULT_RESAMPLES
from .sweep_variants import AXES, Entry, cell_options, check_variants, entries, recorded
from .topic_source import ORACLE, topic_count

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, published as tomli
    import tomli as tomllib

logger = logging.getLogger("ctrlkit")

MAX_CONFIG_BYTES = 64 * 1024  # a hand-written configuration is a few hundred bytes; PyYAML reads ~100 KB/s
MAX_YAML_DEPTH = 16  # a configuration nests three deep (options.component.option)


def load_config(path: str | Path) -> dict:
    """A sweep configuration from TOML or YAML (parsed as data only, never executed), each
    setting checked (:mod:`ctrlkit.sweep_settings`, :mod:`ctrlkit.sweep_variants`)."""
    checked = check_settings(read_config(path), str(path))
    check_variants(checked, str(path))
    return checked


def read_config(path: str | Path) -> dict:
    """The table of settings a TOML or YAML file holds, unchecked (parsed as data only, never
    executed). YAML aliases are refused: a few lines of nested aliases name billions of values (the
    "billion laughs"), and a configuration needs none."""
    path = Path(path)
    yaml_file = path.suffix in (".yaml", ".yml")
    if yaml_file:
        try:
            import yaml
        except ImportError:
            raise ConfigurationError(f"{path}: YAML needs PyYAML (pip install pyyaml), or use TOML") from None
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigurationError(f"{path}: a sweep configuration must be at most {MAX_CONFIG_BYTES} bytes")
        text = raw.decode("utf-8")
        if yaml_file:
            _refuse_yaml_hazards(yaml, text, path)
        config = yaml.safe_load(text) if yaml_file else tomllib.loads(text)  # safe_load: data, never objects
    except (OSError, UnicodeDecodeError, ValueError, RecursionError, *((yaml.YAMLError,) if yaml_file else ())) \
            as exc:
        raise ConfigurationError(f"{path}: cannot read the sweep configuration ({' '.join(str(exc).split())})") \
            from None
    if not isinstance(config, dict):
        raise ConfigurationError(f"{path}: expected a table of settings")
    return config


def _refuse_yaml_hazards(yaml, text: str, path: Path) -> None:
    """Refuse aliases (nested ones name billions of values, the "billion laughs") and deep nesting
    (PyYAML's time grows with the square of the depth, then its recursion overflows), reading the
    tokens only as far as the first one."""
    depth = 0
    for token in yaml.scan(text):
        if isinstance(token, yaml.AliasToken):
            raise ConfigurationError(f"{path}, line {token.start_mark.line + 1}: YAML aliases (*{token.value}) are "
                                     f"not accepted in a sweep configuration; write the value out")
        if isinstance(token, (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken, yaml.BlockSequenceStartToken,
                              yaml.BlockMappingStartToken)):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise ConfigurationError(f"{path}, line {token.start_mark.line + 1}: nested more than "
                                         f"{MAX_YAML_DEPTH} deep, more than a sweep configuration needs")
        elif isinstance(token, (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken, yaml.BlockEndToken)):
            depth -= 1


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
    those given here win over its own (:func:`ctrlkit.recipe.run_recipe`, which passes
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
    "few-shot"}}}``, :mod:`ctrlkit.sweep_variants`); its cells, rows and ``data`` key carry its name.
    ``sample`` draws that many examples of each dataset at random with the
    seed, as :func:`ctrlkit.run` does (every cell of a dataset gets the same ones), where ``limit``
    takes the first N; not both. Without ``metrics``, each dataset's cells score rouge, and stas when
    some example of that dataset (of those the cells read) has a topic: a dataset without topics
    drops stas, in one line, rather than failing its cells. ``bootstrap`` (default 1000, 0 skips)
    is each cell's count of resamples; ``reference`` names the controller each (dataset, backbone)
    compares its other rows with (:mod:`ctrlkit.sweep_compare`; default ``none``);
    ``reference_backbone`` instead names a backbone each (dataset, controller) compares its other
    backbones' rows with (a fine-tuned model against the one it was trained from). Changing any
    resumes the sweep (:data:`ctrlkit.sweep_folder.RECOMPUTED`).

    ``executor`` ``"local"`` (default) runs the cells one after another in this process; ``"ray"``
    runs each as a task on the Ray cluster at ``address`` (``HOST:PORT``; None: ``RAY_ADDRESS``, else
    a new local Ray instance), all at once as its resources allow, and writes them here
    (:mod:`ctrlkit.sweep_ray`). The executor changes where cells run, not what they give, so it is
    not a setting of the sweep: a sweep begun with one resumes with the other."""
    check_executor(executor)
    if address is not None and executor != "ray":
        raise ConfigurationError(f"address {address!r} names a Ray cluster; it is for executor 'ray' "
                                 f"(--executor ray --address HOST:PORT), not '{executor}'")
    given = {"controllers": controllers, "metrics": metrics, "backbones": backbones, "datasets": datasets,
             "data": data, "split": split, "topics": topics, "only_topics": only_topics,
             "topic_source": topic_source, "options": options, "variants": variants,
             "judge": judge, "limit": limit, "sample": sample, "seed": seed, "batch_size": batch_size,
             "baseline": baseline, "reference": reference, "reference_backbone": reference_backbone,
             "bootstrap": bootstrap, "device": device, "cache": cache}
    if recipe is not None:
        from .recipe import run_recipe

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
    read = {e.label: _given(cell_options(with_data(options, e.spec, paths.get(e.label)), [("datasets", e.spec)], [e]),
                            "datasets", e.spec) for e in axes["datasets"]}
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
    sweep_options = _with_device(settings["options"], [e.spec for e in axes["backbones"]], device)
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
                              _reusable(out_dir / folder, cell_digests, arguments, record)))
    reusable = sum(done is not None for *_, done in cells)
    if progress and reusable:
        say(f"sweep: resuming: {reusable} of {len(cells)} cells already done")

    def write_settings() -> None:  # once a cell is done, so a sweep that fails at once leaves nothing
        atomic_write_json(out_dir / SETTINGS_FILE, {"settings": mask_secrets(settings), "digests": digests,
                                                    "versions": versions(),
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
    if executor == "ray" and pending:
        from .sweep_ray import run_cells

        run_cells(pending, out_dir=out_dir, address=address, cache=cache, progress=progress, done=done)
    else:
        for number, folder, arguments, record in pending:
            if progress:
                shown = mask_secrets(cells[number - 1][2])
                say(f"sweep: cell {number} of {len(cells)}: controller {shown['controller']}, backbone "
                    f"{shown['backbone']}, dataset {shown['dataset']}")
            done(number, run_cell(out_dir / folder, arguments, record, cache, progress))
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
    write_table(out_dir, rows, _comparisons(rows, against, bootstrap, seed))
    if not all(row["reused"] for row in rows):
        remove_stale_report(out_dir, "the sweep's earlier cells")
    return rows


def run_cell(folder: Path, arguments: dict, record: dict, cache: bool, progress: bool) -> dict:
    """Run one cell into ``folder`` (its results.json and samples.jsonl) and return its results;
    ``record``: what its variants ran, kept in its results.json beside what the run recorded. The
    local executor calls it in the sweep folder, a Ray worker in a folder of its own
    (:mod:`ctrlkit.sweep_ray`)."""
    results = run(out=str(folder), strict_options=False, cache=cache, progress=progress, **arguments).results
    if record:
        results["config"]["variants"] = record
        atomic_write_json(folder / "results.json", results)
    return results


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


def _with_device(options: dict, backbones: Sequence[str], device: str | None) -> dict:
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


def _reusable(folder: Path, digests: dict, arguments: dict, variants: dict) -> dict | None:
    """The cell's recorded results when they can be reused (its results.json has this
    configuration, ``variants`` included, and was made from files holding the same bytes), else
    None: it runs."""
    done = folder / "results.json"
    results = _recorded(done) if done.is_file() else None
    if results is not None and (results["config"].get("variants") or {}) == variants and _same_configuration(
            results["config"], mask_secrets(arguments), {**digests, "backbone": _backbone_digest(arguments)}) \
            and _same_judge(results["config"], arguments):
        return results
    return None


def _backbone_digest(arguments: dict, role: str = "backbone") -> str:
    """The cell's backbone (``role="judge"``: its judge) as it is now (a model folder trained again
    is another backbone); only its options are read, no weights are loaded."""
    from .api import get_backbone

    options = _given(arguments["options"], "backbones", backbone_name(arguments[role]))
    return backbone_digest(get_backbone(arguments[role], **options))


def _same_judge(config: dict, arguments: dict) -> bool:
    """Whether the judge that scored a cell is the one it would ask now, as ``backbone_digest`` tells
    for its backbone; a cell whose metrics asked no judge has none to compare. In a sweep that
    names a judge, a cell recorded before ``judge_digest`` was runs again once (whether it asked
    the judge is not recorded; its answers come from the cache while it is the same judge)."""
    if not arguments.get("judge"):
        return True
    if "judge_digest" not in config:
        return False
    return config["judge_digest"] is None or config["judge_digest"] == _backbone_digest(arguments, "judge")


def _given(options: Mapping, kind: str, name: str) -> dict:
    """The options a sweep's ``options`` give component ``name`` of ``kind`` (those it takes)."""
    return RunOptions(options, [(kind, name)], strict=False).of(kind, name)


def _recorded(done: Path) -> dict | None:
    """A cell's results.json, or None when it is damaged (cut short, or of another shape): one
    warning line naming it, and the cell runs again (from the generation cache)."""
    try:
        results = read_json(done, dict)
        flatten(results.get("metrics"), done)  # the table needs numbers (or nulls) there
    except CtrlkitError as exc:
        logger.warning("ctrlkit: %s; running the cell again", exc)
        return None
    config = results.get("config")
    if not isinstance(config, dict) or not isinstance(config.get("options"), dict) \
            or not all(isinstance(values, dict) for values in config["options"].values()) \
            or not isinstance(results.get("metrics"), dict) or not isinstance(results.get("cache"), (dict, type(None))):
        logger.warning("ctrlkit: %s: not the results of a run (no 'config' with 'options', or no 'metrics'); "
                       "running the cell again", done)
        return None
    return results


def _same_configuration(config: dict, arguments: dict, digests: dict) -> bool:
    """Whether a cell's recorded ``config`` is what ``arguments`` (secrets masked, as recorded) ask
    for, made from data and topics files holding the same bytes and by the same backbone (``digests``):
    the same bytes at another path (a moved or copied file) reuse the cell, as its results would not
    change. A path with nothing there to fingerprint (a Hub name) is compared as given. So is a
    file a component read (a prompt or judge template): by the digest it recorded, not its path."""
    for setting, digest in digests.items():
        if config.get(f"{setting}_digest") != digest or (digest is None and config.get(setting) != arguments[setting]):
            return False
    keys = ("dataset", "controller", "backbone", "metrics", "judge", "limit", "sample", "seed", "batch_size")
    if any(config.get(key) != arguments.get(key) for key in keys):
        return False
    if (config.get("bootstrap") or {}).get("resamples") != arguments["bootstrap"]:  # rescored from the cache
        return False
    # recorded since ctrlkit recorded them; a cell from before had the defaults
    if (config.get("only_topics"), config.get("topic_source", ORACLE)) != (arguments.get("only_topics"),
                                                                          arguments.get("topic_source", ORACLE)):
        return False
    if config.get("baseline") != (None if arguments["baseline"] in (None, arguments["controller"]) else
                                  arguments["baseline"]):  # run records no baseline that is the controller
        return False
    if arguments["split"] not in (None, config.get("split")):  # None: the dataset's default, as recorded
        return False
    moved = {(("datasets", arguments["dataset"]), "path")} if digests["data"] is not None else set()  # the digest
    # spoke for it. The options this cell's components took, under the key its results.json used
    recorded = config["options"]
    given = RunOptions(arguments["options"], cell_components(arguments), strict=False)
    for component in given.components:
        taken = recorded.get(qualified(component), recorded.get(component[1]))
        if taken is None:
            continue
        for option, value in given.of(*component).items():
            if (component, option) in moved:
                continue
            recorded_digest = taken.get(f"{option}_digest")
            if recorded_digest is not None:  # a file the component read: its bytes decide, not its path
                if _digest_now(value) != recorded_digest:
                    return False
            elif not _same_value(taken.get(option), value):
                return False
    return True


def _digest_now(path) -> str | None:
    """The digest a component would record for the file at ``path`` now; None when it cannot be read
    (the cell then runs again, and the component says what is wrong with the file)."""
    try:
        return data_digest(str(path))
    except DatasetError:
        return None


def cell_components(arguments: dict) -> list:
    """The ``(kind, name)`` of every component a cell's run may use."""
    return [*components(dataset=arguments["dataset"], controllers=component_names(arguments["controller"]),
                        backbone=arguments["backbone"], metrics=arguments["metrics"], judge=arguments["judge"]),
            *_vectorizers()]


def _vectorizers() -> list:
    """Every installed topic vectorizer: which ones a cell uses is known only once its controller
    and metrics are made."""
    return [("vectorizers", name) for name in get_registry("vectorizers").names()]


def _same_value(recorded, given) -> bool:
    """Whether an option value as given (``--set`` gives strings) is the one recorded (typed)."""
    if isinstance(given, str) and isinstance(recorded, (bool, int, float)):
        try:
            given = Option("given", type(recorded), None, "").coerce(given, "sweep")
        except OptionError:
            return False
    return recorded == given


def columns(rows: Sequence[dict]) -> list[tuple[str, str]]:
    """Every (metric, value) that some row has, in first-seen order."""
    seen: dict[tuple[str, str], None] = {}
    for row in rows:
        for metric, values in row["metrics"].items():
            for name in values:
                seen[(metric, name)] = None
    return list(seen)


def _value(row: dict, column: tuple[str, str]) -> float | None:
    return row["metrics"].get(column[0], {}).get(column[1])


def best_values(rows: Sequence[dict], cols: Sequence[tuple[str, str]], ways: Sequence) -> list[dict]:
    """Per (dataset, backbone), in table order, the best value of each column among its controllers
    (None where there is none: no better way, or fewer than two values differ). Only outputs of one
    backbone for the same examples are compared."""
    return [{"dataset": dataset, "backbone": backbone,
             "values": {label(*column): best((_value(row, column) for row in members), way)
                        for column, way in zip(cols, ways)}}
            for (dataset, backbone), members in blocks(rows).items()]


def _csv_text(text: str) -> str:
    """A name as a CSV cell a spreadsheet shows as text: one starting with ``= + - @`` (or a tab or
    carriage return) would be read as a formula, so it gets a leading apostrophe."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _comparisons(rows: Sequence[dict], against: Reference, resamples: int, seed: int) -> dict | None:
    """What table.json says of the comparisons with the reference rows (None: no bootstrap)."""
    if not resamples:
        return None
    tests = sum(len(values) for row in rows for values in (row.get("paired") or {}).values())
    return {"reference": against.name or DEFAULT_REFERENCE, "reference_axis": against.axis, "resamples": resamples,
            "seed": seed,
            "confidence": CONFIDENCE, "test": "paired bootstrap interval of the difference; paired permutation p",
            "correction": "holm", "family": "every (cell, metric value) comparison of the table", "tests": tests}


def _interval_text(found: dict | None) -> str:
    if not found or found.get("low") is None or found.get("high") is None:
        return ""
    return describe_interval((found["low"], found["high"]))


def _difference_text(test: dict | None) -> str:
    """``+0.0040 [-0.0012, +0.0093] p=0.21 (Holm 0.63)``: the report's difference with its Holm p, or nothing."""
    if not test or test.get("difference") is None:
        return ""
    text = describe_difference(test)
    if test.get("p_holm") is not None:
        text += f" (Holm {test['p_holm']:.3g})"
    return text


def _found(holder: dict | None, column: tuple[str, str]) -> dict | None:
    return ((holder or {}).get(column[0]) or {}).get(column[1])


def write_table(out_dir: Path, rows: Sequence[dict], comparisons: dict | None = None) -> None:
    """table.json, table.csv, table.md and table.tex.

    table.json holds ``rows`` (each cell's ``metrics`` ``{metric: {value: number}}``; ``intervals``
    ``{metric: {value: {"low", "high", "se"}}}``; ``reference``, the controller its difference is to,
    or null; ``paired`` ``{metric: {value: {"difference", "low", "high", "se", "p", "permutations",
    "p_holm"}}}``, null on a reference row and where nothing was compared; ``permutations``, an int,
    is how many counted, so a p at its floor 1 / (1 + permutations) can be told), ``columns`` (each
    value's name, metric, value and better way: the keys into a row's ``metrics``, ``intervals`` and
    ``paired``), ``best`` (the best value of each column per dataset and backbone) and
    ``comparisons`` (the test, resamples, seed and correction; null without a bootstrap). table.csv
    has a column per value, then its interval (``NAME low``, ``NAME high``) and, with comparisons,
    ``reference`` and each value's ``NAME difference``, ``... low``, ``... high``, ``NAME p``,
    ``NAME permutations`` and ``NAME p holm``; table.md each value with its interval and difference
    (the best in bold, ↓ where lower is better); table.tex
    (:mod:`ctrlkit.sweep_tex`) the table a paper prints."""
    cols = columns(rows)
    higher = directions(metric for metric, _ in cols)
    ways = [better(name, higher[metric]) for metric, name in cols]
    labels = [label(metric, name) for metric, name in cols]
    bests = best_values(rows, cols, ways)
    atomic_write_json(out_dir / "table.json", {
        "rows": list(rows),
        "columns": [{"name": name, "metric": metric, "value": value, "better": way}
                    for name, (metric, value), way in zip(labels, cols, ways)],
        "best": bests, "comparisons": comparisons})
    with_intervals = any(row.get("intervals") for row in rows)
    with_tests = any(row.get("paired") for row in rows)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["dataset", "backbone", "controller", *map(_csv_text, labels),
                     *(_csv_text(f"{name} {end}") for name in labels for end in ("low", "high") if with_intervals),
                     *(["reference"] if with_tests else []),
                     *(_csv_text(f"{name} {field}") for name in labels if with_tests
                       for field in ("difference", "difference low", "difference high", "p", "permutations",
                                     "p holm"))])
    for row in rows:
        intervals = [_found(row.get("intervals"), column) or {} for column in cols] if with_intervals else []
        tests = [_found(row.get("paired"), column) or {} for column in cols] if with_tests else []
        writer.writerow([*map(_csv_text, (row["dataset"], row["backbone"], row["controller"])),
                         *("" if v is None else v for v in (_value(row, column) for column in cols)),
                         *(_blank(found.get(end)) for found in intervals for end in ("low", "high")),
                         *([_csv_text(row.get("reference") or "")] if with_tests else []),
                         *(_blank(found.get(key)) for found in tests
                           for key in ("difference", "low", "high", "p", "permutations", "p_holm"))])
    atomic_write_text(out_dir / "table.csv", buffer.getvalue())
    group_best = {(group["dataset"], group["backbone"]): group["values"] for group in bests}
    body = []
    for row in rows:
        cells = []
        for column, name in zip(cols, labels):
            value = _value(row, column)
            text = value_text(value, is_count(column[1]))
            marked = value is not None and value == group_best[row["dataset"], row["backbone"]][name]
            extra = " ".join(filter(None, (_interval_text(_found(row.get("intervals"), column)),
                                           _difference_text(_found(row.get("paired"), column)))))
            cells.append((f"**{text}**" if marked else text) + (f" {extra}" if extra else ""))
        body.append([escape_markdown(row[key]) for key in ("dataset", "backbone", "controller")] + cells)
    header = [escape_markdown(name) + (" ↓" if way == "lower" else "") for name, way in zip(labels, ways)]
    lines = markdown_table(["dataset", "backbone", "controller", *header], body, text_columns=3)
    if comparisons:
        lines += ["", escape_markdown(_md_note(comparisons))]
    atomic_write_text(out_dir / "table.md", "\n".join(lines) + "\n")
    write_tex(out_dir, rows, cols, labels, ways, bests, comparisons)


def _blank(value) -> Any:
    return "" if value is None else value


def _md_note(comparisons: dict) -> str:
    intervals = (f"Each value with its {comparisons['confidence']:.0%} bootstrap interval ({comparisons['resamples']} "
                 f"resamples of the examples, seed {comparisons['seed']})")
    if not comparisons["tests"]:
        return intervals + "."
    return (intervals + "; beside it, on rows other than the reference "
            f"({reference_phrase(comparisons)}): the difference to the "
            f"reference, its paired bootstrap interval, the paired permutation p and the p adjusted by Holm's "
            f"method across the table's {comparisons['tests']} comparisons.")
