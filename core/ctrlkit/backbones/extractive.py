"""The embedded default backbone: sentence extraction, no weights, no network.

Generic salience is lead-biased centrality: each sentence's tf-idf cosine to the document
centroid, plus a bonus that decays with its position. Control relevance comes from the
signals a controller leaves in the input, read the way a trained model would see them:
``[TAG]``-marked terms (tag), text before a separator (prepend; ``<sep>`` or any token a
controller declares through ``add_special_tokens``), and guidance text. With no
signal the relevance is zero everywhere, so controlled and uncontrolled runs differ only by
the control.
"""

from __future__ import annotations

import re

import numpy as np

from ..components import Backbone
from ..options import Option
from ..text import WORD, lemma, sentences, word_count
from ..types import SEP, TAG

_TAGGED = re.compile(re.escape(TAG) + r"\s*(.*?)\s*" + re.escape(TAG), re.DOTALL)


class ExtractiveBackbone(Backbone):
    """Extracts source sentences under a word budget, steered by tags, a prepended topic or guidance."""

    capabilities = frozenset({"text", "guidance", "length_budget"})
    options = (
        Option("max_words", int, 60, "word budget of each summary (a length controller's target replaces it)",
               minimum=1),
        Option("lead_weight", float, 1.0, "weight of the position bonus 1/(1+i) against centrality", minimum=0.0),
        Option("control_weight", float, 2.0, "weight of control relevance against generic salience", minimum=0.0),
        Option("guidance", str, "boost", "boost sentences like the guidance, or restrict selection to "
               "the guidance's own sentences when it has any", choices=("boost", "restrict")),
        Option("max_sentences", int, 0, "most sentences per summary (0: only the word budget limits)", minimum=0),
        Option("selection", str, "salience", "choose sentences by score, or in document order (lead)",
               choices=("salience", "lead")),
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.separators = {SEP}

    def add_special_tokens(self, tokens):
        """Controllers declare their markup here; every token but [TAG] ends prepended control text."""
        self.separators.update(token for token in tokens if token and token != TAG)

    def generate(self, inputs):
        return [self.summarize(model_input.source, model_input.guidance, model_input.features.get("target_words"))
                for model_input in inputs]

    def summarize(self, source: str, guidance: str | None = None, target_words: int | None = None) -> str:
        """``target_words``, when a length controller asks for it, replaces the ``max_words`` budget."""
        prefix, document = _split_prefix(source, self.separators)
        tagged_terms = {term.lower() for term in _TAGGED.findall(document)}
        document = _TAGGED.sub(r"\1", document).replace(TAG, " ")
        candidates = sentences(document)
        if guidance and self.options["guidance"] == "restrict":
            given = set(sentences(guidance))
            candidates = tuple(s for s in candidates if s in given) or candidates
        if not candidates:
            return ""
        query = " ".join(part for part in (prefix, guidance or "") if part.strip())
        vectors, query_vector = _sentence_vectors(candidates, query)
        if self.options["selection"] == "lead":
            return self._select(candidates, -np.arange(len(candidates), dtype=float), target_words)
        relevance = _tag_relevance(candidates, tagged_terms) + _scale(vectors @ query_vector)
        return self._select(candidates, self._generic_salience(vectors) + self.options["control_weight"] * relevance,
                            target_words)

    def _generic_salience(self, vectors):
        centroid = vectors.mean(axis=0)
        centrality = vectors @ centroid / (np.linalg.norm(centroid) or 1.0)
        position_bonus = 1.0 / (1.0 + np.arange(len(vectors)))
        return _scale(centrality) + self.options["lead_weight"] * position_bonus

    def _select(self, candidates, scores, target_words=None):
        budget, most = target_words or self.options["max_words"], self.options["max_sentences"] or len(candidates)
        chosen, used = [], 0
        for i in np.argsort(-scores, kind="stable"):
            length = word_count(candidates[i])
            if used + length <= budget and len(chosen) < most:
                chosen.append(i)
                used += length
        if not chosen:
            chosen = [int(np.argmax(scores))]
        return " ".join(candidates[i] for i in sorted(chosen))


def _split_prefix(source: str, separators) -> tuple[str, str]:
    """Control text before the first separator, and the document after it."""
    found = [(source.find(separator), separator) for separator in separators if separator in source]
    if not found:
        return "", source
    position, separator = min(found)
    return source[:position], source[position + len(separator):]


def _tag_relevance(candidates, tagged_terms):
    """Tagged words per sentence, divided by the square root of its length."""
    if not tagged_terms:
        return np.zeros(len(candidates))
    words = [WORD.findall(sentence.lower()) for sentence in candidates]
    counts = np.array([sum(word in tagged_terms for word in ws) for ws in words], dtype=float)
    return _scale(counts / np.sqrt([max(1, len(ws)) for ws in words]))


def _content_lemmas(text: str) -> list[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return [
        lemma(word)
        for word in WORD.findall(text.lower())
        if len(word) > 1 and not word.isdigit() and word not in ENGLISH_STOP_WORDS
    ]


def _sentence_vectors(candidates, query):
    """Unit tf-idf vectors of the sentences (idf over the sentences) and of the query."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(analyzer=_content_lemmas, sublinear_tf=True)
    try:
        vectors = vectorizer.fit_transform(candidates).toarray()
    except ValueError:  # no content words at all
        return np.zeros((len(candidates), 1)), np.zeros(1)
    query_vector = vectorizer.transform([query]).toarray()[0] if query else np.zeros(vectors.shape[1])
    return vectors, query_vector


def _scale(values: np.ndarray) -> np.ndarray:
    """Divide by the maximum so each signal lies in [0, 1] (all-zero stays zero)."""
    top = values.max() if len(values) else 0.0
    return values / top if top > 0 else np.zeros_like(values)
