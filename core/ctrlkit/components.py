"""The roles a plugin can fill. Subclass one, declare ``options``, and register it by name.

Modules that define components keep heavy imports (torch, transformers, scikit-learn) inside
methods, so that listing components stays fast.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Iterable, Iterator, Mapping, Sequence

from .controls import apply_control
from .errors import ConfigurationError, DatasetError, OptionError
from .options import Configurable
from .secrets import is_secret, mask_secrets
from .types import Example, MetricResult, ModelInput, as_example

if TYPE_CHECKING:
    import numpy as np

    from .topics import TopicSpace


class Controller(Configurable):
    """Steers generation by rewriting the model input for each example's controls.

    ``apply`` must be pure (same input, same output; no mutation), so that controllers chain:
    ``prepend+tag``.
    """

    reads: tuple[str, ...] = ()
    """Control attributes read from ``Example.controls``; checked on the dataset before a run."""
    requires: frozenset[str] = frozenset({"text"})
    """Backbone capabilities needed."""
    topic_vectorizer: str | None = None
    """Name of the vectorizer whose TopicSpace ``fit`` receives, or None when none is needed."""
    needs_train_examples: bool = False
    """True when ``fit`` learns from the dataset's train split."""
    trained_with_model: bool = False
    """True when its parameters live in the model and only ``ctrlkit train`` makes them useful."""
    partial_controls: bool = False
    """True when ``apply`` renders whichever of the controls it reads an example has (prompt);
    otherwise an example lacking one is left uncontrolled: ``apply`` is not called for it."""
    reads_any: bool = False
    """True when an example carrying any one of the controls it reads is controlled (``apply``
    renders those it has: prepend with ``require=any``), not only one carrying all of them."""

    def use_dataset(self, dataset: "Dataset") -> None:
        """See the dataset (e.g. how it maps named length levels to words) before ``fit``."""

    def use_seed(self, seed: int) -> None:
        """Receive the run's seed (``--seed``) before ``fit``, for a controller that draws at random
        (prompt's few-shot demonstrations); a controller that draws nothing ignores it."""

    def fit(self, train_examples: Sequence[Example], topic_space: "TopicSpace | None") -> None:
        """Learn what the controller needs before a run (terms, topic indices, ...)."""

    def prepare(self, backbone: "Backbone") -> None:
        """Adapt the backbone (special tokens, modules) before generation."""

    def apply(self, example: Example, model_input: ModelInput) -> ModelInput:
        """The input steered toward ``example``'s controls (a new ModelInput: the source changed,
        a prompt or guidance added); called only for examples carrying what ``reads`` names."""
        raise NotImplementedError

    def state(self) -> dict:
        """What ``fit`` learned, JSON-serialisable; saved beside a trained model."""
        return {}

    def load_state(self, state: dict) -> None:
        """Restore ``state()`` instead of fitting (a model trained with this controller)."""


class ControllerChain(Controller):
    """``a+b``: controllers compose like functions, right to left: ``prepend+tag`` tags the
    document, then prepends the topic (so the prepended text itself is not tagged)."""

    def __init__(self, controllers: Sequence[Controller]):
        super().__init__()
        self.controllers = list(controllers)
        self.name = "+".join(controller.name for controller in self.controllers)
        self.reads = tuple(dict.fromkeys(a for c in self.controllers for a in c.reads))
        self.requires = frozenset().union(*(c.requires for c in self.controllers))
        self.needs_train_examples = any(c.needs_train_examples for c in self.controllers)
        vectorizers = {c.topic_vectorizer for c in self.controllers} - {None}
        self.topic_vectorizer = vectorizers.pop() if len(vectorizers) == 1 else None
        if vectorizers:
            raise ConfigurationError(f"controllers in '{self.name}' need different topic vectorizers")

    def use_dataset(self, dataset):
        for controller in self.controllers:
            controller.use_dataset(dataset)

    def use_seed(self, seed):
        for controller in self.controllers:
            controller.use_seed(seed)

    def fit(self, train_examples, topic_space):
        for controller in self.controllers:
            controller.fit(train_examples, topic_space if controller.topic_vectorizer else None)

    def prepare(self, backbone):
        for controller in self.controllers:
            controller.prepare(backbone)

    def apply(self, example, model_input):
        for controller in reversed(self.controllers):
            model_input = apply_control(controller, example, model_input)
        return model_input

    def state(self):
        return {controller.name: controller.state() for controller in self.controllers}

    def load_state(self, state):
        for controller in self.controllers:
            controller.load_state(state.get(controller.name, {}))


