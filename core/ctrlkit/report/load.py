"""A run, sweep or interference folder read into a :class:`Report`, each field checked."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CtrlkitError
from ..files import read_json, read_jsonl
from ..metric_values import best, count_labels, label, value_directions
from ..recorded_metrics import check_number, finite_number, flatten, json_kind, json_object
from ..results import mismatched_samples
from ..secrets import mask_secrets
from ..statistics_text import show

logger = logging.getLogger("ctrlkit")


@dataclass
class Arm:
    """One row of the table: a controller's corpus values with their intervals (``{label: (low,
    high)}``), its difference to the baseline or, in a sweep, to its reference row (``{label:
    {"difference", "low", "high", "p", "permutations", "p_holm"}}``, against the arm named
    ``against``), per-example values and predictions. ``group`` is its
    dataset, because only outputs for the same examples are compared (and, for the best values,
    only outputs of one ``backbone``)."""

    label: str
    group: str
    backbone: str
    metrics: dict
    intervals: dict = field(default_factory=dict)
    differences: dict = field(default_factory=dict)
    against: str = ""
    scores: dict = field(default_factory=dict)
    example_scores: dict = field(default_factory=dict)  # example id -> {label: value}
    predictions: dict = field(default_factory=dict)

    def add(self, identifier: str, scored: dict, where: str) -> None:
        """Add one sample's prediction and scores; ``where`` (file:line) names it in errors."""
        prediction = scored.get("prediction")
        if prediction is not None and not isinstance(prediction, str):
            raise CtrlkitError(f"{where}: field 'prediction' must be a string or null, got {json_kind(prediction)}")
        self.predictions[identifier] = prediction
        self.example_scores[identifier] = flatten(scored.get("scores"), where, "scores")
        for path, value in self.example_scores[identifier].items():
            self.scores.setdefault(path, []).append(value)


@dataclass
class Report:
    """Everything a report shows, read once from the folder and rendered as HTML and as Markdown."""

    title: str
    facts: dict
    arms: list
    controls: dict  # group -> example id -> controls, in file order
    config: dict
    references: dict = field(default_factory=dict)  # group -> example id -> reference summaries
    interference: dict | None = None
    comparisons: dict | None = None  # a sweep's table.json "comparisons": its reference rows and tests
    directions: dict = field(default_factory=dict)  # column -> "higher", "lower" or None
    counts: set = field(default_factory=set)  # columns that count things, shown as whole numbers

    @property
    def columns(self) -> list[str]:
        return list(dict.fromkeys(path for arm in self.arms for path in arm.metrics))

    def show(self, path: str, value) -> str:
        """A table cell: a count as a whole number (as the run table shows it), a score to 4 places."""
        return f"{value:.0f}" if value is not None and path in self.counts else show(value)


def load(directory) -> Report:
    """A sweep folder (table.json) or a run folder (results.json), with interference.json if any,
    or a folder holding only the interference.json of ``ctrlkit analyze interference``."""
    folder = Path(directory)
    try:
        interference = folder / "interference.json"
        if (folder / "table.json").is_file():
            report = load_sweep(folder)
        elif (folder / "results.json").is_file():
            report = load_run(folder)
        elif interference.is_file():
            report = load_interference(folder)
        else:
            raise CtrlkitError(f"{folder}: no results.json (a run), table.json (a sweep) or interference.json "
                               "(an interference analysis) to report on")
        if interference.is_file() and report.interference is None:
            report.interference = _interference(interference)
    except OSError as exc:  # a file that cannot be opened (permissions, a folder in its place)
        raise CtrlkitError(f"cannot read {exc.filename or folder}: {exc.strerror or exc}") from None
    return report


def load_run(folder: Path) -> Report:
    path = folder / "results.json"
    results = read_json(path, dict)
    config = mask_secrets(json_object(results.get("config"), path, "config"))
    group, backbone = str(config.get("dataset", "")), str(config.get("backbone", ""))
    arms = [_arm(str(config.get("controller") or "run"), group, backbone, results, path)]
    directions = value_directions(results.get("metrics") or {})
    counts = count_labels(results.get("metrics") or {})
    baseline = json_object(results.get("baseline"), path, "baseline")
    if baseline:
        arms.append(Arm(f"{baseline.get('controller')} (baseline)", group, backbone,
                        flatten(baseline.get("metrics"), path, "baseline.metrics"),
                        intervals(baseline.get("intervals"), path, "baseline.intervals")))
        arms[0].against = str(baseline.get("controller"))
        directions.update(value_directions(baseline.get("metrics") or {}))
    if (folder / "samples.jsonl").is_file():
        _check_pair(folder, results)
    controls, count, references = _read_samples(folder / "samples.jsonl", arms)
    _check_count(folder / "samples.jsonl", count, results.get("n_examples"))
    facts = mask_secrets({"dataset": config.get("dataset"), "backbone": config.get("backbone"),
                          "split": config.get("split"), "examples": results.get("n_examples"),
                          "created": results.get("created")})
    return Report(folder.resolve().name, facts, arms, {group: controls}, config, {group: references},
                  directions=directions, counts=counts)


