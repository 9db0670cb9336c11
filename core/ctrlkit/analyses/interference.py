"""``ctrlkit analyze interference``: which control attributes disturb which metrics.

CCSBench (Ding et al.) measures interference between controls with the change amplitude
CA = |m_new - m| / m: change the requested value of one attribute, hold the others, regenerate,
and see how far each metric moves. A metric that measures something else (ROUGE, or the length
MAD when only the topic changes) should barely move; a large CA there means the attributes
interfere. A metric that reads the changed attribute is scored against the *changed* request,
so its CA says whether the new request is honoured as well as the original one.

The base condition is what ``ctrlkit run`` would score: the analysis reuses the run engine's
components, checks, topic spaces, ``generate`` (and so its generation cache) and ``score``.
"""

from __future__ import annotations

import json
import logging
import random
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..cache import Cache, scope as cache_scope
from ..controls import carries
from ..errors import ConfigurationError, CtrlkitError
from ..files import atomic_write_json, atomic_write_text
from ..intake import admit_examples
from ..metric_values import label
from ..engine.generation import fit_or_restore, generate
from ..engine.recording import report_skipped
from ..engine.scoring import score
from ..engine.assembly import assemble, judge_options
from ..engine.checks import check_metrics, seed_everything
from ..engine.settings import check_counts
from ..outputs import check_output, leaves_no_empty_folder
from ..quiet import quietly
from ..report_files import remove_stale_report
from ..results import versions
from ..sampling import check_sample, draw_sample
from ..secrets import mask_secrets
from ..types import Example

logger = logging.getLogger("ctrlkit")


@leaves_no_empty_folder
@quietly
def interference(
    *,
    dataset: str = "sample",
    data: str | None = None,
    split: str | None = None,
    controller: str,
    backbone: str = "extractive",
    attributes: Sequence[str],
    metrics: Sequence[str],
    options: Mapping[str, Mapping[str, Any]] | None = None,
    topics: str | None = None,
    judge: str | None = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    batch_size: int = 16,
    out: str | None = None,
    cache: bool = True,
    progress: bool = False,
) -> dict:
    """The CA of every metric value (named as in every table: ``"metric.value"``, or ``"metric"`` for
    its namesake) for a change of each attribute.

    The controller must read every attribute (changing one it ignores cannot change a summary),
    so the analysis uses the examples that carry every control the controller reads; the others
    are counted in ``n_left_out``. Returns what ``out``/interference.json holds; ``out`` also
    gets interference.svg, the heatmap. Problems are refused, in one line, before generating.
    ``cache`` shares generations with ``ctrlkit run`` (the base condition is often one it made).
    ``sample`` draws that many of the dataset's usable examples (see ``sampling.draw_sample``),
    before the controller's examples are chosen, so the draw depends on the seed and data only;
    their ids are recorded under ``"sample"``. ``limit`` takes the first N instead; not both.
    """
    config = {"dataset": dataset, "data": data, "split": split, "controller": controller, "backbone": backbone,
              "attributes": list(attributes), "metrics": list(metrics), "topics": topics, "judge": judge,
              "limit": limit, "sample": sample, "seed": seed, "batch_size": batch_size, "out": out, "cache": cache}
    attributes = list(dict.fromkeys(attributes))
    if not attributes:
        raise ConfigurationError("an interference analysis needs at least one attribute to change")
    if not metrics:
        raise ConfigurationError("an interference analysis needs at least one metric")
    if out is not None:
        check_output(out)
    seed_everything(seed)
    check_counts(limit=limit, batch_size=batch_size)
    check_sample(sample, limit)
    parts = assemble(dataset=dataset, data=data, options=options, controllers=[controller], backbone=backbone,
                     metrics=metrics, judge=judge)
    source, steering, model = parts.dataset, parts.controllers[0], parts.backbone
    check_attributes_read(steering, attributes)

    config["split"] = split if split is not None else source.default_split
    loaded, drawn = _read(source, dataset, config["split"], limit, sample, seed)
    examples = _analysable(loaded, steering, attributes, dataset)
    variants = {attribute: change_attribute(examples, attribute, seed) for attribute in attributes}
    for condition in (examples, *variants.values()):
        check_metrics(parts.metrics, condition, source, dataset)
    parts.fit_topic_spaces(topics, examples, dataset)
    fit_or_restore(steering, model, source, parts.spaces.get(steering.topic_vectorizer), seed)
    steering.prepare(model)
    cache_stats = {"hits": 0, "misses": 0}

    def corpus_values(condition: list[Example], scoring: str) -> dict[str, float | None]:
        predictions = generate(steering, model, condition, batch_size, progress, generations, cache_stats)
        corpus = score(parts.metrics, predictions, condition, progress, judge=parts.judge, scoring=scoring).corpus
        return {label(metric, name): value for metric, values in corpus.items() for name, value in values.items()}

    with cache_scope(enabled=cache):  # judge answers too
        generations = Cache("generations") if cache else None
        base = corpus_values(examples, "the controls as given")
        changed = {attribute: corpus_values(variant, f"attribute '{attribute}' changed")
                   for attribute, variant in variants.items()}
    matrix, undefined = amplitudes(base, changed)
    config["options"] = parts.recorded_options()
    config["judge_options"] = judge_options(parts.judge)
    report = {
        "attributes": attributes,
        "values": list(base),
        "matrix": matrix,
        "undefined": undefined,
        "base": base,
        "changed": changed,
        "changed_examples": {attribute: sum(new.controls[attribute] != old.controls[attribute]
                                            for new, old in zip(variant, examples))
                             for attribute, variant in variants.items()},
        "n_examples": len(examples),
        "n_left_out": len(loaded) - len(examples),
        "sample": drawn,
        "cache": cache_stats if cache else None,
        "config": mask_secrets(config),
        "versions": versions(),
    }
    if out is not None:
        atomic_write_json(Path(out) / "interference.json", report)
        atomic_write_text(Path(out) / "interference.svg", heatmap_svg(report))
        remove_stale_report(out, "the folder's earlier results")
    return report


