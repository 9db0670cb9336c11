"""TopicSpace: topics as vectors, and how close a text is to each (STAS, Passali & Tsoumakas).

Each topic t is defined by documents D_t. A vectorizer is fitted on the union of all D_t; the
topic vector y_t is the mean of its documents' vectors. For texts, one call gives the
(texts x topics) cosine matrix; ``stas`` divides each text's similarity to its requested topic
by its largest similarity to any topic.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from .errors import ConfigurationError, CtrlkitError

_STATE_FILE = "topic_space.json"
_VECTORS_FILE = "topic_vectors.npy"


class TopicSpace:
    """Topics as vectors. ``topics`` lists the topic names in the order of the columns of
    :meth:`similarities` (sorted when built with :meth:`fit`): column j is ``topics[j]``."""

    def __init__(self, vectorizer, topics: Sequence[str], topic_vectors: np.ndarray):
        self.vectorizer = vectorizer
        self.topics = list(topics)
        self.topic_vectors = topic_vectors
        self._index = {topic: i for i, topic in enumerate(self.topics)}
        self._unit_topics = _normalize_rows(topic_vectors)

    @classmethod
    def fit(
        cls,
        topic_documents: Iterable[tuple[str, str]] | Mapping[str, Sequence[str]],
        vectorizer="tfidf",
        **options,
    ) -> "TopicSpace":
        """Build from ``(topic, text)`` pairs or ``{topic: [texts]}``; ``vectorizer`` is a
        registered name (with ``options``) or a Vectorizer instance."""
        if isinstance(vectorizer, str):
            vectorizer = _vectorizer(vectorizer, options)
        pairs = _clean(_pairs(topic_documents))
        if not pairs:
            raise ConfigurationError("a topic space needs at least one topic document")
        topics = sorted({topic for topic, _ in pairs})
        if len(topics) < 2:
            raise ConfigurationError(f"a topic space needs at least two topics, got {topics}")
        texts = [text for _, text in pairs]
        vectorizer.fit(texts)
        document_vectors = vectorizer.transform(texts)
        index = {topic: i for i, topic in enumerate(topics)}
        rows = np.array([index[topic] for topic, _ in pairs])
        counts = np.bincount(rows, minlength=len(topics))
        from scipy import sparse

        averaging = sparse.csr_matrix((1.0 / counts[rows], (rows, np.arange(len(pairs)))), shape=(len(topics), len(pairs)))
        topic_vectors = averaging @ document_vectors
        if sparse.issparse(topic_vectors):
            topic_vectors = topic_vectors.toarray()
        return cls(vectorizer, topics, np.asarray(topic_vectors, dtype=np.float64))

    def topic_index(self, topic: str) -> int:
        """The row of ``topic`` in the space; a CtrlkitError naming it when it is unknown."""
        try:
            return self._index[topic]
        except (KeyError, TypeError):  # TypeError: an unhashable topic (a list or object from a JSON file)
            shown = ", ".join(self.topics[:10]) + (" ..." if len(self.topics) > 10 else "")
            raise CtrlkitError(f"Topic '{topic}' is not in the topic space (topics: {shown})") from None

    def similarities(self, texts: Sequence[str], chunk_size: int = 10_000) -> np.ndarray:
        """Cosine similarity of every text to every topic: shape (len(texts), len(topics)); column j
        is topic ``self.topics[j]``."""
        out = np.empty((len(texts), len(self.topics)))
        for start in range(0, len(texts), chunk_size):
            vectors = _normalize_rows(self.vectorizer.transform(texts[start : start + chunk_size]))
            out[start : start + chunk_size] = np.asarray(vectors @ self._unit_topics.T)
        return out

    def stas(self, texts: Sequence[str], topics: Sequence[str]) -> np.ndarray:
        """STAS(s, t) = cos(y_s, y_t) / max_z cos(y_s, y_z) for each (text, requested topic).

        A text with no positive similarity to any topic (no shared vocabulary) has no affinity
        to the requested topic either: its STAS is 0.
        """
        requested = np.array([self.topic_index(topic) for topic in topics], dtype=int)
        similarity = self.similarities(texts)
        own = similarity[np.arange(len(texts)), requested]
        best = similarity.max(axis=1) if len(self.topics) else np.zeros(len(texts))
        return np.divide(own, best, out=np.zeros(len(texts)), where=best > 0)

    def representative_terms(self, topic: str, n: int = 100, exclude: Iterable[str] = ()) -> list[str]:
        """The ``n`` terms with the largest weight in the topic's vector (tf-idf spaces only)."""
        if not self.vectorizer.has_terms:
            raise ConfigurationError(
                f"representative terms need a term-based topic space; '{self.vectorizer.name}' has none"
            )
        terms = self.vectorizer.terms()
        excluded = set(exclude)
        weights = self.topic_vectors[self.topic_index(topic)]
        chosen = []
        for position in np.argsort(-weights, kind="stable"):
            if weights[position] <= 0 or len(chosen) == n:
                break
            if terms[position] not in excluded:
                chosen.append(terms[position])
        return chosen

    def save(self, directory: str | Path) -> None:
        """Write the fitted space (JSON and .npy; nothing pickled)."""
        from .files import atomic_write_text, atomic_write_with

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        atomic_write_with(directory / _VECTORS_FILE, lambda file: np.save(file, self.topic_vectors, allow_pickle=False))
        state = {
            "vectorizer": self.vectorizer.name,
            "options": self.vectorizer.options,
            "state": self.vectorizer.state(),
            "topics": self.topics,
        }
        atomic_write_text(directory / _STATE_FILE, json.dumps(state))

    @classmethod
    def load(cls, directory: str | Path) -> "TopicSpace":
        """The space :meth:`save` wrote into ``directory``, vectorizer state included."""
        directory = Path(directory)
        state = json.loads((directory / _STATE_FILE).read_text(encoding="utf-8"))
        vectorizer = _vectorizer(state["vectorizer"], state["options"])
        vectorizer.load_state(state["state"])
        vectors = np.load(directory / _VECTORS_FILE, allow_pickle=False)
        return cls(vectorizer, state["topics"], vectors)


