"""``ctrlkit report``: a run, sweep or interference folder as one self-contained HTML page and a
Markdown file.

Reports get shared, and the predictions in them are model output, so nobody should have to
trust them: every text that comes from data is HTML-escaped, the page has no JavaScript (its
figures are inline SVG drawn by :mod:`ctrlkit.figures`, which also writes them as files with
``--figures``) and its Content-Security-Policy forbids scripts and loads from anywhere, in case
an escape is ever missed. Secrets in a folder's recorded
configuration (one written before they were masked) are masked again here.

A damaged folder (a file of another shape, a field of the wrong type, a cut-short file) is one
error line naming the file (and line) and the field, never a traceback or a silently wrong page.
"""

from __future__ import annotations

import html
import json
import logging
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from .errors import CtrlkitError
from .figures import FORMATS, Bar, bar_chart, distribution_chart, heatmap, inline_svg, save, show
from .files import atomic_write_text, read_json, read_jsonl
from .markdown import escape_markdown as _md, markdown_table as _md_table
from .metric_values import best, count_labels, label, value_directions
from .secrets import mask_secrets

DEFAULT_EXAMPLES = 5
REPORT_FILES = ("report.html", "report.md")  # what ``ctrlkit report DIR`` writes by default
REPORT_MARKS = {".html": (b"<!doctype html>", b"<title>ctrlkit report: "), ".md": (b"# ctrlkit report: ", b"")}
"""How the pages ``render_html`` and ``render_markdown`` write begin, and what their first 512 bytes hold."""
logger = logging.getLogger("ctrlkit")
INTERVAL_NOTE = ("[low, high]: the 95% bootstrap interval of a value (resampling the examples); the difference "
                 "to the baseline has its paired bootstrap interval and a paired permutation p-value.")
BEST_NOTE = ("Best value per column among the controllers of each dataset and backbone in bold (none where a value "
             "has no better way, as a count); ↓ marks a value where lower is better.")


@dataclass
class Arm:
    """One row of the table: a controller's corpus values with their intervals (``{label: (low,
    high)}``), its difference to the baseline (``{label: {"difference", "low", "high", "p"}}``,
    against the arm named ``against``), per-example values and predictions. ``group`` is its
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
            raise CtrlkitError(f"{where}: field 'prediction' must be a string or null, got {_kind(prediction)}")
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
    directions: dict = field(default_factory=dict)  # column -> "higher", "lower" or None
    counts: set = field(default_factory=set)  # columns that count things, shown as whole numbers

    @property
    def columns(self) -> list[str]:
        return list(dict.fromkeys(path for arm in self.arms for path in arm.metrics))

    def show(self, path: str, value) -> str:
        """A table cell: a count as a whole number (as the run table shows it), a score to 4 places."""
        return f"{value:.0f}" if value is not None and path in self.counts else show(value)


def write_report(directory, out=None, examples: int = DEFAULT_EXAMPLES, figures: str | None = None) -> tuple[Path, ...]:
    """Write the HTML report (``out``, default DIR/report.html) and the Markdown one beside it;
    with ``figures`` (pdf, png or svg), each figure too, as a file in a ``figures`` folder beside
    them. Returns the paths written: the HTML, the Markdown, then the figures."""
    if figures is not None and figures not in FORMATS:
        raise CtrlkitError(f"--figures {figures}: choose one of {', '.join(FORMATS)}")
    report = load(directory)
    html_path = Path(out) if out else Path(directory) / "report.html"
    markdown_path = html_path.with_suffix(".md")
    if markdown_path == html_path:
        raise CtrlkitError(f"--out {out}: name the HTML file; the Markdown report is written beside it")
    drawn = list(draw_figures(report))
    atomic_write_text(html_path, render_html(report, examples, drawn))
    atomic_write_text(markdown_path, render_markdown(report, examples))
    written = []
    if figures:
        folder = html_path.parent / "figures"
        folder.mkdir(parents=True, exist_ok=True)
        for figure in drawn:
            written.append(folder / f"{figure.name}.{figures}")
            save(figure.figure, written[-1], figures)
    return (html_path, markdown_path, *written)


def remove_stale_report(out_dir: str | Path, written_from: str) -> None:
    """Remove the default report of ``out_dir``, whose numbers came from ``written_from`` (the
    sweep's earlier cells, the folder's earlier results) that a command has just replaced, saying
    so in one line."""
    out_dir = Path(out_dir)
    stale = [out_dir / name for name in REPORT_FILES if is_written_report(out_dir / name)]
    for path in stale:
        path.unlink(missing_ok=True)
    if stale:
        logger.warning("ctrlkit: removed %s, written from %s; ctrlkit report %s writes a new one",
                       " and ".join(path.name for path in stale), written_from, out_dir)


def is_written_report(path: Path) -> bool:
    """Whether ``path`` is a report ``ctrlkit report`` wrote (by how it begins), and not a file of
    the user's own that happens to share its name."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("rb") as file:
            start = file.read(512)
    except OSError:
        return False
    begins, holds = REPORT_MARKS.get(path.suffix, (None, None))
    return begins is not None and start.startswith(begins) and holds in start


