"""Focus F1 (Ding et al., CCSBench): label each summary empirical or conceptual and compare the
labels with the requested focus (``high`` = empirical, ``low`` = conceptual).

Two labellers: an LLM judge (``--judge``), or a tf-idf + logistic-regression classifier that
ctrlkit trains from labelled summaries (``ctrlkit train-focus-classifier``), for runs with no
judge at hand. The classifier is saved as plain JSON (vocabulary, idf, coefficients,
intercept, parameters), never pickled: a pickle runs code when loaded and breaks across
scikit-learn versions, and a classifier file is something people share.

The judge's prompt is ours. CCSBench's own classification prompt (or any other) is given as
files, as for fm (``judge_templates``): ``focus.template_file`` and ``focus.system_file``, and
``focus.examples_file`` for worked examples at ``$examples``. The answer may be
``{"label": ...}`` or the label alone, as a prompt asking for just the word gets it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from ctrlkit import ConfigurationError, CtrlkitError, DatasetError, Metric, MetricResult, Option
from ctrlkit.plugin_api import weighted_mean
from ctrlkit.plugin_api import atomic_write_json, read_jsonl, require_text

from .judge_templates import JudgePrompt, prompt_option
from .judging import RETRIES, UnparseableAnswer, ask_parsed, json_object, report_failures, require_messages

LABELS = ("empirical", "conceptual")
REQUESTED = {"high": "empirical", "low": "conceptual", "empirical": "empirical", "conceptual": "conceptual"}
"""Focus control value -> the label a summary should get; the label names are accepted too."""
FORMAT = "ctrlkit-focus-classifier"
VECTORIZER_PARAMS = {"lowercase": True, "ngram_range": [1, 2], "sublinear_tf": True, "min_df": 1}
REGRESSION_PARAMS = {"C": 1.0, "class_weight": "balanced", "max_iter": 1000}

LABEL_SYSTEM = """You label the focus of a summary of a scientific paper.
empirical: it centres on data, experiments, metrics and results.
conceptual: it centres on motivation, theory, method and implications.
Answer with one JSON object and nothing else: {"label": "empirical"} or {"label": "conceptual"}"""


def label_prompt(summary: str, prompt: JudgePrompt = JudgePrompt()):
    """Ours; a user's files (``focus.template_file``, ``focus.system_file``) get ``$summary``, and
    ``$examples`` with ``focus.examples_file``."""
    return prompt.messages(LABEL_SYSTEM, f"Summary:\n{summary}", summary=summary)


def parse_label(answer: str) -> str:
    """The label an answer gives: ``{"label": "empirical"}`` (found as ``json_object`` finds it),
    or the word alone, perhaps after a short label and a colon and before a full stop
    (``Conceptual``, ``Focus: empirical.``), as a prompt asking for just the label gets it."""
    bare = bare_label(answer)
    if bare is not None:
        return bare
    label = json_object(answer).get("label")
    if not isinstance(label, str) or label.strip().lower() not in LABELS:
        raise UnparseableAnswer(f'"label" must be "empirical" or "conceptual", got {json.dumps(label)}')
    return label.strip().lower()


def bare_label(answer: str) -> str | None:
    """One of ``LABELS`` when it is the whole answer, less case, surrounding space, one trailing
    full stop and a leading ``word:`` of up to 20 letters and spaces; else None. String
    operations only, so linear in the answer's length."""
    text = answer.strip()
    prefix, colon, rest = text.partition(":")
    if colon and len(prefix) <= 20 and prefix.replace(" ", "").isalpha():
        text = rest.strip()
    if text.endswith("."):
        text = text[:-1].rstrip()
    text = text.lower()
    return text if text in LABELS else None