def load_topic_documents(path: str | Path) -> list[tuple[str, str]]:
    """``(topic, text)`` pairs from a JSONL file of ``{"topic": ..., "text": ...}`` lines."""
    from .files import read_jsonl, require_text

    return [
        (require_text(record, "topic", f"{path}:{line}"), require_text(record, "text", f"{path}:{line}"))
        for line, record in read_jsonl(path)
    ]


def _pairs(topic_documents) -> list[tuple[str, str]]:
    if isinstance(topic_documents, Mapping):
        return [(topic, text) for topic, texts in topic_documents.items() for text in texts]
    return [(topic, text) for topic, text in topic_documents]


def _clean(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Topic documents with lone surrogates replaced by U+FFFD (``intake``): their terms are saved."""
    from .intake import Intake

    intake = Intake("topic documents")
    cleaned = [(intake.text(topic, "topic"), intake.text(text, "text")) for topic, text in pairs]
    intake.report()
    return cleaned


def _normalize_rows(matrix):
    """Scale rows to unit L2 norm (zero rows stay zero); keeps sparse matrices sparse."""
    from scipy import sparse

    if sparse.issparse(matrix):
        matrix = sparse.csr_matrix(matrix, dtype=np.float64)
        norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
        scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        return sparse.diags(scale) @ matrix
    matrix = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def _vectorizer(name: str, options: Mapping):
    """A registered vectorizer, made through the registry itself: this module is below
    :mod:`ctrlkit.api` (which imports the components that name a TopicSpace)."""
    from .plugins import get_registry

    return get_registry("vectorizers").create(name, **options)
