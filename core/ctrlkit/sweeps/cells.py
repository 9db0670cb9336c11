"""A sweep's cells: each one a run into its own folder, and whether a cell already done can be
reused (the same configuration, made from files holding the same bytes, by the same backbone
and judge) or must run again."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping

from ..api import backbone_name
from ..component_options import RunOptions, qualified
from ..digest import backbone_digest, data_digest
from ..engine.run import run
from ..engine.assembly import component_names, components
from ..errors import CtrlkitError, DatasetError, OptionError
from ..files import atomic_write_json, read_json
from ..options import Option
from ..plugins import get_registry
from ..recorded_metrics import flatten
from ..results import mismatched_samples
from ..secrets import mask_secrets
from ..topic_source import ORACLE

logger = logging.getLogger("ctrlkit")


def run_cell(folder: Path, arguments: dict, record: dict, cache: bool, progress: bool) -> dict:
    """Run one cell into ``folder`` (its results.json and samples.jsonl) and return its results;
    ``record``: what its variants ran, kept in its results.json beside what the run recorded. The
    local executor calls it in the sweep folder, a Ray worker in a folder of its own
    (:mod:`ctrlkit.executors.ray_cells`)."""
    results = run(out=str(folder), strict_options=False, cache=cache, progress=progress, **arguments).results
    if record:
        results["config"]["variants"] = record
        atomic_write_json(folder / "results.json", results)
    return results


def reusable_results(folder: Path, digests: dict, arguments: dict, variants: dict) -> dict | None:
    """The cell's recorded results when they can be reused (its results.json has this
    configuration, ``variants`` included, and was made from files holding the same bytes), else
    None: it runs."""
    done = folder / "results.json"
    results = _recorded(done) if done.is_file() else None
    if results is not None and (results["config"].get("variants") or {}) == variants and same_configuration(
            results["config"], mask_secrets(arguments), {**digests, "backbone": _backbone_digest(arguments)}) \
            and _same_judge(results["config"], arguments):
        problem = mismatched_samples(folder, results)
        if problem is None:
            return results
        logger.warning("ctrlkit: %s; the cell runs again", problem)
        samples = folder / "samples.jsonl"
        if samples.exists() and not samples.is_symlink() and not (samples.is_file() or samples.is_dir()):
            samples.unlink()  # a pipe planted in the cell's own folder, which the atomic write refuses to replace
    return None


def _backbone_digest(arguments: dict, role: str = "backbone") -> str:
    """The cell's backbone (``role="judge"``: its judge) as it is now (a model folder trained again
    is another backbone); only its options are read, no weights are loaded."""
    from ..api import get_backbone

    options = given_options(arguments["options"], "backbones", backbone_name(arguments[role]))
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


def given_options(options: Mapping, kind: str, name: str) -> dict:
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


def same_configuration(config: dict, arguments: dict, digests: dict) -> bool:
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
