"""How the extractive backbone scores and picks sentences: lead-biased tf-idf centrality plus the
relevance of each sentence to the control signals, under a word budget (see ``extractive``)."""

from __future__ import annotations

import numpy as np

from ..text import WORD, lemma, word_count


def select(candidates, query: str, tagged_terms: set[str], options, budget: int) -> str:
    """The best-scoring sentences that fit ``budget`` words (at most ``max_sentences``), in document
    order, or the best one alone when none fits; ``options`` are the backbone's. With
    ``selection=lead`` the first sentences score highest."""
    if options["selection"] == "lead":
        scores = -np.arange(len(candidates), dtype=float)
    else:
        vectors, query_vector = _sentence_vectors(candidates, query)
        relevance = _tag_relevance(candidates, tagged_terms) + _scale(vectors @ query_vector)
        scores = _generic_salience(vectors, options["lead_weight"]) + options["control_weight"] * relevance
    most = options["max_sentences"] or len(candidates)
    chosen, used = [], 0
    for i in np.argsort(-scores, kind="stable"):
        length = word_count(candidates[i])
        if used + length <= budget and len(chosen) < most:
            chosen.append(i)
            used += length
    if not chosen:
        chosen = [int(np.argmax(scores))]
    return " ".join(candidates[i] for i in sorted(chosen))


def _generic_salience(vectors, lead_weight: float):
    centroid = vectors.mean(axis=0)
    centrality = vectors @ centroid / (np.linalg.norm(centroid) or 1.0)
    position_bonus = 1.0 / (1.0 + np.arange(len(vectors)))
    return _scale(centrality) + lead_weight * position_bonus


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