def load_sweep(folder: Path) -> Report:
    path = folder / "table.json"
    table = read_json(path, (list, dict))
    rows = table.get("rows") if isinstance(table, dict) else table  # a bare list, or {"rows": [...], ...}
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise CtrlkitError(f"{path}: expected a list of row objects")
    rows = [_row(row, path, i) for i, row in enumerate(rows)]
    varying = [key for key in ("controller", "backbone", "dataset") if len({str(r.get(key)) for r in rows}) > 1]
    arms, controls, references, directions, counts = [], {}, {}, {}, set()
    for i, row in enumerate(rows):
        name = " · ".join(str(row.get(key)) for key in varying or ["controller"])
        arm = Arm(name, str(row.get("dataset", "")), str(row.get("backbone", "")),
                  flatten(row.get("metrics"), path, f"rows[{i}].metrics"))
        cell = folder / str(row.get("run", "")) / "results.json"
        if row.get("run") and cell.is_file():
            _add_cell_intervals(arm, cell)
        if row.get("paired") is not None:  # the sweep's comparison with the reference row wins over the cell's own
            arm.differences, arm.against = paired(row["paired"], path), str(row.get("reference") or "reference")
        directions.update(value_directions(row.get("metrics") or {}))
        counts |= count_labels(row.get("metrics") or {})
        if any(other.label == name for other in arms):
            arm.label = f"{name} ({row.get('run')})"
        samples = folder / str(row.get("run", "")) / "samples.jsonl"
        if row.get("run") and samples.is_file():
            recorded = _readable(cell)
            if recorded is not None:  # a damaged results.json is reported without its intervals, as before
                _check_pair(cell.parent, recorded)
            found_controls, _, found_references = _read_samples(samples, [arm])
            for identifier, found in found_controls.items():
                controls.setdefault(arm.group, {}).setdefault(identifier, found)
            for identifier, found in found_references.items():
                references.setdefault(arm.group, {}).setdefault(identifier, found)
        arms.append(arm)
    directions.update(_recorded_directions(table, path))
    facts = {key + "s": ", ".join(dict.fromkeys(str(r.get(key)) for r in rows))
             for key in ("controller", "backbone", "dataset")}
    facts["runs"] = len(rows)
    config = read_json(folder / "sweep.json", dict) if (folder / "sweep.json").is_file() else {}
    return Report(folder.resolve().name, facts, arms, controls, mask_secrets(config), references,
                  directions=directions, counts=counts, comparisons=_comparisons(table, path))


def _comparisons(table, path: Path) -> dict | None:
    """table.json's ``comparisons`` (which rows are the references, how many tests Holm's
    correction spans), checked; None where the sweep made none or its table.json does not say."""
    found = json_object(table.get("comparisons") if isinstance(table, dict) else None, path, "comparisons")
    if not found:
        return None
    if not isinstance(found.get("reference"), str):
        raise CtrlkitError(f"{path}: field 'comparisons.reference' must be a string, got {json_kind(found.get('reference'))}")
    if found.get("reference_axis", "controller") not in ("controller", "backbone"):
        raise CtrlkitError(f"{path}: field 'comparisons.reference_axis' must be controller or backbone")
    tests = found.get("tests")
    if isinstance(tests, bool) or not isinstance(tests, int):
        raise CtrlkitError(f"{path}: field 'comparisons.tests' must be a whole number, got {json_kind(tests)}")
    return mask_secrets(found)


def _add_cell_intervals(arm: Arm, cell: Path) -> None:
    """The intervals (and the test against a baseline) a sweep cell's results.json records, if
    any; the table's numbers come from table.json, so a damaged cell file costs only these, in a
    warning naming it."""
    try:
        measured = _arm(arm.label, arm.group, arm.backbone, read_json(cell, dict), cell)
    except CtrlkitError as exc:
        logger.warning("ctrlkit: %s; its intervals are left out of the report", exc)
        return
    arm.intervals, arm.differences, arm.against = measured.intervals, measured.differences, measured.against