TRUNCATION_COUNTS = ("tokenized", "truncated", "truncated_head", "truncated_tail", "truncated_shots")
"""The counts a backbone with an input limit keeps (:class:`Backbone`): a Ray worker returns what
each batch added to them."""


class Backbone(Configurable):
    """A summarizer: turns a batch of model inputs into one summary each."""

    capabilities: frozenset[str] = frozenset({"text"})
    """What it can consume: ``text`` (ModelInput.source), ``guidance``, ``messages`` (chat),
    ``input_embeddings`` (adds vectors to its encoder input), ``training`` (``ctrlkit train``)."""
    flattens_messages: bool = False
    """True when it takes ``messages`` only as one flattened ``Role: content`` text (a seq2seq
    model, a causal model without a chat template), not as a conversation; a prompt that is plain text then goes to it as plain text."""
    spec_option: str | None = None
    """Option set by the argument of a ``name:ARGUMENT`` spec (``hf:PATH``), if it takes one."""
    transport_options: frozenset[str] = frozenset({"concurrency", "timeout", "max_retries", "backoff"})
    """Options that change how outputs are fetched, not what they are (left out of cache keys)."""
    tokenized: int = 0
    truncated: int = 0
    """How many inputs a backbone with an input limit has read so far, and how many of them it cut
    to ``truncated_to`` tokens; a run reports the difference once (``engine.truncation.truncation_reported``)."""
    truncated_to: int | None = None
    truncated_head: int = 0
    """Of the ``truncated``, how many lost the head of their prompt (where a controller writes its
    control or instruction), as a backbone that cuts the document's end does where it cannot."""
    truncated_tail: int = 0
    """Of the ``truncated``, how many prompts lost what follows their document (the cue to answer,
    an instruction after the document, or in a few-shot prompt the document itself), as a backbone
    that cuts the document's end does where it cannot."""
    truncated_shots: int = 0
    """Of the ``truncated``, how many few-shot prompts were shown fewer demonstrations than they
    hold (the earliest dropped), so that their document keeps room."""

    def identity(self) -> dict:
        """What makes this backbone's outputs differ from another's: the key of its cached
        generations (and judgements). Secrets never enter it (a new key still finds what the old
        one generated), so they never reach the disk."""
        options = {name: value for name, value in self.options.items()
                   if name not in self.transport_options and not is_secret(name)}
        return {"backbone": self.name, "options": mask_secrets(options)}

    def load(self) -> None:
        """Do now what the first use would do lazily (import a library, read the weights), so that
        it can overlap other work: a Ray worker loads while the driver reads the data. Default:
        nothing to load."""

    def add_special_tokens(self, tokens: Iterable[str]) -> None:
        """Make ``tokens`` atomic for the model; backbones without a vocabulary ignore it."""

    def generate(self, inputs: Sequence[ModelInput]) -> list[str]:
        """One summary per input, in order; a batch is as large as the run's ``batch_size``."""
        raise NotImplementedError

    def saved_controller(self) -> dict | None:
        """``{"controller": name, "state": ...}`` saved with a trained model, or None."""
        return None