def amplitudes(base: Mapping[str, float | None], changed: Mapping[str, Mapping[str, float | None]]
               ) -> tuple[dict[str, dict], dict[str, dict]]:
    """The CA of each metric value for each changed attribute, and why a CA is undefined, where one is."""
    matrix: dict[str, dict] = {}
    undefined: dict[str, dict] = {}
    for attribute, values in changed.items():
        matrix[attribute] = {}
        for path in base:
            matrix[attribute][path], why = change_amplitude(base[path], values.get(path))
            if why:
                undefined.setdefault(attribute, {})[path] = why
    return matrix, undefined


def _read(source, dataset: str, split: str | None, limit: int | None, sample: int | None,
          seed: int) -> tuple[list[Example], dict | None]:
    """The examples of the split (the first ``limit``, or ``sample`` drawn at random), and with
    ``sample`` what interference.json records of the draw."""
    loaded = admit_examples(source.load(split)[:limit], dataset)
    report_skipped(source, dataset)
    if sample is None:
        return loaded, None
    drawn = draw_sample(loaded, sample, seed, dataset)
    return drawn, {"size": sample, "seed": seed, "drawn_from": len(loaded), "ids": [example.id for example in drawn]}


def _analysable(examples: list[Example], steering, attributes: list[str], dataset: str) -> list[Example]:
    """The examples carrying every control the controller reads; refuses attributes that no
    example carries."""
    if not examples:
        raise CtrlkitError(f"dataset '{dataset}' gave no examples")
    for attribute in attributes:
        if not any(carries(example, attribute) for example in examples):
            raise ConfigurationError(f"no example of dataset '{dataset}' carries attribute '{attribute}'")
    kept = [example for example in examples if all(carries(example, name) for name in steering.reads)]
    if not kept:
        raise ConfigurationError(f"no example of dataset '{dataset}' carries every control that "
                                 f"'{steering.name}' reads ({', '.join(steering.reads)})")
    if len(kept) < len(examples):
        logger.warning("ctrlkit: %d of %d examples lack a control that '%s' reads (%s); the analysis uses the "
                       "other %d", len(examples) - len(kept), len(examples), steering.name,
                       ", ".join(steering.reads), len(kept))
    return kept


def check_attributes_read(steering, attributes: Sequence[str]) -> None:
    """Refuse an attribute the controller does not read: changing it cannot change a summary."""
    unread = [attribute for attribute in attributes if attribute not in steering.reads]
    if unread:
        raise ConfigurationError(f"controller '{steering.name}' does not read attribute '{unread[0]}' (it reads "
                                 f"{', '.join(steering.reads) or 'none'}), so changing it cannot change a summary")


def _key(value) -> str:
    """A comparable form of a control value (lists, such as keywords, included)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def change_attribute(examples: Sequence[Example], attribute: str, seed: int) -> list[Example]:
    """Copies of ``examples`` in which ``attribute`` asks for a different value.

    The new value is another example's, drawn with ``random.Random(seed)`` among those that
    differ: the changed requests are ones the dataset itself makes, for levels, numbers,
    free-text topics and keyword lists alike (a "next value" rule would give a free-text topic
    its alphabetical neighbour); every value changes; the same seed gives the same changes.
    Every example must carry ``attribute``; one value throughout is refused.
    """
    rng = random.Random(seed)
    values = [example.controls[attribute] for example in examples]
    keys = [_key(value) for value in values]
    if len(set(keys)) < 2:
        raise ConfigurationError(f"attribute '{attribute}' takes only one value ({keys[0]}) in the {len(keys)} "
                                 "examples analysed, so there is nothing to change it to")
    changed = []
    for example, own in zip(examples, keys):
        pick = rng.randrange(len(values))
        while keys[pick] == own:
            pick = rng.randrange(len(values))
        changed.append(replace(example, controls={**example.controls, attribute: values[pick]}))
    return changed


def change_amplitude(base: float | None, new: float | None) -> tuple[float | None, str | None]:
    """CCSBench's CA = |m_new - m| / m, with |m| so that a metric that can be negative (STAS
    with embeddings) still gives a non-negative amplitude; ``(None, why)`` when undefined."""
    if base is None:
        return None, "the base value is undefined"
    if new is None:
        return None, "the value after the change is undefined"
    if base == 0:
        return None, "the base value is 0"
    return abs(new - base) / abs(base), None


def format_matrix(report: dict) -> str:
    """A text table, one row per metric value (there are usually more values than attributes):
    the base value, then each attribute's value after the change and its CA."""
    header = ["value", "base"]
    for attribute in report["attributes"]:
        header += [f"{attribute}: new", f"{attribute}: CA"]
    rows = [header]
    for path in report["values"]:
        row = [path, _show(report["base"][path])]
        for attribute in report["attributes"]:
            row += [_show(report["changed"][attribute].get(path)), _show(report["matrix"][attribute][path])]
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def _show(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.4f}"


def heatmap_svg(report: dict) -> str:
    """The CA matrix as a standalone SVG (rows: changed attributes; columns: metric values),
    drawn by the same heatmap as the HTML report."""
    from ..report.figures import heatmap, inline_svg

    return inline_svg(heatmap(report["attributes"], report["values"],
                              lambda attribute, path: report["matrix"][attribute][path]))