def load(directory) -> Report:
    """A sweep folder (table.json) or a run folder (results.json), with interference.json if any,
    or a folder holding only the interference.json of ``ctrlkit analyze interference``."""
    folder = Path(directory)
    try:
        interference = folder / "interference.json"
        if (folder / "table.json").is_file():
            report = _load_sweep(folder)
        elif (folder / "results.json").is_file():
            report = _load_run(folder)
        elif interference.is_file():
            report = _load_interference(folder)
        else:
            raise CtrlkitError(f"{folder}: no results.json (a run), table.json (a sweep) or interference.json "
                               "(an interference analysis) to report on")
        if interference.is_file() and report.interference is None:
            report.interference = _interference(interference)
    except OSError as exc:  # a file that cannot be opened (permissions, a folder in its place)
        raise CtrlkitError(f"cannot read {exc.filename or folder}: {exc.strerror or exc}") from None
    return report


def _load_run(folder: Path) -> Report:
    path = folder / "results.json"
    results = read_json(path, dict)
    config = mask_secrets(_object(results.get("config"), path, "config"))
    group, backbone = str(config.get("dataset", "")), str(config.get("backbone", ""))
    arms = [_arm(str(config.get("controller") or "run"), group, backbone, results, path)]
    directions = value_directions(results.get("metrics") or {})
    counts = count_labels(results.get("metrics") or {})
    baseline = _object(results.get("baseline"), path, "baseline")
    if baseline:
        arms.append(Arm(f"{baseline.get('controller')} (baseline)", group, backbone,
                        flatten(baseline.get("metrics"), path, "baseline.metrics"),
                        intervals(baseline.get("intervals"), path, "baseline.intervals")))
        arms[0].against = str(baseline.get("controller"))
        directions.update(value_directions(baseline.get("metrics") or {}))
    controls, count, references = _read_samples(folder / "samples.jsonl", arms)
    _check_count(folder / "samples.jsonl", count, results.get("n_examples"))
    facts = mask_secrets({"dataset": config.get("dataset"), "backbone": config.get("backbone"),
                          "split": config.get("split"), "examples": results.get("n_examples"),
                          "created": results.get("created")})
    return Report(folder.resolve().name, facts, arms, {group: controls}, config, {group: references},
                  directions=directions, counts=counts)


def _load_sweep(folder: Path) -> Report:
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
                  directions=directions, counts=counts)


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


def _load_interference(folder: Path) -> Report:
    """An interference analysis on its own: no score table or examples, its matrix and configuration."""
    data = _interference(folder / "interference.json")
    config = _object(data.get("config"), folder / "interference.json", "config")
    facts = {key: config.get(key) for key in ("dataset", "backbone", "controller")}
    facts["attributes"] = ", ".join(data["attributes"])
    return Report(folder.resolve().name, facts, [], {}, {}, interference=data)


def _row(row: dict, path: Path, index: int) -> dict:
    """A table row with its names masked of secrets; a ``run`` that is not a folder inside the
    sweep's is refused (a report reads only the folder it is given)."""
    if row.get("run") is not None and not isinstance(row["run"], str):
        raise CtrlkitError(f"{path}: field 'rows[{index}].run' must be a string, got {_kind(row['run'])}")
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
               str((_object(results.get("baseline"), path, "baseline")).get("controller") or "baseline"))


