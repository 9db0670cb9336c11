"""``ctrlkit sweep``: the cross product of controllers x backbones x datasets, each cell a run
with the same metrics, and the table a paper prints (rows: cells, columns: metric values).

Each cell is a run folder under ``OUT/cells/``. A cell whose results.json already holds the
same configuration (secrets aside: a new API key gives the same outputs), made from data holding
the same bytes (``data_digest``), is reused; any other cell, or one whose results.json is
damaged, runs again, and the shared generation cache makes that cheap: rerunning a sweep with
one more metric generates nothing. A sweep killed at any moment resumes the same way.
"""

from __future__ import annotations

import csv
import io
import logging
import re
import tomllib
from pathlib import Path
from typing import Any, Mapping, Sequence

from .errors import ConfigurationError, CtrlkitError, OptionError
from .digest import backbone_digest, data_digest
from .files import atomic_write_json, atomic_write_text, read_json
from .markdown import escape_markdown, markdown_table
from .options import Option
from .report import flatten
from .api import backbone_name
from .pipeline import DEFAULT_METRICS, run
from .progress import say
from .quiet import quietly
from .results import LOWER_IS_BETTER, prepare_output, versions
from .secrets import mask_secrets, scrub_text
from .sweep_settings import check_settings

logger = logging.getLogger("ctrlkit")

MAX_CONFIG_BYTES = 64 * 1024  # a hand-written configuration is a few hundred bytes; PyYAML reads ~100 KB/s
MAX_YAML_DEPTH = 16  # a configuration nests three deep (options.component.option)


def load_config(path: str | Path) -> dict:
    """A sweep configuration from TOML or YAML (parsed as data only, never executed), each
    setting checked (:mod:`ctrlkit.sweep_settings`). YAML aliases are refused: a few lines of
    nested aliases name billions of values (the "billion laughs"), and a configuration needs none."""
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
    return check_settings(config, str(path))


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


@quietly
def sweep(
    *,
    out: str,
    controllers: Sequence[str],
    metrics: Sequence[str] = DEFAULT_METRICS,
    backbones: Sequence[str] = ("extractive",),
    datasets: Sequence[str] = ("sample",),
    data: Mapping[str, str] | None = None,
    split: str | None = None,
    topics: str | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    judge: str | None = None,
    limit: int | None = None,
    seed: int = 0,
    batch_size: int = 16,
    progress: bool = False,
) -> list[dict]:
    """Run every (dataset, backbone, controller) cell; write the table; return its rows.

    ``data`` maps a dataset name to the file it reads. The settings are checked as a configuration
    file's are, so names may also be one comma-separated string."""
    if not controllers or not metrics or not backbones or not datasets:
        raise ConfigurationError("a sweep needs at least one controller, metric, backbone and dataset")
    given = {"controllers": controllers, "metrics": metrics, "backbones": backbones, "datasets": datasets,
             "data": data, "split": split, "topics": topics, "options": options, "judge": judge, "limit": limit,
             "seed": seed, "batch_size": batch_size}
    checked = check_settings({key: list(value) if isinstance(value, tuple) else
                              {k: dict(v) if isinstance(v, Mapping) else v for k, v in value.items()}
                              if isinstance(value, Mapping) else value for key, value in given.items()}, "sweep")
    controllers, metrics, backbones, datasets = (checked[key] for key in ("controllers", "metrics", "backbones",
                                                                          "datasets"))
    data, options = checked.get("data"), checked.get("options")
    from .pipeline import _names, _refuse_unused_options
    from .plugins import get_registry

    _refuse_unused_options(options or {}, [*datasets, *(backbone_name(b) for b in backbones),
                                           *(name for c in controllers for name in _names(c)), *metrics,
                                           *get_registry("vectorizers").names(),
                                           *([backbone_name(judge)] if judge else [])])
    out_dir = Path(out)
    prepare_output(out_dir)
    settings = {"controllers": list(controllers), "metrics": list(metrics), "backbones": list(backbones),
                "datasets": list(datasets), "data": dict(data or {}), "split": split, "topics": topics,
                "options": {k: dict(v) for k, v in (options or {}).items()}, "judge": judge, "limit": limit,
                "seed": seed, "batch_size": batch_size}
    atomic_write_json(out_dir / "sweep.json", {"settings": mask_secrets(settings), "versions": versions()})
    cells = []
    topics_digest = data_digest(topics)
    for dataset in datasets:
        path = settings["data"].get(dataset) or settings["options"].get(dataset, {}).get("path")
        # what the files hold now: a cell made from other bytes runs again
        digests = {"data": data_digest(path), "topics": topics_digest}
        for backbone in backbones:
            for controller in controllers:
                arguments = dict(dataset=dataset, data=settings["data"].get(dataset), split=split,
                                 controller=controller, backbone=backbone, metrics=list(metrics), topics=topics,
                                 options=settings["options"], judge=judge, limit=limit, seed=seed,
                                 batch_size=batch_size)
                folder = f"cells/{_slug(dataset)}--{_slug(backbone)}--{_slug(controller)}"
                cells.append((folder, arguments, _reusable(out_dir / folder, digests, arguments)))
    reusable = sum(done is not None for _, _, done in cells)
    if progress and reusable:
        say(f"sweep: resuming: {reusable} of {len(cells)} cells already done")
    rows = []
    for number, (folder, arguments, results) in enumerate(cells, 1):
        shown = mask_secrets({name: arguments[name] for name in ("controller", "backbone", "dataset")})
        reused = results is not None
        if not reused:
            if progress:
                say(f"sweep: cell {number} of {len(cells)}: controller {shown['controller']}, backbone "
                    f"{shown['backbone']}, dataset {shown['dataset']}")
            results = run(baseline=None, out=str(out_dir / folder), strict_options=False, progress=progress,
                          **arguments).results
        rows.append({**shown, "run": folder, "metrics": results["metrics"], "cache": results.get("cache"),
                     "reused": reused})
    write_table(out_dir, rows)
    return rows


