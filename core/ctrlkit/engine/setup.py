"""Setting a run up: its components made from their names and options, and the checks that
refuse it before any work (a capability the backbone lacks, a control or reference the examples
lack, a topic without documents, a bad count or seed)."""

from __future__ import annotations

import logging
import random
import sys
import time
from contextlib import contextmanager
from typing import Any, Mapping, Sequence

from ..api import backbone_name, get_backbone, get_metric, get_vectorizer
from ..component_options import Component, RunOptions, qualified
from ..components import Backbone
from ..controls import carries, check_controls
from ..errors import ConfigurationError, OptionError
from ..plugins import get_registry
from ..topic_source import PICKING_VECTORIZER
from ..topics import TopicSpace, load_topic_documents
from ..types import Example
from .scoring import scoring_indices

DEFAULT_METRICS = ("rouge", "stas")
"""The metrics of a run given none, less those reading a control no example has (:func:`default_metrics`)."""
logger = logging.getLogger("ctrlkit")


def components(*, dataset: str, controllers: Sequence[str] = (), backbone: str | None = None,
               metrics: Sequence[str] = (), judge: str | None = None) -> list[Component]:
    """The ``(kind, name)`` of each component a run names (topic vectorizers come later)."""
    return [("datasets", dataset), *(("controllers", name) for name in controllers),
            *(("backbones", backbone_name(spec)) for spec in (backbone, judge) if spec),
            *(("metrics", name) for name in metrics)]


def with_data(options: Mapping[str, Mapping[str, Any]] | None, dataset: str, data: str | None) -> dict:
    """``options`` with ``data`` as the dataset's ``path`` option (``--data``)."""
    options = {key: dict(values) for key, values in (options or {}).items()}
    if data is not None:
        options.setdefault(qualified(("datasets", dataset)), {})["path"] = data
    return options


def create_metrics(names: Sequence[str], options: RunOptions, judge: str | None) -> tuple[list, Backbone | None]:
    """The named metrics with their options, each given the judge backbone when it needs one; and
    that backbone (None when no metric needs one), whose options a results.json records."""
    scorers = [get_metric(name, **options.of("metrics", name)) for name in dict.fromkeys(names)]
    needing = [m.name for m in scorers if m.needs_judge]
    if needing and not judge:
        raise ConfigurationError(f"metric '{needing[0]}' needs a judge: --judge BACKBONE (e.g. openai:MODEL)")
    if not needing:
        return scorers, None
    judging = get_backbone(judge, **options.of("backbones", backbone_name(judge)))
    for metric in scorers:
        if metric.needs_judge:
            metric.use_judge(judging)
    return scorers, judging


def judge_options(judging: Backbone | None) -> dict | None:
    """The judge backbone's options as results.json records them (under ``judge_options``, apart from
    the run's backbone, which may be of the same name with other options)."""
    return judging.recorded_options() if judging is not None else None


def default_metrics(examples: Sequence[Example], dataset: str, choose: str = "-m") -> list[str]:
    """The metrics a run given none scores ``examples`` with: DEFAULT_METRICS less those reading a
    control no example has (stas without topics), which are named in one warning line, as
    ``choose`` (the option naming metrics) would refuse them."""
    registry = get_registry("metrics")
    kept, lacking = [], []
    for name in DEFAULT_METRICS:
        reads = getattr(registry.entry(name).load(registry.kind), "reads", ())
        missing = [a for a in reads if not any(carries(example, a) for example in examples)]
        if missing:
            lacking += [a for a in missing if a not in lacking]
        else:
            kept.append(name)
    if lacking:
        logger.warning("ctrlkit: no example of dataset '%s' has a %s, so the default metrics are %s only "
                       "(give %s to choose)", dataset, " or ".join(lacking), " and ".join(kept), choose)
    return kept


def default_scorers(scorers, examples: Sequence[Example], dataset: str) -> list:
    """Those of ``scorers`` (made for DEFAULT_METRICS, before the examples were read) that
    :func:`default_metrics` keeps for ``examples``."""
    kept = default_metrics(examples, dataset)
    return [scorer for scorer in scorers if scorer.name in kept]


def used_vectorizers(vectorizers: Mapping[str, Any], users) -> dict:
    """``vectorizers`` less those none of ``users`` (controllers, metrics) asks for."""
    wanted = {c.topic_vectorizer for c in users}
    return {name: vectorizer for name, vectorizer in vectorizers.items() if name in wanted}


def check_metrics(scorers, examples, source, dataset, strict_controls: bool = False,
                  unreferenced: bool = False) -> None:
    """Refuse, before any work, metrics that need what the examples lack. A metric checks the
    examples it will score: those carrying the controls it reads (with ``unreferenced``, as
    :func:`scoring_indices` says)."""
    for scorer in scorers:
        check_controls(scorer, examples, dataset, strict_controls)
        scoring = [examples[i] for i in scoring_indices(scorer, examples, unreferenced)]
        if scorer.needs_references and unreferenced and not scoring:
            raise ConfigurationError(f"metric '{scorer.name}' needs references, but none of the {len(examples)} "
                                     "examples has one for its picked topic (a picked topic that is no gold topic "
                                     "of its document has none); score with metrics that need no references")
        if scorer.needs_references:
            _check_references(scorer, scoring, dataset)
        scorer.use_dataset(source)
        scorer.check(scoring)


