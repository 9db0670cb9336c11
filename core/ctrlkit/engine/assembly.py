"""The set-up that ``run``, ``evaluate``, ``interference`` and ``train`` share: :func:`assemble`
makes a run's components from their names and options and checks them against each other;
:meth:`RunParts.fit_topic_spaces` builds the topic spaces they read once the examples are known."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..api import backbone_name, create_controller, get_backbone, get_dataset, get_metric, get_vectorizer
from ..component_options import Component, RunOptions, qualified
from ..components import Backbone
from ..controls import carries
from ..errors import ConfigurationError
from ..plugins import get_registry
from ..topic_source import PICKING_VECTORIZER
from ..topics import TopicSpace, load_topic_documents
from ..types import Example
from .checks import bind_metrics, check_capabilities, check_topics

DEFAULT_METRICS = ("rouge", "stas")
"""The metrics of a run given none, less those reading a control no example has (:func:`default_metrics`)."""
logger = logging.getLogger("ctrlkit")


class TopicPicking:
    """What asks for the topic space that ranks a document's topics (``topic_source``)."""

    name = "topic picking"
    reads = ()
    topic_vectorizer = PICKING_VECTORIZER


@dataclass
class RunParts:
    """A run's components, made and checked: the dataset, the controllers in the order named, the
    backbone, the metrics and the judge they ask (None when none does), and the topic vectorizers
    that any of them (or topic picking) reads, by name; ``options`` routed the options to them."""

    options: RunOptions
    dataset: Any
    controllers: list
    backbone: Backbone | None
    metrics: list
    judge: Backbone | None
    vectorizers: dict
    picking: bool = False
    spaces: dict[str, TopicSpace] = field(default_factory=dict)

    def space_users(self) -> list:
        """The components (and topic picking) that read a topic space."""
        picking = [TopicPicking()] if self.picking else []
        return [c for c in (*self.controllers, *self.metrics, *picking) if c.topic_vectorizer]

    def keep_metrics(self, names: Sequence[str]) -> None:
        """Keep only the metrics named (a run given none keeps :func:`default_metrics`), and the
        vectorizers still read."""
        self.metrics = [metric for metric in self.metrics if metric.name in names]
        wanted = {c.topic_vectorizer for c in self.space_users()}
        self.vectorizers = {name: v for name, v in self.vectorizers.items() if name in wanted}

    def fit_topic_spaces(self, topics: str | None, examples: Sequence[Example], dataset: str,
                         only: Sequence[str] | None = None) -> dict[str, TopicSpace]:
        """Fit each vectorizer's topic space (those in ``only``, when given) on ``topics`` (a file)
        or the dataset's topic documents, unless fitted already; then refuse a topic of
        ``examples`` that a space does not know, and give the metrics their spaces."""
        wanted = {name: vectorizer for name, vectorizer in self.vectorizers.items()
                  if name not in self.spaces and (only is None or name in only)}
        self.spaces.update(topic_spaces(wanted, topics, self.dataset, dataset))
        if only is None:
            for component in self.space_users():
                check_topics(component, self.spaces[component.topic_vectorizer], examples)
            bind_metrics(self.metrics, self.spaces)
        return self.spaces

    def recorded_options(self) -> dict:
        """Each component's options as it took them (the judge's are recorded apart)."""
        return resolved_options(self.options, datasets=[self.dataset], controllers=self.controllers,
                                backbones=[self.backbone], metrics=self.metrics,
                                vectorizers=self.vectorizers.values())


def assemble(*, dataset: str, data: str | None = None, options: Mapping[str, Mapping[str, Any]] | None = None,
             controllers: Sequence[str] = (), backbone: str | None = None, metrics: Sequence[str] = (),
             judge: str | None = None, strict: bool = True, picking: bool = False,
             make_backbone: Callable[..., Backbone] = get_backbone) -> RunParts:
    """Make the named components with their options (``data`` is the dataset's ``path``), the
    judge when a metric needs one, and the topic vectorizers they read (and ``picking``, topic
    picking, reads); refuse options naming no component of the run (with ``strict``) and a
    controller needing a capability the backbone lacks. ``make_backbone(spec, **options)`` makes
    the backbone (training makes it its own way)."""
    routed = RunOptions(with_data(options, dataset, data), components(
        dataset=dataset, controllers=[name for spec in controllers for name in component_names(spec)],
        backbone=backbone, metrics=metrics, judge=judge), strict=strict)
    source = get_dataset(dataset, **routed.of("datasets", dataset))
    made = [create_controller(spec, routed.names("controllers")) for spec in controllers]
    model = make_backbone(backbone, **routed.of("backbones", backbone_name(backbone))) if backbone else None
    scorers, judging = create_metrics(metrics, routed, judge)
    parts = RunParts(routed, source, made, model, scorers, judging, {}, picking)
    parts.vectorizers = {name: get_vectorizer(name, **routed.of("vectorizers", name))
                         for name in dict.fromkeys(c.topic_vectorizer for c in parts.space_users())}
    routed.check_unused()
    for controller in made:
        check_capabilities(controller, model, backbone)
    return parts


def components(*, dataset: str, controllers: Sequence[str] = (), backbone: str | None = None,
               metrics: Sequence[str] = (), judge: str | None = None) -> list[Component]:
    """The ``(kind, name)`` of each component a run names (topic vectorizers come later)."""
    return [("datasets", dataset), *(("controllers", name) for name in controllers),
            *(("backbones", backbone_name(spec)) for spec in (backbone, judge) if spec),
            *(("metrics", name) for name in metrics)]


def component_names(spec: str | None) -> list[str]:
    """The controllers of a chain ``prepend+tag``, by name."""
    return [name.strip() for name in spec.split("+")] if spec else []


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


def topic_spaces(vectorizers, topics, source, dataset) -> dict[str, TopicSpace]:
    """A topic space per vectorizer, fitted on ``topics`` (a file) or the dataset's topic documents."""
    if not vectorizers:
        return {}
    documents = load_topic_documents(topics) if topics else source.topic_documents()
    if not documents:
        raise ConfigurationError(f"dataset '{dataset}' supplies no topic documents; pass --topics FILE "
                                 '(JSONL lines {"topic": ..., "text": ...})')
    return {name: TopicSpace.fit(documents, vectorizer) for name, vectorizer in vectorizers.items()}


def resolved_options(routed: RunOptions, **made) -> dict:
    """Each component's options as it took them (``Configurable.recorded_options``), keyed by its
    name (``kind:name`` where two share it); ``made`` lists the components by kind:
    ``datasets=[source], metrics=scorers``. A chain of controllers counts as its links."""
    return {routed.key((kind, link.name)): link.recorded_options() for kind, components in made.items()
            for component in components if component is not None
            for link in getattr(component, "controllers", [component])}
