"""The checks that refuse a run before any work: a capability the backbone lacks, a control or
reference the examples lack, a topic without documents, a bad count or seed."""

from __future__ import annotations

import random
import sys

from ..components import Backbone
from ..controls import ControlTally, carries
from ..errors import ConfigurationError
from ..topics import TopicSpace
from .scoring import scoring_indices
from .settings import check_seed

def seed_everything(seed: int) -> None:
    check_seed(seed)
    random.seed(seed)
    import numpy as np

    np.random.seed(seed)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def check_capabilities(controller, backbone: Backbone, spec: str | None = None) -> None:
    """Refuse a controller that needs a capability (``requires``) the backbone lacks; ``spec`` is
    how the run named the backbone (``hf:facebook/bart-base``), its name where not given."""
    missing = ", ".join(sorted(controller.requires - backbone.capabilities))
    if missing:
        raise ConfigurationError(f"controller '{controller.name}' needs backbone capability {missing}, "
                                 f"which backbone '{spec or backbone.name}' lacks")


def check_metrics(scorers, examples, source, dataset, strict_controls: bool = False,
                  unreferenced: bool = False) -> None:
    """Refuse, before any work, metrics that need what the examples lack. A metric checks the
    examples it will score: those carrying the controls it reads (with ``unreferenced``, as
    :func:`.scoring.scoring_indices` says)."""
    tally = MetricTally(scorers, unreferenced)
    tally.add(examples)
    tally.refuse(scorers, dataset, strict_controls)
    for scorer in scorers:
        scorer.use_dataset(source)
    check_scored(scorers, examples, unreferenced)


def check_scored(scorers, examples, unreferenced: bool = False) -> None:
    """Each metric's own ``check`` of the examples it will score."""
    for scorer in scorers:
        scorer.check([examples[i] for i in scoring_indices(scorer, examples, unreferenced)])


class MetricTally:
    """The controls and references :func:`check_metrics` requires, counted over examples given a
    chunk at a time (``add``), so that a large evaluation checks them without holding them."""

    def __init__(self, scorers, unreferenced: bool = False):
        self.unreferenced = unreferenced
        self.examples = 0
        self.controls = {scorer.name: ControlTally(scorer) for scorer in scorers}
        self.scoring = {scorer.name: 0 for scorer in scorers}
        self.unreferenced_scored = {scorer.name: 0 for scorer in scorers}
        self.first_unreferenced: dict[str, str] = {}
        self.scorers = list(scorers)

    def add(self, examples) -> None:
        self.examples += len(examples)
        for scorer in self.scorers:
            self.controls[scorer.name].add(examples)
            scoring = [examples[i] for i in scoring_indices(scorer, examples, self.unreferenced)]
            self.scoring[scorer.name] += len(scoring)
            if scorer.needs_references:
                lacking = [example.id for example in scoring if not example.references]
                self.unreferenced_scored[scorer.name] += len(lacking)
                if lacking:
                    self.first_unreferenced.setdefault(scorer.name, lacking[0])

    def refuse(self, scorers, dataset: str, strict_controls: bool = False) -> None:
        """Raise the first problem of ``scorers`` (those of the tally a run keeps)."""
        for scorer in scorers:
            self.controls[scorer.name].refuse(dataset, strict_controls)
            if scorer.needs_references and self.unreferenced and not self.scoring[scorer.name]:
                raise ConfigurationError(f"metric '{scorer.name}' needs references, but none of the {self.examples} "
                                         "examples has one for its picked topic (a picked topic that is no gold "
                                         "topic of its document has none); score with metrics that need no "
                                         "references")
            lacking = self.unreferenced_scored[scorer.name]
            if lacking:
                more = f" (and {lacking - 1} more)" if lacking > 1 else ""
                raise ConfigurationError(f"metric '{scorer.name}' needs references, but example "
                                         f"'{self.first_unreferenced[scorer.name]}'{more} of dataset '{dataset}' "
                                         "has none")


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


def dataset_and_split(dataset: str, split: str | None) -> str:
    """``dataset 'newts', split 'test'``: where a message's examples come from."""
    return f"dataset '{dataset}'" + (f", split '{split}'" if split else "")


def bind_metrics(scorers, spaces) -> None:
    """Give each metric that reads a topic space its space."""
    for scorer in scorers:
        if scorer.topic_vectorizer:
            scorer.use_topic_space(spaces[scorer.topic_vectorizer])
