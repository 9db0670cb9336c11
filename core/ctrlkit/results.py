"""What a run records beside its scores (versions, git commit), and how it is shown and saved."""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from array import array
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Iterator, Sequence

from .files import atomic_stream, atomic_write_json, jsonl_bytes
from .markdown import visible
from .metric_values import is_count, label
from .plugins import plugin_versions
from .report_files import remove_stale_report
from .statistics_text import UNDEFINED_INTERVAL, describe_difference, recorded_interval


SCHEMA_VERSION = 1
"""The version of the records ctrlkit writes (results.json, sweep.json, table.json), each described
by a JSON Schema in ``ctrlkit/json_schemas/``; it grows when a field changes meaning or is removed."""


def versions() -> dict:
    """Versions of Python, ctrlkit and every loaded plugin distribution, and ctrlkit's git commit."""
    try:
        own = version("ctrlkit")
    except PackageNotFoundError:
        own = None
    return {"ctrlkit": own, "python": platform.python_version(), "plugins": plugin_versions(), "git": _git_commit()}


def _git_commit() -> str | None:
    """The commit of the ctrlkit checkout when it runs from one (editable installs); None for an
    install that only lies inside another repository (a wheel in a project's .venv), whose commit
    is not ctrlkit's."""
    here = Path(__file__)
    try:
        tracked = subprocess.run(["git", "-C", str(here.parent), "ls-files", "--error-unmatch", here.name],
                                 capture_output=True, timeout=5)
        if tracked.returncode != 0:
            return None
        found = subprocess.run(["git", "-C", str(here.parent), "rev-parse", "HEAD"],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip() if found.returncode == 0 else None


SAMPLES_DIGEST = "samples_digest"
"""The field of results.json holding the ``sha256:...`` of the samples.jsonl written with it."""


def write_run(out: str | Path, results: dict, samples: Sequence[dict]) -> None:
    """samples.jsonl, then results.json recording its digest (``samples_digest``, also set in
    ``results``), in ``out``; a report written there from earlier ones is removed. A failure between
    the two writes leaves an earlier results.json whose digest does not match the new samples, which
    :func:`mismatched_samples` tells."""
    with samples_written(out) as written:
        written.add(samples)
    finish_run(out, results, written)


class SamplesWriter:
    """Writes samples.jsonl a few lines at a time (``add``), hashing what it writes; ``file`` is
    None to keep the lines in ``kept`` instead (an evaluation with no output folder)."""

    def __init__(self, file=None, name: str = "samples.jsonl"):
        self.file, self.name = file, name
        self.kept: list[dict] = []
        self.offsets = array("q", [0])  # where each line starts, and the end: a SamplesFile's index
        self.digest = hashlib.sha256()

    def add(self, rows: Sequence[dict]) -> None:
        if self.file is None:
            self.kept.extend(rows)
            return
        for row in rows:
            data = jsonl_bytes([row], self.name, first_line=len(self.offsets))
            self.digest.update(data)
            self.file.write(data)
            self.offsets.append(self.offsets[-1] + len(data))


@contextmanager
def samples_written(out: str | Path | None) -> Iterator[SamplesWriter]:
    """A :class:`SamplesWriter` of ``out``'s samples.jsonl, which is replaced (atomically) when the
    block ends without an error; with ``out`` None, one that keeps the lines."""
    if out is None:
        yield SamplesWriter()
        return
    with atomic_stream(Path(out) / "samples.jsonl") as file:
        yield SamplesWriter(file, str(Path(out) / "samples.jsonl"))


def finish_run(out: str | Path, results: dict, written: SamplesWriter) -> None:
    """results.json in ``out``, recording the digest of the samples ``written`` there (also set in
    ``results``); a report written there from earlier ones is removed."""
    results[SAMPLES_DIGEST] = "sha256:" + written.digest.hexdigest()
    atomic_write_json(Path(out) / "results.json", results)
    remove_stale_report(out, "the folder's earlier results")


class SamplesFile(Sequence):
    """The samples of a run as a sequence read from its samples.jsonl a line at a time, so that an
    evaluation of a million predictions does not hold them all; valid while that file is the one
    written (``offsets`` are where its lines start)."""

    def __init__(self, path: str | Path, offsets: Sequence[int]):
        import numpy as np

        self.path = Path(path)
        self.offsets = np.asarray(offsets, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("sample index out of range")
        with open(self.path, "rb") as file:
            file.seek(int(self.offsets[index]))
            return json.loads(file.read(int(self.offsets[index + 1] - self.offsets[index])))

    def __iter__(self) -> Iterator[dict]:
        with open(self.path, "rb") as file:
            for line in file:
                yield json.loads(line)


def mismatched_samples(folder: str | Path, results: dict) -> str | None:
    """Why the folder's samples.jsonl is not the one written with ``results`` (its results.json),
    or None: it is, or results.json predates the digest (nothing to compare)."""
    recorded = results.get(SAMPLES_DIGEST)
    if recorded is None:
        return None
    path = Path(folder) / "samples.jsonl"
    if path.exists() and not path.is_file():  # a pipe planted there would never end (or /dev/zero linked)
        return f"{path} is not a regular file, but results.json records the digest of the samples written with it"
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as file:
            while chunk := file.read(1 << 20):
                digest.update(chunk)
    except OSError as exc:
        return f"{path}: cannot be read ({exc.strerror or exc}), but results.json records its digest"
    if "sha256:" + digest.hexdigest() != recorded:
        return (f"{path} is not the samples.jsonl written with {Path(folder) / 'results.json'} (its digest differs: "
                f"a write failed between the two, or one was replaced); run it again")
    return None


def format_table(results: dict) -> str:
    """The corpus scores as a text table, with the baseline and the difference when there is one.
    A metric that scored fewer than all the examples (they lack a control it reads) shows how many.
    A value with a bootstrap interval shows it (``0.3460 [0.3312, 0.3601]``), and a difference with a
    paired test its interval and p-value (``+0.0040 [-0.0012, +0.0093] p=0.21``)."""
    baseline = results.get("baseline")
    header = ["metric", results["config"].get("controller") or "value"]
    if baseline:
        header += [f"{baseline['controller']} (baseline)", "difference"]
    rows = [header]
    total = results.get("n_examples")
    for metric, values in results["metrics"].items():
        scored = (results.get("scored") or {}).get(metric, total)
        count = f" (n={scored} of {total})" if scored != total else ""
        for name, value in values.items():
            counted = is_count(name)
            row = [label(metric, name) + count, value_text(value, counted) + _interval(results, metric, name)]
            if baseline:
                other = baseline["metrics"][metric][name]
                difference = None if value is None or other is None else value - other
                row += [value_text(other, counted) + _interval(baseline, metric, name),
                        _paired(results, metric, name) or ("" if difference is None else
                                                          f"{difference:+.0f}" if counted else f"{difference:+.4f}")]
            rows.append(row)
    text = _aligned(rows)
    by_rank = (results.get("topic_picks") or {}).get("by_rank")
    if by_rank:
        controller = visible(str(results["config"].get("controller") or "run"))
        text += f"\n\n{controller}, by rank of the picked topic:\n{_by_rank(by_rank)}"
    return text


def _interval(holder: dict, metric: str, name: str) -> str:
    """`` [low, high]`` of the value's bootstrap interval in ``holder["intervals"]``, or nothing."""
    text = recorded_interval(((holder.get("intervals") or {}).get(metric) or {}).get(name))
    return " " + text if text else ""


def _paired(results: dict, metric: str, name: str) -> str:
    """``+0.0040 [-0.0012, +0.0093] p=0.21``: the paired difference, its interval and p, or nothing."""
    found = ((results.get("paired") or {}).get(metric) or {}).get(name)
    if found and found.get("undefined") and found.get("difference") is not None and found.get("p") is not None:
        return f"{describe_difference(found)} {UNDEFINED_INTERVAL}"
    if not found or any(found.get(key) is None for key in ("difference", "low", "high", "p")):
        return ""
    return describe_difference(found)


def _by_rank(by_rank: dict) -> str:
    """The corpus scores of each rank's examples (``topic_source`` ``topK``), a column per rank."""
    header = ["metric", *(f"rank {rank}" for rank in by_rank)]
    rows = [header]
    names = dict.fromkeys((metric, name) for part in by_rank.values()
                          for metric, values in part["metrics"].items() for name in values)
    for metric, name in names:
        row = [label(metric, name)]
        for part in by_rank.values():
            value = part["metrics"].get(metric, {}).get(name)
            scored = part["scored"].get(metric, part["n_examples"])
            row.append(value_text(value, is_count(name)) + (f" (n={scored} of {part['n_examples']})"
                                                       if scored != part["n_examples"] else ""))
        rows.append(row)
    return _aligned(rows)


def _aligned(rows: list[list[str]]) -> str:
    rows = [[visible(" ".join(cell.split())) for cell in row] for row in rows]  # names a plugin chose
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def value_text(value, counted: bool = False) -> str:
    """A metric value as the tables print it: a count whole, any other value to 4 places."""
    if value is None:
        return "undefined"
    return f"{value:.0f}" if counted else f"{value:.4f}"