def _recorded_directions(table, path: Path) -> dict:
    """``{column: better}`` as the sweep recorded it in table.json's ``columns``: what the metric
    said when it ran wins over what the installed version says now (or a metric since uninstalled)."""
    columns = table.get("columns", []) if isinstance(table, dict) else []
    if not isinstance(columns, list):
        raise CtrlkitError(f"{path}: 'columns' must be a list")
    recorded = {}
    for i, column in enumerate(columns):
        if not (isinstance(column, dict) and isinstance(column.get("name"), str)
                and column.get("better") in ("higher", "lower", None)):
            raise CtrlkitError(f"{path}: columns[{i}] must be an object with a name and a better way "
                               f"(higher, lower or null)")
        recorded[column["name"]] = column.get("better")
    return recorded


def load_interference(folder: Path) -> Report:
    """An interference analysis on its own: no score table or examples, its matrix and configuration."""
    data = _interference(folder / "interference.json")
    config = json_object(data.get("config"), folder / "interference.json", "config")
    facts = {key: config.get(key) for key in ("dataset", "backbone", "controller")}
    facts["attributes"] = ", ".join(data["attributes"])
    return Report(folder.resolve().name, facts, [], {}, {}, interference=data)


def _row(row: dict, path: Path, index: int) -> dict:
    """A table row with its names masked of secrets; a ``run`` that is not a folder inside the
    sweep's is refused (a report reads only the folder it is given)."""
    if row.get("run") is not None and not isinstance(row["run"], str):
        raise CtrlkitError(f"{path}: field 'rows[{index}].run' must be a string, got {json_kind(row['run'])}")
    if row.get("run") and not _inside(path.parent, row["run"]):
        raise CtrlkitError(f"{path}: field 'rows[{index}].run' must name a folder inside {path.parent}")
    return {**row, **mask_secrets({key: row[key] for key in ("controller", "backbone", "dataset") if key in row})}


def _inside(folder: Path, relative: str) -> bool:
    try:
        return (folder / relative).resolve().is_relative_to(folder.resolve())
    except (OSError, ValueError):  # a NUL byte, a loop of links
        return False


def _arm(name: str, group: str, backbone: str, results: dict, path: Path) -> Arm:
    """The run arm of a results.json: its corpus values, their intervals, and its paired test
    against the baseline (``paired``), where the run recorded them."""
    return Arm(name, group, backbone, flatten(results.get("metrics"), path),
               intervals(results.get("intervals"), path, "intervals"), paired(results.get("paired"), path),
               str((json_object(results.get("baseline"), path, "baseline")).get("controller") or "baseline"))


def intervals(data, where, field: str = "intervals") -> dict:
    """``{metric: {value: {"low", "high", "se"}}}`` (results.json's ``intervals``) as ``{label:
    (low, high)}``; a value without both ends has no interval."""
    found = {}
    for metric, values in json_object(data, where, field).items():
        for name, interval in json_object(values, where, f"{field}.{metric}").items():
            interval = json_object(interval, where, f"{field}.{metric}.{name}")
            ends = [_checked(interval.get(key), where, f"{field}.{metric}.{name}.{key}") for key in ("low", "high")]
            if None not in ends:
                found[label(metric, name)] = tuple(ends)
    return found


def paired(data, where) -> dict:
    """``{metric: {value: {"difference", "low", "high", "se", "p", "permutations"}}}`` (results.json's
    ``paired``, or a sweep row's, which adds ``p_holm``) as ``{label: {"difference", "low", "high",
    "p", "permutations", "p_holm"}}``, for the values with a difference (``permutations`` is None in
    a results.json written before it was recorded; ``p_holm`` is None outside a sweep)."""
    found = {}
    for metric, values in json_object(data, where, "paired").items():
        for name, test in json_object(values, where, f"paired.{metric}").items():
            test = json_object(test, where, f"paired.{metric}.{name}")
            numbers = {key: _checked(test.get(key), where, f"paired.{metric}.{name}.{key}")
                       for key in ("difference", "low", "high", "p", "permutations", "p_holm")}
            if numbers["difference"] is not None:
                found[label(metric, name)] = numbers
    return found


def _checked(value, where, field: str):
    check_number(value, where, field)
    return finite_number(value)


