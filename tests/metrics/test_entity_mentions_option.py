"""The ``entity`` metric's option ``mentions``: rule (the default), spacy and spacy-pronouns, and the
one-line error of a run that asks for spaCy where it is not installed."""

import json
import sys

import pytest

import ctrlkit
from ctrlkit import Example, spacy_pipeline
from ctrlkit.testing import check_metric
from ctrlkit.text import sentences
from helpers import invoke_ctrlkit
from helpers.english_ner import english_nlp, news_articles, people, sentences_naming

SUMMARIES = [  # (summary, entity): what a summarizer might write
    ("Michelle Obama spoke at the convention.", "Barack Obama"),
    ("Analysts said the firm would cook the books.", "Tim Cook"),
    ("Cook said sales rose.", "Tim Cook"),
    ("The prosecutor, Brice Robin, saw no video.", "Brice Robin"),
    ("Robin saw no video. He added that none was used.", "Brice Robin"),
]


def _scores(mentions):
    metric = ctrlkit.get_metric("entity", mentions=mentions)
    examples = [Example(str(index), "", controls={"entity": entity}) for index, (_, entity) in enumerate(SUMMARIES)]
    metric.check(examples)
    return metric.compute([summary for summary, _ in SUMMARIES], examples).per_example["entity"]


def test_the_metric_finds_mentions_by_the_option_mentions():
    assert _scores("rule") == [1.0, 0.0, 1.0, 1.0, 1.0]  # the surname rule takes Michelle Obama for Barack
    spacy = _scores("spacy")
    # spaCy's own doc.ents, read here (helpers.english_ner): Michelle Obama is a PERSON span of another person
    expected = [float(bool(sentences_naming(sentences(summary), entity))) for summary, entity in SUMMARIES]
    assert spacy == expected == [0.0, 0.0, 1.0, 1.0, 1.0]
    assert _scores("spacy-pronouns") == spacy  # a summary naming its entity once and then "he" scores 1 either way


def test_the_metric_scores_news_leads_for_their_people():
    nlp = english_nlp()
    articles = news_articles(6)
    leads = [" ".join(article.split(". ")[:2]) for article in articles]
    examples, predictions, expected = [], [], []
    for index, (article, lead) in enumerate(zip(articles, leads)):
        for entity in sorted({span for span in people(nlp(article)) if len(span.split()) == 2}):
            examples.append(Example(f"{index}:{entity}", article, controls={"entity": entity}))
            predictions.append(lead)
            expected.append(float(bool(sentences_naming(sentences(lead), entity))))
    metric = ctrlkit.get_metric("entity", mentions="spacy")
    scores = metric.compute(predictions, examples).per_example["entity"]
    assert len(scores) >= 15 and 0 < sum(scores) < len(scores)
    assert scores == expected


@pytest.fixture
def no_spacy(monkeypatch):
    """``import spacy`` fails in this test, as where the ner extra is not installed."""
    spacy_pipeline.forget_pipeline()
    monkeypatch.setitem(sys.modules, "spacy", None)
    yield
    spacy_pipeline.forget_pipeline()


def test_a_run_asking_for_spacy_without_it_fails_in_one_line_before_any_work(tmp_path, no_spacy):
    data = tmp_path / "entities.jsonl"
    data.write_text(json.dumps({"id": "a", "document": "Tim Cook spoke. Cook smiled.", "references": ["Cook spoke."],
                                "controls": {"entity": "Tim Cook"}}) + "\n")
    failed = invoke_ctrlkit("run", "--dataset", "jsonl", "--data", str(data), "--metric", "entity",
                            "--set", "entity.mentions=spacy", "--no-cache", "-o", str(tmp_path / "run"))
    assert failed.returncode != 0 and not (tmp_path / "run" / "results.json").exists()
    assert failed.stderr.strip() == ("Error: option entity.mentions=spacy needs spaCy, which is not installed: pip install "
                              "'ctrlkit[ner]', or pip install spacy && python -m spacy download en_core_web_sm")
    plain = invoke_ctrlkit("run", "--dataset", "jsonl", "--data", str(data), "--metric", "entity",
                           "--bootstrap", "0", "--no-cache", "-o", str(tmp_path / "rule"))
    assert plain.returncode == 0, plain.stderr  # the default rule needs no spaCy


@pytest.mark.parametrize("mentions", ["spacy", "spacy-pronouns"])
def test_the_metric_passes_the_conformance_kit_with_spacy(mentions):
    english_nlp()
    examples = [Example(str(index), article, controls={"entity": "Brice Robin"})
                for index, article in enumerate(news_articles(2))]
    check_metric(ctrlkit.get_metric("entity", mentions=mentions), examples=examples,
                 predictions=[article[:300] for article in news_articles(2)])


def test_the_spacy_pipeline_a_run_used_is_recorded_with_its_options():
    import spacy

    english_nlp()  # skips without spaCy or a pipeline
    metric = ctrlkit.get_metric("entity", mentions="spacy")
    metric.check([Example("0", "", controls={"entity": "Tim Cook"})])
    package = next(name for name in spacy_pipeline.PIPELINES if spacy.util.is_package(name))
    version = spacy.load(package).meta["version"]
    assert metric.recorded_options()["mentions_pipeline"] == f"{package} {version}, spacy {spacy.__version__}"
    rule = ctrlkit.get_metric("entity")
    rule.check([Example("0", "", controls={"entity": "Tim Cook"})])
    assert "mentions_pipeline" not in rule.recorded_options()