def _reusable(folder: Path, digests: dict, arguments: dict) -> dict | None:
    """The cell's recorded results when they can be reused (its results.json has this
    configuration and was made from files holding the same bytes), else None: it runs."""
    done = folder / "results.json"
    results = _recorded(done) if done.is_file() else None
    if results is not None and _same_configuration(results["config"], mask_secrets(arguments),
                                                   {**digests, "backbone": _backbone_digest(arguments)}):
        return results
    return None


def _backbone_digest(arguments: dict) -> str:
    """The cell's backbone as it is now (a model folder trained again is another backbone); only
    its options are read, no weights are loaded."""
    from .api import get_backbone

    name = backbone_name(arguments["backbone"])
    return backbone_digest(get_backbone(arguments["backbone"], **arguments["options"].get(name, {})))


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
    change. A path with nothing there to fingerprint (a Hub name) is compared as given."""
    for setting, digest in digests.items():
        if config.get(f"{setting}_digest") != digest or (digest is None and config.get(setting) != arguments[setting]):
            return False
    keys = ("dataset", "controller", "backbone", "metrics", "judge", "limit", "seed", "batch_size")
    if any(config.get(key) != arguments[key] for key in keys):
        return False
    if arguments["split"] not in (None, config.get("split")):  # None: the dataset's default, as recorded
        return False
    moved = {(arguments["dataset"], "path")} if digests["data"] is not None else set()  # the digest spoke for it
    return all(_same_value(config["options"][name].get(option), value)  # the options this cell's components took
               for name, values in arguments["options"].items() if name in config["options"]
               for option, value in values.items() if (name, option) not in moved)


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


def best(rows: Sequence[dict], column: tuple[str, str]) -> float | None:
    values = [row["metrics"].get(column[0], {}).get(column[1]) for row in rows]
    values = [value for value in values if value is not None]
    if not values:
        return None
    return min(values) if column[1] in LOWER_IS_BETTER else max(values)


def _csv_text(text: str) -> str:
    """A name as a CSV cell a spreadsheet shows as text: one starting with ``= + - @`` (or a tab or
    carriage return) would be read as a formula, so it gets a leading apostrophe."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def write_table(out_dir: Path, rows: Sequence[dict]) -> None:
    """table.json (the rows, and the best value of each column), table.csv and table.md (best in bold)."""
    cols = columns(rows)
    bests = {f"{metric}.{name}": best(rows, (metric, name)) for metric, name in cols}
    atomic_write_json(out_dir / "table.json", {"rows": list(rows), "best": bests,
                                               "lower_is_better": sorted(LOWER_IS_BETTER)})
    labels = [f"{metric}.{name}" for metric, name in cols]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["dataset", "backbone", "controller", *map(_csv_text, labels)])
    for row in rows:
        writer.writerow([*map(_csv_text, (row["dataset"], row["backbone"], row["controller"])),
                         *("" if v is None else v for v in (row["metrics"].get(m, {}).get(n) for m, n in cols))])
    atomic_write_text(out_dir / "table.csv", buffer.getvalue())
    body = []
    for row in rows:
        cells = []
        for (metric, name), label in zip(cols, labels):
            value = row["metrics"].get(metric, {}).get(name)
            text = "undefined" if value is None else f"{value:.4f}"
            cells.append(f"**{text}**" if value is not None and value == bests[label] else text)
        body.append([escape_markdown(row[key]) for key in ("dataset", "backbone", "controller")] + cells)
    lines = markdown_table(["dataset", "backbone", "controller", *map(escape_markdown, labels)], body, text_columns=3)
    atomic_write_text(out_dir / "table.md", "\n".join(lines) + "\n")


def _slug(text: str) -> str:
    """A folder name for a spec, without credentials it may hold."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", scrub_text(text)).strip("_") or "_"