def intervals(data, where, field: str = "intervals") -> dict:
    """``{metric: {value: {"low", "high", "se"}}}`` (results.json's ``intervals``) as ``{label:
    (low, high)}``; a value without both ends has no interval."""
    found = {}
    for metric, values in _object(data, where, field).items():
        for name, interval in _object(values, where, f"{field}.{metric}").items():
            interval = _object(interval, where, f"{field}.{metric}.{name}")
            ends = [_checked(interval.get(key), where, f"{field}.{metric}.{name}.{key}") for key in ("low", "high")]
            if None not in ends:
                found[label(metric, name)] = tuple(ends)
    return found


def paired(data, where) -> dict:
    """``{metric: {value: {"difference", "low", "high", "se", "p", "permutations"}}}`` (results.json's
    ``paired``) as ``{label: {"difference", "low", "high", "p", "permutations"}}``, for the values with a
    difference (``permutations`` is None in a results.json written before it was recorded)."""
    found = {}
    for metric, values in _object(data, where, "paired").items():
        for name, test in _object(values, where, f"paired.{metric}").items():
            test = _object(test, where, f"paired.{metric}.{name}")
            numbers = {key: _checked(test.get(key), where, f"paired.{metric}.{name}.{key}")
                       for key in ("difference", "low", "high", "p", "permutations")}
            if numbers["difference"] is not None:
                found[label(metric, name)] = numbers
    return found


def _checked(value, where, field: str):
    _check_number(value, where, field)
    return _number(value)


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
        controls[identifier] = _object(sample.get("controls"), where, "controls")
        found = sample.get("references", sample.get("reference"))
        if isinstance(found, str):
            found = [found]
        if found is not None:
            if not isinstance(found, list) or not all(isinstance(text, str) for text in found):
                raise CtrlkitError(f"{where}: field 'references' must be a list of strings, got {_kind(found)}")
            references[identifier] = found
        arms[0].add(identifier, sample, where)
        baseline = _object(sample.get("baseline"), where, "baseline")
        if len(arms) > 1 and baseline:
            arms[1].add(identifier, baseline, where)
    return controls, count, references


def _check_count(path: Path, found: int, expected) -> None:
    """Refuse a samples.jsonl with fewer or more samples than results.json counts examples: one
    cut short at a line's end reads as valid JSONL, and would show a smaller corpus without a word."""
    if path.is_file() and isinstance(expected, int) and not isinstance(expected, bool) and found != expected:
        raise CtrlkitError(f"{path}: {found} samples, but results.json counts {expected} examples (cut short?)")


def _interference(path: Path) -> dict:
    data = read_json(path, dict)
    for key in ("attributes", "values"):
        if not isinstance(data.get(key), list) or not all(isinstance(name, str) for name in data[key]):
            raise CtrlkitError(f"{path}: field '{key}' must be a list of names, got {_kind(data.get(key))}")
    if not isinstance(data.get("matrix"), dict):
        raise CtrlkitError(f"{path}: field 'matrix' must be an object, got {_kind(data.get('matrix'))}")
    for attribute, row in data["matrix"].items():
        for value, cell in _object(row, path, f"matrix.{attribute}").items():
            _check_number(cell, path, f"matrix.{attribute}.{value}")
    for attribute, reasons in _object(data.get("undefined"), path, "undefined").items():
        for value, why in _object(reasons, path, f"undefined.{attribute}").items():
            if not isinstance(why, str):
                raise CtrlkitError(f"{path}: field 'undefined.{attribute}.{value}' must be a string, got {_kind(why)}")
    return {**data, "config": mask_secrets(data.get("config"))}


def change_amplitude(interference: dict, attribute: str, value: str):
    """The CA of ``value`` when ``attribute`` changes, as the report shows it (None: undefined)."""
    return _number((interference["matrix"].get(attribute) or {}).get(value))