def _read_samples(path: Path, arms: list[Arm]) -> tuple[dict, int, dict]:
    """Add each line's scores and prediction to ``arms[0]`` (and its baseline's to ``arms[1]``);
    return the controls by example id, how many samples there were, and the reference summaries
    by example id (of the samples that carry ``references``). A folder without samples.jsonl
    just has no examples."""
    controls, count, references = {}, 0, {}
    if not path.is_file():
        return controls, count, references
    for line, sample in read_jsonl(path):
        count += 1
        where = f"{path}:{line}"
        identifier = str(sample.get("id"))
        controls[identifier] = json_object(sample.get("controls"), where, "controls")
        found = sample.get("references", sample.get("reference"))
        if isinstance(found, str):
            found = [found]
        if found is not None:
            if not isinstance(found, list) or not all(isinstance(text, str) for text in found):
                raise CtrlkitError(f"{where}: field 'references' must be a list of strings, got {json_kind(found)}")
            references[identifier] = found
        arms[0].add(identifier, sample, where)
        baseline = json_object(sample.get("baseline"), where, "baseline")
        if len(arms) > 1 and baseline:
            arms[1].add(identifier, baseline, where)
    return controls, count, references


def _readable(path: Path) -> dict | None:
    try:
        return read_json(path, dict) if path.is_file() else None
    except CtrlkitError:
        return None


def _check_pair(folder: Path, results: dict) -> None:
    """Refuse a folder whose samples.jsonl is not the one written with its results.json."""
    problem = mismatched_samples(folder, results)
    if problem:
        raise CtrlkitError(problem)


def _check_count(path: Path, found: int, expected) -> None:
    """Refuse a samples.jsonl with fewer or more samples than results.json counts examples: one
    cut short at a line's end reads as valid JSONL, and would show a smaller corpus without a word."""
    if path.is_file() and isinstance(expected, int) and not isinstance(expected, bool) and found != expected:
        raise CtrlkitError(f"{path}: {found} samples, but results.json counts {expected} examples (cut short?)")


def _interference(path: Path) -> dict:
    data = read_json(path, dict)
    for key in ("attributes", "values"):
        if not isinstance(data.get(key), list) or not all(isinstance(name, str) for name in data[key]):
            raise CtrlkitError(f"{path}: field '{key}' must be a list of names, got {json_kind(data.get(key))}")
    if not isinstance(data.get("matrix"), dict):
        raise CtrlkitError(f"{path}: field 'matrix' must be an object, got {json_kind(data.get('matrix'))}")
    for attribute, row in data["matrix"].items():
        for value, cell in json_object(row, path, f"matrix.{attribute}").items():
            check_number(cell, path, f"matrix.{attribute}.{value}")
    for attribute, reasons in json_object(data.get("undefined"), path, "undefined").items():
        for value, why in json_object(reasons, path, f"undefined.{attribute}").items():
            if not isinstance(why, str):
                raise CtrlkitError(f"{path}: field 'undefined.{attribute}.{value}' must be a string, got {json_kind(why)}")
    return {**data, "config": mask_secrets(data.get("config"))}


def change_amplitude(interference: dict, attribute: str, value: str):
    """The CA of ``value`` when ``attribute`` changes, as the report shows it (None: undefined)."""
    return finite_number((interference["matrix"].get(attribute) or {}).get(value))


def undefined_cells(interference: dict) -> list[tuple[str, str, str]]:
    """``(attribute, value, why)`` of each matrix cell the analysis left undefined, with its reason."""
    return [(attribute, value, why) for attribute, reasons in (interference.get("undefined") or {}).items()
            for value, why in reasons.items()]


def lower_is_better(report: Report, path: str) -> bool:
    return report.directions.get(path) == "lower"


def best_rows(report: Report, path: str) -> set[int]:
    """Indices of the arms with the best value of ``path`` among those of their dataset and backbone;
    none in a group where fewer than two values differ, or where ``path`` has no better way."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, arm in enumerate(report.arms):
        groups.setdefault((arm.group, arm.backbone), []).append(i)
    marked = set()
    for members in groups.values():
        top = best((report.arms[i].metrics.get(path) for i in members), report.directions.get(path))
        marked |= {i for i in members if top is not None and report.arms[i].metrics.get(path) == top}
    return marked


def prediction_of(arm: Arm, identifier: str) -> str:
    """The arm's output for an example; a cell may lack an example, and a null output is shown as such."""
    text = arm.predictions.get(identifier, "(no output)")
    return "undefined" if text is None else str(text)


def examples_to_show(report: Report, count: int):
    """``(group, [(id, controls)], arms)`` per dataset: its first ``count`` examples and its arms."""
    for group, controls in report.controls.items():
        arms = [arm for arm in report.arms if arm.group == group and arm.predictions]
        if count and arms:
            yield group, list(controls.items())[:count], arms


def describe_control(value) -> str:
    """A control as a reader would write it: a keyword list comma-separated, not as JSON."""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(item) for item in value)
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else str(value)