class Metric(Configurable):
    """Scores predictions; ``compute`` returns per-example and corpus values.

    ``compute`` takes the predictions (strings) and, in the same order, the examples: each an
    :class:`Example` or a dict with its fields (``{"id", "document", "references", "controls"}``).
    Every subclass's ``compute`` gets them checked and as Examples, so it reads ``example.controls``.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "compute" in cls.__dict__:
            cls.compute = _checked_compute(cls.__dict__["compute"])

    needs_references: bool = False
    reads: tuple[str, ...] = ()
    topic_vectorizer: str | None = None
    needs_judge: bool = False
    """True when it asks a backbone (an LLM) to label or rate summaries: ``--judge SPEC``."""
    higher_is_better: bool | None = True
    """Which way its corpus values are better, for the best value a sweep table or report marks;
    None: neither (they are not ranked). Some names say it for any metric: ``mad``, ``failed``,
    ``..._gap`` are lower; counts (``n_...``) and ``gold_...`` are not ranked
    (:mod:`ctrlkit.metric_values`)."""
    scores_each_example_alone: bool = False
    """True when ``check`` and the per-example values of an example do not depend on the other
    examples scored with it, and every corpus value is recomputed by ``aggregate`` or is a count:
    ``ctrlkit evaluate`` may then score a large file a chunk of examples at a time, in bounded
    memory. False (the safe default) scores all the examples at once."""

    def use_judge(self, judge: "Backbone") -> None:
        """Receive the judge backbone (called before ``compute`` when ``needs_judge``)."""

    def use_dataset(self, dataset: "Dataset") -> None:
        """See the dataset (e.g. how it maps named length levels to words) before ``compute``."""

    def check(self, examples: Sequence[Example]) -> None:
        """Refuse controls this metric cannot score, before any generation (one clear error)."""

    def use_topic_space(self, topic_space: "TopicSpace") -> None:
        """Receive the topic space built with ``topic_vectorizer`` (called before ``compute``)."""

    def compute(self, predictions: Sequence[str], examples: Sequence[Example]) -> MetricResult:
        """Score each prediction against its example (its references and controls): the corpus
        value and one value per example."""
        raise NotImplementedError

    def aggregate(self, parts: Mapping[str, "np.ndarray"], weights: "np.ndarray") -> dict[str, "np.ndarray"]:
        """The corpus values of R weighted subsets of the examples, from their per-example parts
        (``MetricResult.aggregation_parts``): ``parts[name]`` is a float array (N,), NaN where an
        example has no value; ``weights`` is (R, N) (a 0/1 row is a subset, a bootstrap resample
        its counts); returns ``{corpus value: array (R,)}``, NaN where a row leaves it undefined.
        Intervals, paired tests and any re-scoring of a subset are this one call.

        The default is right for a value that is the mean of its per-example values: each part is
        averaged over the examples that have one (those not named like a corpus value of
        ``compute`` are left unused by the callers). A metric with
        corpus-only statistics (a correlation, an F1, a difference of means) overrides it; a
        value it does not return (a count) gets no interval. ``aggregate(parts, ones((1, N)))``
        must give what ``compute`` gave (``ctrlkit.testing.check_metric`` checks it)."""
        return weighted_means(parts, weights)


def weighted_mean(values: "np.ndarray", weights: "np.ndarray") -> "np.ndarray":
    """The mean of ``values`` (N,) under each row of ``weights`` (R, N), NaN values left out;
    NaN for a row that weighs no value."""
    return weighted_means({"values": values}, weights)["values"]


def weighted_means(parts: Mapping[str, "np.ndarray"], weights: "np.ndarray") -> dict[str, "np.ndarray"]:
    """:func:`weighted_mean` of each of ``parts``, in one matrix product: the weights, the largest
    array, are read once for all the parts."""
    import numpy as np

    if not parts:
        return {}
    names = list(parts)
    values = np.column_stack([np.asarray(parts[name], dtype=float) for name in names])
    present = ~np.isnan(values)
    sums = np.asarray(weights, dtype=float) @ np.hstack([np.where(present, values, 0.0), present.astype(float)])
    total, count = sums[:, : len(names)], sums[:, len(names) :]
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(count > 0, total / np.where(count > 0, count, 1.0), np.nan)
    return {name: means[:, k] for k, name in enumerate(names)}


def _checked_compute(compute):
    """``compute`` receiving a list of predictions and as many :class:`Example` objects, or a
    TypeError (ValueError for unequal lengths) saying what is expected."""

    @functools.wraps(compute)
    def checked(self, predictions, examples):
        if isinstance(predictions, (str, bytes)) or not isinstance(predictions, Iterable):
            raise TypeError(f"metric '{self.name}': predictions must be a list of strings, "
                            f"got {type(predictions).__name__}")
        predictions = list(predictions)
        wrong = [p for p in predictions if not isinstance(p, str)]
        if wrong:
            raise TypeError(f"metric '{self.name}': each prediction must be a string, got {type(wrong[0]).__name__}")
        if isinstance(examples, (str, bytes, Mapping, Example)) or not isinstance(examples, Iterable):
            raise TypeError(f"metric '{self.name}': examples must be a list, got {type(examples).__name__}")
        examples = [as_example(example) for example in examples]
        if len(predictions) != len(examples):
            raise ValueError(f"metric '{self.name}': {len(predictions)} prediction(s) for {len(examples)} "
                             "example(s); give one per example, in the same order")
        return compute(self, predictions, examples)

    return checked


class Dataset(Configurable):
    """Reads examples. ``splits`` empty means one unsplit file (the ``path`` option)."""

    splits: tuple[str, ...] = ()
    default_split: str | None = None
    controls: tuple[str, ...] | None = ()
    """Control attributes every example carries; None when they are whatever its file holds."""
    optional_controls: tuple[str, ...] = ()
    """Control attributes only some examples carry (a MACSum reference has a topic or not)."""
    length_top_bin: int | None = None
    """The highest 50-word length bin the dataset defines (CCSBench: 4, "above 200 words"); the
    ``length`` metric caps generated and requested bins at it. None: bins are open-ended."""
    group_field: str | None = None
    """The field whose value several examples share when they share a document (NEWTS: the
    article's id; MACSum: the source), read from ``Example.meta``, else ``Example.controls``:
    intervals resample such a group as one (``ctrlkit.bootstrap.groups_of``). None: each example
    is its own group (topics picked by rank still group by their document)."""

    def load(self, split: str | None) -> list[Example]:
        """The examples of ``split`` (None: the dataset's own default, for a dataset without splits)."""
        raise NotImplementedError

    skipped: int = 0
    """Rows left out by the last ``load`` because they were invalid (``skip_invalid`` option)."""
    counted: int = 0
    """How many examples the last :meth:`iter_examples` went through, kept or not: after it is
    exhausted, the number of usable examples of the split."""

    def iter_examples(self, split: str | None, keep=None) -> Iterator[Example]:
        """The examples of ``split`` one at a time, those whose position (0, 1, ... among the
        usable examples) ``keep`` accepts (None: all), counting them all in ``counted``. A run
        takes ``--limit N`` and ``--sample N`` through it, so that a dataset that reads its file
        lazily (``jsonl``, ``csv``) holds only what is kept; this default reads ``load`` whole.
        A caller that stops early closes the iterator (``contextlib.closing``): a dataset may
        check, on closing, what the rows it read imply (a mapped field none of them holds)."""
        self.counted = 0
        for example in self.load(split):
            index, self.counted = self.counted, self.counted + 1
            if keep is None or keep(index):
                yield example

    def build_examples(self, rows: Iterable, build) -> list[Example]:
        """``build(row)`` for each row. A row that raises DatasetError stops the load, or, when
        the dataset's ``skip_invalid`` option is on, is left out and counted in ``skipped``."""
        return list(self.built_examples(rows, build))

    def built_examples(self, rows: Iterable, build) -> Iterator[Example]:
        """:meth:`build_examples` one example at a time (``skipped`` counts as they go)."""
        self.skipped = 0
        for row in rows:
            try:
                built = build(row)
            except DatasetError:
                if not getattr(self, "options", {}).get("skip_invalid"):
                    raise
                self.skipped += 1
                continue
            yield from (built if isinstance(built, list) else [built])

    def data_splits(self) -> tuple[str, ...]:
        """The splits the data given holds: ``splits``, or none when the ``path`` option is one
        file that is itself one split (MACSum's val.json), which ``load(None)`` reads whole."""
        return self.splits

    def training_split(self, split: str | None, purpose: str = "training") -> str | None:
        """The split training data comes from: ``split`` when given; else ``train``, or None (the
        whole file) when the data given is one file that is itself one split. Data that has splits
        but no train split is refused rather than trained on its test split."""
        splits = self.data_splits()
        if split is not None or not splits:
            return split
        if "train" not in splits:
            raise DatasetError(f"dataset '{self.name}' has no 'train' split (it has {', '.join(splits)}); {purpose} "
                               f"is made from one, so choose the split with --split")
        return "train"

    def describe_split(self, split: str | None) -> str | None:
        """How ``split`` was made, in words, when that is not plain (an official file, or a part of
        one file split by hash); recorded in results.json and printed after a run."""
        return None

    def check_split(self, split: str | None) -> None:
        """Refuse a split this dataset does not have, naming the ones it has."""
        if split not in self.splits:
            raise DatasetError(f"dataset '{self.name}' has split(s) {', '.join(self.splits)}, not {split!r}")

    def topic_documents(self) -> list[tuple[str, str]] | None:
        """``(topic, text)`` pairs that define each topic for a TopicSpace, or None."""
        return None


class Vectorizer(Configurable):
    """Maps texts to vectors for a TopicSpace. ``state`` must be JSON-serialisable."""

    has_terms: bool = False
    """True when dimensions are terms (so a topic has representative terms)."""

    def fit(self, documents: Sequence[str]) -> None:
        """Learn the vector space from the topic documents."""
        raise NotImplementedError

    def transform(self, texts: Sequence[str]):
        """A (len(texts) x dims) numpy array or scipy sparse matrix."""
        raise NotImplementedError

    def terms(self) -> list[str]:
        """The word of each dimension, for controllers that tag a topic's words (tf-idf has them)."""
        raise NotImplementedError(f"vectorizer '{self.name}' has no terms")

    def state(self) -> dict:
        """What ``fit`` learned, JSON-serialisable, so that a saved topic space loads without refitting."""
        return {}

    def load_state(self, state: dict) -> None:
        """Restore what ``fit`` learned from ``state()``."""


class Executor(Configurable):
    """Where the work runs: a run's generation and a sweep's cells. The built-in ``local`` runs
    everything in this process; ``ray`` runs it on a Ray cluster. A plugin adds one (a Slurm or
    Dask executor) through ``register_executors``; ``ctrlkit run --executor NAME`` and ``ctrlkit
    sweep --executor NAME`` then use it. An executor changes where work runs, never what it gives:
    results are the same whatever executor made them."""

    def check_run(self, workers: int | None, address: str | None) -> int | None:
        """How many workers a run asked for, or None where this executor has none; refuses, in one
        line, a ``workers`` or ``address`` it does not take. Called before any work."""
        given = [name for name, value in (("--workers", workers), ("--address", address)) if value is not None]
        if given:
            raise OptionError(f"{' and '.join(given)} need{'s' if len(given) == 1 else ''} --executor ray "
                              "(executor='ray')")
        return None

    def check_sweep(self, address: str | None) -> None:
        """Refuse, in one line and before any cell, an ``address`` this executor does not take."""
        if address is not None:
            raise ConfigurationError(f"address {address!r} names a Ray cluster; it is for executor 'ray' "
                                     f"(--executor ray --address HOST:PORT), not '{self.name}'")

    def generation(self, address, spec: str, options: Mapping, backbone: "Backbone", workers: int | None, cache: bool):
        """A context manager for a run's generation: it yields None to generate in this process with
        ``backbone``, or a pool (:class:`ctrlkit.executors.ray_generation.RayGeneration` shows the interface)
        whose batches are generated elsewhere, each worker making the backbone ``spec`` with ``options``."""
        import contextlib

        return contextlib.nullcontext()

    def run_cells(self, pending: Sequence[tuple], *, out_dir, address, cache: bool, progress: bool, done,
                  announce) -> None:
        """Run each of a sweep's ``pending`` cells (``(number, folder, arguments, record)``), calling
        ``done(number, results)`` as each finishes, in any order; ``announce(number)`` says a cell
        begins when it runs one at a time here. Each cell is :func:`ctrlkit.plugin_api.run_cell`
        into ``out_dir / folder``."""
        raise NotImplementedError