def undefined_cells(interference: dict) -> list[tuple[str, str, str]]:
    """``(attribute, value, why)`` of each matrix cell the analysis left undefined, with its reason."""
    return [(attribute, value, why) for attribute, reasons in (interference.get("undefined") or {}).items()
            for value, why in reasons.items()]


def flatten(metrics, where="", field: str = "metrics") -> dict:
    """``{metric: {value: x}}`` as ``{label: x}``, named as in every table (``metric.value``, or
    ``metric`` for its namesake). Anything but an object of objects of numbers (or nulls) is an
    error naming ``where`` (the file) and the field."""
    flat = {}
    for metric, values in _object(metrics, where, field).items():
        for name, value in _object(values, where, f"{field}.{metric}").items():
            _check_number(value, where, f"{field}.{metric}.{name}")
            flat[label(metric, name)] = _number(value)
    return flat


def _object(value, where, field: str) -> dict:
    """``value`` when it is a JSON object (absent or null: an empty one); else one error line."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise CtrlkitError(f"{where}: field '{field}' must be an object, got {_kind(value)}")
    return value


def _check_number(value, where, field: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise CtrlkitError(f"{where}: field '{field}' must be a number or null, got {_kind(value)}")


def _kind(value) -> str:
    """The JSON name of a value's type, as an error message shows it."""
    if value is None:
        return "null"
    for kind, name in ((bool, "a boolean"), ((int, float), "a number"), (str, "a string"), (list, "a list"),
                       (dict, "an object")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def escape(text) -> str:
    return html.escape(str(text), quote=True)


def describe_interval(interval) -> str:
    """``[low, high]`` to 4 places, or nothing for a value without an interval."""
    return f"[{interval[0]:.4f}, {interval[1]:.4f}]" if interval else ""


def describe_difference(test: dict | None) -> str:
    """A difference to the baseline as the run table shows it: ``+0.0040 [-0.0012, +0.0093] p=0.21``."""
    if not test:
        return ""
    text = f"{test['difference']:+.4f}"
    if test.get("low") is not None and test.get("high") is not None:
        text += f" [{test['low']:+.4f}, {test['high']:+.4f}]"
    return text + (f" {p_text(test)}" if test.get("p") is not None else "")


def p_text(test: Mapping) -> str:
    """``p=0.21``, or ``p<=0.001`` where no permutation was as extreme as the observed difference
    (p is then its floor ``1 / (1 + permutations)``, an upper bound, not an estimate); the run
    table, a sweep's table.md, the report and meta-eval print p this way."""
    value = p_value_text(test)
    return "p" + (value if value.startswith("<=") else "=" + value)


def p_value_text(test: Mapping) -> str:
    """The p of :func:`p_text` without its ``p``, for a column headed p: ``<=0.001`` at its
    permutation floor (``test["permutations"]`` given and p = 1 / (1 + permutations)), else
    three significant digits (``0.214``, ``4.56e-08``; an analytic p has no ``permutations``)."""
    p, permutations = test["p"], test.get("permutations")
    if permutations is not None and p * (1 + permutations) < 1.5:
        return f"<={_rounded_up(p)}"
    return f"{p:.3g}"


def _rounded_up(p: float) -> str:
    """``p`` to two significant digits, rounded up, so that a bound stays a bound (1/1001: 0.001)."""
    scale = 10 ** (1 - math.floor(math.log10(p)))
    return f"{math.ceil(p * scale - 1e-9) / scale:.2g}"


@dataclass
class Drawn:
    """A figure of the report: its file name (without suffix), kind, caption and matplotlib Figure."""

    name: str
    kind: str
    caption: str
    figure: object


def draw_figures(report: Report):
    """Every figure of the report, in the page's order: a bar chart per corpus value (intervals as
    error bars, the best of each dataset dark, each difference to the baseline beside its bar), a
    distribution per per-example value, the interference heatmap."""
    names: set[str] = set()
    for path in report.columns:
        best = best_rows(report, path)
        bars = [Bar(arm.label, arm.metrics.get(path), *(arm.intervals.get(path) or (None, None)), i in best,
                    describe_difference(arm.differences.get(path)) + (f" vs {arm.against}"
                                                                      if arm.differences.get(path) else ""))
                for i, arm in enumerate(report.arms)]
        caption = path + (" ↓" if lower_is_better(report, path) else "")
        yield Drawn(_file_name("bar-" + path, names), "bar", caption,
                    bar_chart(path, bars, lower_is_better(report, path)))
    for path in dict.fromkeys(path for arm in report.arms for path in arm.scores):
        series = [(arm.label, arm.scores[path]) for arm in report.arms if path in arm.scores]
        yield Drawn(_file_name("distribution-" + path, names), "distribution", path, distribution_chart(path, series))
    if report.interference:
        data = report.interference
        yield Drawn(_file_name("interference", names), "heatmap", "CA matrix",
                    heatmap(data["attributes"], data["values"],
                            lambda attribute, value: change_amplitude(data, attribute, value)))


def _file_name(name: str, taken: set) -> str:
    """``name`` as a file name of letters, digits, '.', '_' and '-' (a metric's name comes from a
    plugin), numbered when two names become one."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:80] or "figure"
    unique, k = safe, 2
    while unique in taken:
        unique, k = f"{safe}-{k}", k + 1
    taken.add(unique)
    return unique


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


def _prediction(arm: Arm, identifier: str) -> str:
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


STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; color: #222; max-width: 1200px; margin: 24px auto; padding: 0 20px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 10px; border-bottom: 1px solid #ddd; }
h3 { font-size: 15px; margin: 18px 0 6px; overflow-wrap: anywhere; }
.facts { color: #555; margin: 0 0 8px; } .note { color: #666; font-size: 12px; }
.wide { overflow-x: auto; } table { border-collapse: collapse; margin: 6px 0; } th, td { padding: 4px 10px; border-bottom: 1px solid #e3e3e3; }
th { text-align: left; background: #f4f6f9; } td.value { text-align: right; font-variant-numeric: tabular-nums; }
td.best { font-weight: 700; color: #1f5fa8; } .undefined { color: #999; }
.charts { display: flex; flex-wrap: wrap; gap: 10px 28px; } figure { margin: 0; }
figcaption { font-weight: 600; margin: 4px 0; overflow-wrap: anywhere; }
.controls { color: #444; margin: 0 0 6px; } .controls b { font-weight: 600; }
.outputs { display: grid; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); gap: 10px; }
.output { border: 1px solid #dde2ea; border-radius: 4px; padding: 6px 10px; background: #fafbfc; }
.output h4 { margin: 0 0 4px; font-size: 13px; color: #1f5fa8; overflow-wrap: anywhere; }
.output p { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.output.reference { background: #f4f8f1; border-color: #cfdcc6; } .output.reference h4 { color: #3d6b2a; }
.output .scores { color: #555; font-size: 12px; margin-top: 4px; } .interval { display: block; color: #666; font-size: 11px; font-weight: 400; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
"""
# No script may run and nothing may load, whatever ends up in the page.
POLICY = "default-src 'none'; style-src 'unsafe-inline'"


def render_html(report: Report, examples: int, drawn: list[Drawn] | None = None) -> str:
    """The report page: facts, table, bar charts, distributions, interference, examples, config;
    ``drawn``: the figures of :func:`draw_figures`, when the caller has them already."""
    columns = report.columns
    drawn = list(draw_figures(report)) if drawn is None else drawn
    figures = {kind: [_figure(d.kind, d.caption, inline_svg(d.figure)) for d in drawn if d.kind == kind]
               for kind in ("bar", "distribution", "heatmap")}
    facts = " · ".join(f"{escape(k)}: {escape(v)}" for k, v in report.facts.items() if v is not None)
    parts = [f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
             f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
             f"<title>ctrlkit report: {escape(report.title)}</title><style>{STYLE}</style></head><body>"
             f"<h1>ctrlkit report: {escape(report.title)}</h1><p class=\"facts\">{facts}</p>"]
    if report.arms:
        parts += ["<h2>Scores</h2>", _html_table(report, columns), f'<p class="note">{BEST_NOTE}</p>']
        if _has_intervals(report):
            parts.append(f'<p class="note">{INTERVAL_NOTE}</p>')
        parts += ['<h2>By controller</h2><p class="note">Error bars are 95% bootstrap intervals where the run '
                  'computed them; an axis that does not start at 0 says where it starts.</p><div class="charts">',
                  *figures["bar"], "</div>"]
    if figures["distribution"]:
        parts += ['<h2>Per-example scores</h2><p class="note">A box per controller: the box holds the middle half '
                  'of the examples, the line is the median, the triangle the mean, whiskers reach 1.5 box lengths '
                  'and points beyond them are drawn singly.</p><div class="charts">', *figures["distribution"],
                  "</div>"]
    if report.interference:
        parts.append(_html_interference(report.interference, figures["heatmap"]))
    shown = list(examples_to_show(report, examples))
    if shown:
        parts.append("<h2>Examples</h2>")
    for group, items, arms in shown:
        heading = "h4" if len(report.controls) > 1 else "h3"
        if heading == "h4":
            parts.append(f"<h3>{escape(group)}</h3>")
        for identifier, controls in items:
            described = "; ".join(f"<b>{escape(k)}</b>: {escape(describe_control(v))}" for k, v in controls.items())
            parts.append(f'<{heading}>{escape(identifier)}</{heading}><p class="controls">{described}</p>'
                         '<div class="outputs">')
            for k, reference in enumerate(_references(report, group, identifier)):
                parts.append(f'<div class="output reference"><h4>reference{f" {k + 1}" if k else ""}</h4>'
                             f'<p>{escape(reference)}</p></div>')
            for arm in arms:
                text, scores = _prediction(arm, identifier), _example_scores(report, arm, identifier)
                parts.append(f'<div class="output"><h4>{escape(arm.label)}</h4><p>{escape(text)}</p>'
                             + (f'<p class="scores">{escape(scores)}</p>' if scores else "") + "</div>")
            parts.append("</div>")
    parts.append(_details("Configuration", report.config) + "</body></html>")
    return "\n".join(parts) + "\n"


def _references(report: Report, group: str, identifier: str) -> list[str]:
    return (report.references.get(group) or {}).get(identifier) or []


def _example_scores(report: Report, arm: Arm, identifier: str) -> str:
    """An output's own scores, as ``stas 0.9000 · length.mad 0.0000``."""
    return " · ".join(f"{path} {report.show(path, value)}" for path, value in arm.example_scores.get(identifier, {}).items())


def _has_intervals(report: Report) -> bool:
    return any(arm.intervals or arm.differences for arm in report.arms)


def _html_table(report: Report, columns: list[str]) -> str:
    best = {path: best_rows(report, path) for path in columns}
    head = "".join(f"<th>{escape(c)}{' ↓' if lower_is_better(report, c) else ''}</th>" for c in columns)
    rows = []
    for i, arm in enumerate(report.arms):
        cells = []
        for path in columns:
            value = arm.metrics.get(path)
            kind = "value best" if i in best[path] else "value undefined" if value is None else "value"
            interval = describe_interval(arm.intervals.get(path))
            shown = report.show(path, value) + (f'<span class="interval">{interval}</span>' if interval else "")
            cells.append(f'<td class="{kind}">{shown}</td>')
        rows.append(f"<tr><th>{escape(arm.label)}</th>{''.join(cells)}</tr>")
        if arm.differences:
            cells = "".join(f'<td class="value">{describe_difference(arm.differences.get(path))}</td>' for path in columns)
            rows.append(f"<tr><th>{escape(arm.label)} − {escape(arm.against)}</th>{cells}</tr>")
    # a wide table (many metric values) scrolls in its own box instead of running off the page
    return f'<div class="wide"><table><tr><th>controller</th>{head}</tr>{"".join(rows)}</table></div>'


def _html_interference(data: dict, figures: list[str]) -> str:
    """The CA matrix as a table and a heatmap, the reasons of its undefined cells, its configuration."""
    attributes, values = data["attributes"], data["values"]
    head = "".join(f"<th>{escape(value)}</th>" for value in values)
    rows = "".join(f"<tr><th>{escape(attribute)}</th>" + "".join(
        f'<td class="value{" undefined" if change_amplitude(data, attribute, value) is None else ""}">'
        f"{show(change_amplitude(data, attribute, value))}</td>" for value in values) + "</tr>"
        for attribute in attributes)
    undefined = "".join(f"<li>{escape(attribute)} / {escape(value)}: {escape(why)}</li>"
                        for attribute, value, why in undefined_cells(data))
    return "".join([
        "<h2>Interference</h2>",
        f'<p class="note">{_CA_NOTE}; {escape(data.get("n_examples"))} examples.</p>',
        f'<div class="wide"><table><tr><th>attribute</th>{head}</tr>{rows}</table></div>',
        *figures,
        f'<p class="note">Undefined cells:</p><ul class="note">{undefined}</ul>' if undefined else "",
        _details("Interference configuration", data.get("config"))])


_CA_NOTE = ("CA, the change amplitude |new − base| / |base| of each metric value (columns) when one attribute "
            "(rows) is changed to another example's value")


def _figure(kind: str, caption: str, svg: str) -> str:
    return f'<figure class="chart {kind}"><figcaption>{escape(caption)}</figcaption>{svg}</figure>'


def _details(summary: str, data) -> str:
    if not data:
        return ""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    return f"<details><summary>{escape(summary)}</summary><pre>{escape(text)}</pre></details>"


def render_markdown(report: Report, examples: int) -> str:
    """The table, the interference matrix and the example outputs, as Markdown."""
    columns = report.columns
    lines = [f"# ctrlkit report: {_md(report.title)}", "",
             " · ".join(f"{_md(k)}: {_md(v)}" for k, v in report.facts.items() if v is not None)]
    if report.arms:
        best = {path: best_rows(report, path) for path in columns}
        rows = []
        for i, arm in enumerate(report.arms):
            rows.append([_md(arm.label)] + [" ".join(filter(None, [
                f"**{report.show(c, arm.metrics.get(c))}**" if i in best[c] else report.show(c, arm.metrics.get(c)),
                describe_interval(arm.intervals.get(c))])) for c in columns])
            if arm.differences:
                rows.append([f"{_md(arm.label)} − {_md(arm.against)}"]
                            + [describe_difference(arm.differences.get(c)) for c in columns])
        lines += ["", "## Scores", ""]
        lines += _md_table(["controller"] + [_md(c) + (" ↓" if lower_is_better(report, c) else "") for c in columns],
                           rows)
        lines += ["", BEST_NOTE] + (["", INTERVAL_NOTE] if _has_intervals(report) else [])
    if report.interference:
        data = report.interference
        lines += ["", "## Interference", "", f"{_CA_NOTE} (the heatmap is in the HTML report).", "",
                  f"Examples: {_md(data.get('n_examples'))}", ""]
        lines += _md_table(["attribute"] + [_md(v) for v in data["values"]],
                           [[_md(a)] + [show(change_amplitude(data, a, v)) for v in data["values"]]
                            for a in data["attributes"]])
        undefined = undefined_cells(data)
        if undefined:
            lines += ["", "Undefined cells:", ""]
            lines += [f"- {_md(attribute)} / {_md(value)}: {_md(why)}" for attribute, value, why in undefined]
    shown = list(examples_to_show(report, examples))
    if shown:
        lines += ["", "## Examples"]
    for group, items, arms in shown:
        several = len(report.controls) > 1
        if several:
            lines += ["", f"### {_md(group)}"]
        for identifier, controls in items:
            lines += ["", f"{'####' if several else '###'} {_md(identifier)}", ""]
            if controls:
                lines += ["; ".join(f"{_md(k)}: {_md(describe_control(v))}" for k, v in controls.items()), ""]
            lines += [f"- reference{f' {k + 1}' if k else ''}: {_md(reference)}"
                      for k, reference in enumerate(_references(report, group, identifier))]
            for arm in arms:
                scores = _example_scores(report, arm, identifier)
                lines.append(f"- **{_md(arm.label)}**: {_md(_prediction(arm, identifier))}"
                             + (f" ({_md(scores)})" if scores else ""))
    return "\n".join(lines) + "\n"