class Focus(Metric):
    """F1 of the summaries' focus labels against the requested focus.

    Per example: ``correct`` (1 or 0; None when the judge failed); details: the label. Corpus:
    ``f1_macro``, ``f1_empirical``, ``f1_conceptual``, ``accuracy`` over the labelled
    summaries, and ``failed``. Parts: ``labelled_empirical`` and ``requested_empirical``, 1.0 or
    0.0 (the first None where the labeller failed), from which every corpus value but the count
    ``failed`` is recomputed for a subset (:meth:`aggregate`).
    """

    scores_each_example_alone = True

    name = "focus"
    reads = ("focus",)
    options = (
        Option("labeller", str, "judge", "who labels the summaries: judge (--judge) or classifier",
               choices=("judge", "classifier")),
        Option("classifier", str, "", "classifier JSON from ctrlkit train-focus-classifier (labeller=classifier)"),
        RETRIES,
        Option("template_file", str, "", "a UTF-8 template for the judge's labelling prompt (the user message; "
               "alone, the whole prompt); placeholders $summary, $examples (docs/judge-templates.md)"),
        Option("system_file", str, "", "a UTF-8 file replacing the judge's labelling system message; "
               "placeholders $summary, $examples"),
        Option("examples_file", str, "", "a UTF-8 file of worked examples for the judge's labelling: at $examples "
               "in your files, else after our instructions"),
    )

    def __init__(self, **options):
        super().__init__(**options)
        by_classifier = self.options["labeller"] == "classifier"
        if by_classifier != bool(self.options["classifier"]):
            raise ConfigurationError("metric 'focus': set both focus.labeller=classifier and "
                                     "focus.classifier=PATH, or neither (the judge labels by default)")
        self.needs_judge = not by_classifier
        for option in ("template_file", "system_file", "examples_file"):
            if by_classifier and self.options[option]:
                raise ConfigurationError(f"metric 'focus': focus.{option} is the judge's prompt; "
                                         "it is not used with focus.labeller=classifier")
        self.wording = prompt_option(self, "system_file", "template_file", ("summary",), ("summary",),
                                     examples="examples_file")
        self.judge = None
        self._classifier: FocusClassifier | None = None

    def use_judge(self, judge):
        self.judge = require_messages(self.name, judge)

    def check(self, examples):
        for example in examples:
            _requested(example)

    def compute(self, predictions, examples):
        wanted = [_requested(example) for example in examples]
        labels, details = self._label(list(predictions))
        correct = [None if label is None else int(label == want) for label, want in zip(labels, wanted)]
        done = [i for i, label in enumerate(labels) if label is not None]
        return MetricResult(
            per_example={"correct": correct},
            corpus={**_f1([wanted[i] for i in done], [labels[i] for i in done]), "failed": len(labels) - len(done)},
            details=details,
            parts={"labelled_empirical": [None if label is None else float(label == LABELS[0]) for label in labels],
                   "requested_empirical": [float(want == LABELS[0]) for want in wanted]},
        )

    def aggregate(self, parts, weights):
        """F1 per class from weighted counts of true positives, false positives and false
        negatives, as ``_f1`` on the examples repeated by their weights."""
        import numpy as np

        labelled, requested = parts["labelled_empirical"], parts["requested_empirical"]
        done = ~np.isnan(labelled)
        labelled = np.where(done, labelled, 0.0)
        found = {}
        for label, predicted, wanted in ((LABELS[0], labelled, requested), (LABELS[1], 1 - labelled, 1 - requested)):
            true_positives = weights @ (done * predicted * wanted)
            errors = weights @ (done * (predicted + wanted - 2 * predicted * wanted))  # false positives + negatives
            denominator = 2 * true_positives + errors
            found[f"f1_{label}"] = 2 * true_positives / np.where(denominator > 0, denominator, 1.0)
        found["f1_macro"] = (found["f1_empirical"] + found["f1_conceptual"]) / 2
        found["accuracy"] = weighted_mean(np.where(done, labelled == requested, np.nan), weights)
        some = ~np.isnan(found["accuracy"])  # the row weighs some labelled example
        return {name: np.where(some, value, np.nan) for name, value in found.items()}

    def _label(self, predictions: list[str]) -> tuple[list[str | None], list[dict]]:
        if self.options["labeller"] == "classifier":
            if self._classifier is None:
                self._classifier = FocusClassifier.load(self.options["classifier"])
            labels = self._classifier.predict(predictions)
            return labels, [{"label": label} for label in labels]
        if self.judge is None:
            raise ConfigurationError("metric 'focus' has no judge: call use_judge() first")
        parsers = [parse_label] * len(predictions)
        prompts = [label_prompt(prediction, self.wording) for prediction in predictions]
        verdicts = ask_parsed(self.judge, prompts, parsers, self.options["retries"])
        details = [{"label": None, "failed": v.failure()} if v.failed else {"label": v.value} for v in verdicts]
        report_failures(self.name, [detail["failed"] for detail in details if "failed" in detail], len(details))
        return [verdict.value for verdict in verdicts], details


