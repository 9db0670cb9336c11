import json

import pytest
from rouge_score import rouge_scorer

import ctrlkit
from ctrlkit import Example

from helpers import shared_file


def test_rouge_equals_rouge_score_called_directly_with_max_over_references():
    examples = ctrlkit.get_dataset("sample").load("test")[:30]
    # give each example a second reference: the other topic's summary of the same article
    by_article = {}
    for e in examples:
        by_article.setdefault(e.meta["article"], []).append(e.references[0])
    multi = [Example(e.id, e.document, by_article[e.meta["article"]], e.controls) for e in examples]
    predictions = [" ".join(e.document.split(". ")[:2]) for e in examples]
    metric = ctrlkit.get_metric("rouge", types="rouge1,rouge2,rougeL")
    result = metric.compute(predictions, multi)
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    for i, (prediction, example) in enumerate(zip(predictions, multi)):
        for name in ("rouge1", "rouge2", "rougeL"):
            expected = max(scorer.score(reference, prediction)[name].fmeasure for reference in example.references)
            assert result.per_example[name][i] == pytest.approx(expected, abs=1e-12)
    assert result.corpus["rouge1"] == pytest.approx(sum(result.per_example["rouge1"]) / len(predictions))


def test_rouge_reproduces_the_published_fd_scores():
    """FD stores ROUGE-1/2/L of each system abstract against the human one (stemmer off)."""
    path = shared_file("fd/arxiv.json")
    papers = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    metric = ctrlkit.get_metric("rouge", types="rouge1,rouge2,rougeL", use_stemmer=False)
    for system in ("gpt35", "llama2_70b", "bartlarge", "factsum"):
        examples = [Example(str(i), "(the paper; ROUGE does not read it)",
                            [paper["human"]]) for i, paper in enumerate(papers)]
        result = metric.compute([paper[system] for paper in papers], examples)
        for name, stored in (("rouge1", "newrouge1"), ("rouge2", "newrouge2"), ("rougeL", "newrougel")):
            published = [paper[f"{system}_{stored}"] for paper in papers]
            assert result.per_example[name] == pytest.approx(published, abs=1e-6)


def test_rouge_lsum_sees_sentence_boundaries():
    reference = "The cat sat on the mat. The dog barked at night."
    prediction = "The dog barked at night. The cat sat on the mat."
    example = [Example("x", "doc", [reference])]
    split = ctrlkit.get_metric("rouge", types="rougeLsum").compute([prediction], example)
    joined = ctrlkit.get_metric("rouge", types="rougeLsum", split_sentences=False).compute([prediction], example)
    assert split.corpus["rougeLsum"] == pytest.approx(1.0)
    assert joined.corpus["rougeLsum"] < 1.0


def test_rouge_refuses_unknown_types():
    with pytest.raises(ctrlkit.OptionError, match="unknown ROUGE type 'rougeX'"):
        ctrlkit.get_metric("rouge", types="rouge1,rougeX")


def test_stas_metric_reports_the_threshold_share():
    from ctrlkit.topics import TopicSpace

    dataset = ctrlkit.get_dataset("sample")
    examples = dataset.load("test")
    stas = ctrlkit.get_metric("stas")
    stas.use_topic_space(TopicSpace.fit(dataset.topic_documents(), "tfidf"))
    result = stas.compute([e.references[0] for e in examples], examples)
    values = result.per_example["stas"]
    assert result.corpus["above_threshold"] == pytest.approx(sum(v >= 0.696 for v in values) / len(values))
    assert result.corpus["stas"] == pytest.approx(sum(values) / len(values))


def test_stas_without_a_topic_space_says_so():
    with pytest.raises(ctrlkit.CtrlkitError, match="has no topic space"):
        ctrlkit.get_metric("stas").compute(["x"], [Example("x", "doc", controls={"topic": "t"})])


def test_sentence_splitting_keeps_every_token_of_real_abstracts():
    """pysbd alone loses text on some arXiv abstracts; ctrlkit.text.sentences must not."""
    from rouge_score import tokenize

    from ctrlkit.text import sentences

    path = shared_file("fd/arxiv.json")
    papers = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = [paper[key] for paper in papers for key in ("human", "gpt35", "llama2_70b", "bartlarge", "factsum")]
    for text in texts:
        assert tokenize.tokenize("\n".join(sentences(text)), None) == tokenize.tokenize(text, None)
