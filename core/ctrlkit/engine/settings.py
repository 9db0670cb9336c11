"""What a run is asked to do, declared once: :class:`RunSettings`.

Each field is a keyword of :func:`ctrlkit.run`, an option of ``ctrlkit run`` (same name, dashed; its
help is the field's ``help``) and, unless marked otherwise, a key of results.json's ``config``.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from functools import cached_property
from typing import Any, Mapping, Sequence

from ..errors import ConfigurationError, OptionError
from ..sampling import check_sample
from ..topic_selection import topic_names
from ..topic_source import ORACLE, topic_count
from ..uncertainty import DEFAULT_RESAMPLES, check_resamples

MAX_SEED = 2**32 - 1
"""numpy's seeds are 32-bit: a larger or negative seed is refused before any work."""


def setting(default: Any = MISSING, help: str = "", *, recorded: bool = True) -> Any:
    """A field of a settings class (:class:`RunSettings`, :class:`ctrlkit.training.settings.TrainSettings`):
    its default (none: the setting is required), the help its command-line option shows, and
    whether the results record it (where the output goes, or whether a cache is read, does not
    change a result)."""
    return field(default=default, metadata={"help": help, "recorded": recorded})


class Settings:
    """What the settings classes share: the recorded fields by name, and each field's help and
    default for the command line (:func:`ctrlkit.cli_options.setting_option`)."""

    def recorded(self) -> dict[str, Any]:
        """The settings the results record, by name."""
        return {item.name: getattr(self, item.name) for item in fields(self) if item.metadata["recorded"]}

    @classmethod
    def help(cls, name: str) -> str:
        return cls.__dataclass_fields__[name].metadata["help"]

    @classmethod
    def default(cls, name: str) -> Any:
        """The field's default; None for a required one (the command line requires it instead)."""
        default = cls.__dataclass_fields__[name].default
        return None if default is MISSING else default


@dataclass(frozen=True)
class RunSettings(Settings):
    """The settings of one run. Made with wrong values it raises an OptionError (or a
    ConfigurationError) naming the setting, before any work."""

    dataset: str = setting("sample", "Dataset name (see: ctrlkit list datasets).")
    data: str | None = setting(None, "File or folder the dataset reads (its 'path' option).")
    split: str | None = setting(None, "Dataset split (default: the dataset's own default).")
    controller: str = setting("none", "Controller, or a chain applied right to left: prepend+tag.")
    backbone: str = setting("extractive", "Summarizer backbone.")
    metrics: Sequence[str] | None = setting(
        None, "Metric (repeatable). Default: rouge, and stas when some example has a topic.")
    topics: str | None = setting(
        None, 'JSONL of {"topic": ..., "text": ...} defining the topics (default: the dataset\'s).')
    only_topics: Sequence[str] | str | None = setting(
        None, "Keep only the examples whose topic or topic_id is one of these (comma-separated), before --limit: "
              "zero-shot evaluation on the topics a model was trained without (train --holdout-topics). NEWTS "
              "topics are word lists holding commas: name them by topic_id.")
    topic_source: str = setting(
        ORACLE, "Requested topic: oracle (the gold topic) or topK (top1, top3): each document's K topics nearest "
                "to it in the tf-idf topic space, K examples per document, each scored against its own topic; "
                "reference metrics score only those with a reference for it.")
    options: Mapping[str, Mapping[str, Any]] | None = setting(
        None, "Component options by component name: {'tag': {'top_n': 50}} (--set tag.top_n=50).", recorded=False)
    judge: str | None = setting(None, "Backbone that judge metrics (fm, focus) ask, e.g. openai:gpt-4o.")
    baseline: str | None = setting("none", "Controller run and scored beside it on the same examples.")
    limit: int | None = setting(None, "Use only the first N examples.")
    sample: int | None = setting(None, "Use N examples drawn at random with the seed; not with --limit.")
    seed: int = setting(0, "Random seed (the --sample draw and the bootstrap too), recorded in results.json.")
    batch_size: int = setting(16, "Inputs per generation batch.")
    bootstrap: int = setting(
        DEFAULT_RESAMPLES, "Bootstrap resamples for each corpus value's 95% interval, and with a baseline the paired "
                           "difference's interval and permutation p-value; examples sharing a document are "
                           "resampled together. 0 skips them.")
    out: str | None = setting(None, "Output folder for results.json and samples.jsonl.", recorded=False)
    cache: bool = setting(True, "Reuse generations (and judge answers) from the shared cache and store new ones.",
                          recorded=False)
    strict_options: bool = setting(
        True, "Refuse options naming a component the run does not use (a sweep passes one set to every cell).",
        recorded=False)
    strict_controls: bool = setting(
        False, "Refuse the run when any example lacks a control a component reads (default: such examples are "
               "left uncontrolled, or unscored, and counted).")
    progress: bool = setting(False, "Show progress on stderr.", recorded=False)
    executor: str = setting("local", "Where the work runs: local, ray, or a plugin's (ctrlkit list executors).")
    workers: int | None = setting(None, "With executor ray: workers generating at once, each holding one backbone.")
    address: str | None = setting(
        None, "With executor ray: the cluster's HOST:PORT (default: $RAY_ADDRESS, else a new local Ray instance).",
        recorded=False)

    def __post_init__(self) -> None:
        check_counts(limit=self.limit, batch_size=self.batch_size)
        check_resamples(self.bootstrap)
        check_sample(self.sample, self.limit)
        check_seed(self.seed)
        topic_count(self.topic_source)
        if self.metrics is not None and not self.metrics:
            raise ConfigurationError("a run needs at least one metric")
        # one spelling of each: a list of topic names, a list of metric names
        object.__setattr__(self, "only_topics", topic_names(self.only_topics, "only_topics"))
        if self.metrics is not None:
            object.__setattr__(self, "metrics", list(self.metrics))

    @cached_property
    def topics_per_document(self) -> int:
        """0 for the gold topic (oracle), K for topK (:mod:`ctrlkit.topic_source`)."""
        return topic_count(self.topic_source)


def check_counts(**counts: Any) -> None:
    """``limit``, ``batch_size`` and the like are whole numbers of at least 1 (``limit`` may be None:
    every example); the command line checks its own, this checks the library's callers too, since
    ``examples[:-5]`` would silently drop rows."""
    for name, value in counts.items():
        if value is None and name == "limit":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise OptionError(f"{name} must be a whole number of at least 1, got {value!r}")


def check_seed(seed: Any) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise OptionError(f"seed must be a whole number from 0 to {MAX_SEED}, got {seed!r}")