def _requested(example) -> str:
    value = example.controls["focus"]
    label = REQUESTED.get(value.strip().lower()) if isinstance(value, str) else None
    if label is None:
        raise CtrlkitError(f"metric 'focus': example '{example.id}' requests focus {value!r}; "
                           f"expected one of {', '.join(REQUESTED)}")
    return label


def _f1(wanted: list[str], labels: list[str]) -> dict[str, float | None]:
    """F1 per class (both classes always, so a run that never produces one class scores 0 on it,
    not undefined), their mean, and accuracy; all None when nothing was labelled."""
    if not labels:
        return {"f1_macro": None, "f1_empirical": None, "f1_conceptual": None, "accuracy": None}
    from sklearn.metrics import f1_score

    per_class = f1_score(wanted, labels, labels=list(LABELS), average=None, zero_division=0)
    return {
        "f1_macro": float(per_class.mean()),
        "f1_empirical": float(per_class[0]),
        "f1_conceptual": float(per_class[1]),
        "accuracy": sum(w == l for w, l in zip(wanted, labels)) / len(labels),
    }


class FocusClassifier:
    """A linear classifier on tf-idf features, restored from JSON: the vectorizer is rebuilt with
    the saved parameters, vocabulary and idf, so it tokenizes exactly as in training."""

    def __init__(self, state: dict):
        import numpy as np
        from sklearn.feature_extraction.text import TfidfVectorizer

        params = state["params"]["vectorizer"]
        self.vectorizer = TfidfVectorizer(**{**params, "ngram_range": tuple(params["ngram_range"])})
        self.vectorizer.vocabulary_ = state["vocabulary"]
        self.vectorizer.idf_ = np.asarray(state["idf"], dtype=float)
        self.coefficients = np.asarray(state["coefficients"], dtype=float)
        self.intercept = float(state["intercept"])
        self.classes = state["classes"]

    @classmethod
    def load(cls, path: str | Path) -> "FocusClassifier":
        try:
            state = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise CtrlkitError(f"cannot read focus classifier {path}: {exc.strerror or exc}") from None
        except ValueError:
            raise CtrlkitError(f"{path}: not JSON; expected a classifier from ctrlkit train-focus-classifier") from None
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            raise CtrlkitError(f"{path}: not a focus classifier (train one with ctrlkit train-focus-classifier)")
        return cls(state)

    def predict(self, texts: Sequence[str]) -> list[str]:
        """The positive class (``classes[1]``) where the decision value is above 0, as
        LogisticRegression.predict decides."""
        scores = self.vectorizer.transform(texts) @ self.coefficients + self.intercept
        return [self.classes[1] if score > 0 else self.classes[0] for score in scores]


def train_focus_classifier(path_jsonl: str | Path, out_path: str | Path) -> dict:
    """Fit tf-idf + logistic regression on ``{"summary": ..., "label": "empirical"|"conceptual"}``
    lines and save it as JSON at ``out_path``; returns the number of summaries per label."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    summaries, labels = [], []
    for line, record in read_jsonl(path_jsonl):
        where = f"{path_jsonl}:{line}"
        summaries.append(require_text(record, "summary", where))
        label = record.get("label")
        if label not in LABELS:
            raise DatasetError(f"{where}: field 'label' must be \"empirical\" or \"conceptual\", got {label!r}")
        labels.append(label)
    counts = {label: labels.count(label) for label in LABELS}
    if not all(counts.values()):
        raise DatasetError(f"{path_jsonl}: needs summaries of both labels to train, got {counts}")

    params = {**VECTORIZER_PARAMS, "ngram_range": tuple(VECTORIZER_PARAMS["ngram_range"])}
    vectorizer = TfidfVectorizer(**params)
    model = LogisticRegression(**REGRESSION_PARAMS).fit(vectorizer.fit_transform(summaries), labels)
    atomic_write_json(out_path, {
        "format": FORMAT,
        "classes": [str(label) for label in model.classes_],
        "vocabulary": {term: int(index) for term, index in vectorizer.vocabulary_.items()},
        "idf": vectorizer.idf_.tolist(),
        "coefficients": model.coef_[0].tolist(),
        "intercept": float(model.intercept_[0]),
        "params": {"vectorizer": VECTORIZER_PARAMS, "regression": REGRESSION_PARAMS},
    })
    return counts