def bind_metrics(scorers, spaces) -> None:
    for scorer in scorers:
        if scorer.topic_vectorizer:
            scorer.use_topic_space(spaces[scorer.topic_vectorizer])


def check_capabilities(controller, backbone: Backbone, spec: str | None = None) -> None:
    """Refuse a controller that needs a capability (``requires``) the backbone lacks; ``spec`` is
    how the run named the backbone (``hf:facebook/bart-base``), its name where not given."""
    missing = ", ".join(sorted(controller.requires - backbone.capabilities))
    if missing:
        raise ConfigurationError(f"controller '{controller.name}' needs backbone capability {missing}, "
                                 f"which backbone '{spec or backbone.name}' lacks")


def topic_spaces(vectorizers, topics, source, dataset) -> dict[str, TopicSpace]:
    if not vectorizers:
        return {}
    documents = load_topic_documents(topics) if topics else source.topic_documents()
    if not documents:
        raise ConfigurationError(f"dataset '{dataset}' supplies no topic documents; pass --topics FILE "
                                 '(JSONL lines {"topic": ..., "text": ...})')
    return {name: TopicSpace.fit(documents, vectorizer) for name, vectorizer in vectorizers.items()}


def _check_references(metric, examples, dataset) -> None:
    lacking = [example.id for example in examples if not example.references]
    if lacking:
        more = f" (and {len(lacking) - 1} more)" if len(lacking) > 1 else ""
        raise ConfigurationError(f"metric '{metric.name}' needs references, but example '{lacking[0]}'{more} "
                                 f"of dataset '{dataset}' has none")


def check_topics(component, space: TopicSpace, examples) -> None:
    """Refuse a topic (on an example that has one) that the topic space does not know."""
    if "topic" not in component.reads:
        return
    examples = [example for example in examples if carries(example, "topic")]
    for example in examples:
        if not isinstance(example.controls["topic"], str):
            raise ConfigurationError(f"example '{example.id}': control 'topic' must be a string, "
                                     f"got {type(example.controls['topic']).__name__}")
    known = set(space.topics)
    unknown = [example for example in examples if example.controls["topic"] not in known]
    if unknown:
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise ConfigurationError(f"'{component.name}': topic '{unknown[0].controls['topic']}' of example "
                                 f"'{unknown[0].id}'{more} has no topic documents ({len(known)} topics known)")


def create_vectorizers(users, options: RunOptions) -> dict:
    """The topic vectorizer each of ``users`` (controllers, metrics) asks for, by name."""
    return {name: get_vectorizer(name, **options.of("vectorizers", name))
            for name in dict.fromkeys(c.topic_vectorizer for c in users)}


def resolved_options(routed: RunOptions, **made) -> dict:
    """Each component's options as it took them (``Configurable.recorded_options``), keyed by its
    name (``kind:name`` where two share it); ``made`` lists the components by kind:
    ``datasets=[source], metrics=scorers``. A chain of controllers counts as its links."""
    return {routed.key((kind, link.name)): link.recorded_options() for kind, components in made.items()
            for component in components if component is not None
            for link in getattr(component, "controllers", [component])}


class TopicPicking:
    """What asks for the topic space that ranks a document's topics (``topic_source``)."""

    topic_vectorizer = PICKING_VECTORIZER


def dataset_and_split(dataset: str, split: str | None) -> str:
    return f"dataset '{dataset}'" + (f", split '{split}'" if split else "")


def component_names(spec: str | None) -> list[str]:
    return [name.strip() for name in spec.split("+")] if spec else []


MAX_SEED = 2**32 - 1
"""numpy's seeds are 32-bit: a larger or negative seed is refused before any work."""


def check_counts(**counts: Any) -> None:
    """``limit``, ``batch_size`` and the like are whole numbers of at least 1 (``limit`` may be None:
    every example); the command line checks its own, this checks the library's callers too, since
    ``examples[:-5]`` would silently drop rows."""
    for name, value in counts.items():
        if value is None and name == "limit":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise OptionError(f"{name} must be a whole number of at least 1, got {value!r}")


def seed_everything(seed: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise OptionError(f"seed must be a whole number from 0 to {MAX_SEED}, got {seed!r}")
    random.seed(seed)
    import numpy as np

    np.random.seed(seed)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


@contextmanager
def timed(timings: dict[str, float], key: str):
    start = time.perf_counter()
    yield
    timings[key] = timings.get(key, 0.0) + time.perf_counter() - start
