import csv
import re

import pytest

import ctrlkit
from ctrlkit import TAG, Example, ModelInput
from ctrlkit.text import WORD, lemma
from ctrlkit.topics import TopicSpace
from ctrlkit_controllers.tag import tag_text

from helpers import shared_file


@pytest.fixture(scope="module")
def sample_space():
    return TopicSpace.fit(ctrlkit.get_dataset("sample").topic_documents(), "tfidf")


def test_tag_marks_lemma_matches_in_real_text():
    space = TopicSpace.fit({"business": ["Business and business markets.", "A business market."],
                            "sports": ["The match and the goal.", "A goal in the match."]}, "tfidf")
    tag = ctrlkit.get_controller("tag", top_n=2)
    tag.fit([], space)
    assert tag.terms["business"] == ["business", "market"]
    text = ("Individuals and businesses together spend 6.1 billion hours a year on tax paperwork, "
            "and the stock market fell.")
    example = Example("x", text, controls={"topic": "business"})
    tagged = tag.apply(example, ModelInput(source=text)).source
    assert tagged == ("Individuals and [TAG] businesses [TAG] together spend 6.1 billion hours a year on tax "
                      "paperwork, and the stock [TAG] market [TAG] fell.")


def test_tag_fitted_on_the_sample_topics(sample_space):
    tag = ctrlkit.get_controller("tag")
    tag.fit([], sample_space)
    assert len(tag.terms["business"]) == 100 and "shares" in tag.terms["business"]
    assert not {"the", "and", "of"} & set(tag.terms["business"])  # stop words are left out
    with_stop_words = ctrlkit.get_controller("tag", stop_words=False)
    with_stop_words.fit([], sample_space)
    assert "the" in with_stop_words.terms["business"]
    text = "The company's customer base grew as investors bought shares."
    tagged = tag.apply(Example("x", text, controls={"topic": "business"}), ModelInput(source=text)).source
    assert tagged.replace(f"{TAG} ", "").replace(f" {TAG}", "") == text  # only tags were added
    assert f"{TAG} customer {TAG}" in tagged and f"{TAG} investors {TAG}" in tagged


def test_tag_on_a_newts_article():
    path = shared_file("newts/NEWTS_test_600.csv")
    with open(path, newline="", encoding="utf-8") as file:
        row = next(csv.DictReader(file))
    terms = frozenset({"weather", "temperature", "rescue"})
    tagged = tag_text(row["article"], terms)
    marked = re.findall(re.escape(TAG) + r" (\w+) " + re.escape(TAG), tagged)
    assert {word.lower() for word in marked} == {"weather", "rescue"}  # the article has no "temperature"
    assert marked.count("weather") == row["article"].count("weather")
    assert tag_text("Temperatures fell; rescuers were rescued.", terms) == (
        f"{TAG} Temperatures {TAG} fell; rescuers were {TAG} rescued {TAG}.")


def test_tag_reproduces_the_authors_released_tagging():
    """Given the terms the authors tagged in each of their 30 documents, our tagger tags every
    token they tagged; the few extra ones are other inflections of the same lemmas."""
    path = shared_file("passali/sample_with_tags.csv")
    pattern = re.compile(r"\[TAG\](.*?)\[TAG\]|(\w+)")
    ours_pattern = re.compile(re.escape(TAG) + r" (\w+) " + re.escape(TAG) + r"|(\w+)")
    agree = extra = missed = 0
    with open(path, newline="", encoding="utf-8") as file:
        for tagged, _summary, _topic in csv.reader(file):
            terms = {word.lower() for word in re.findall(r"\[TAG\](.*?)\[TAG\]", tagged)}
            plain = tagged.replace("[TAG]", "")
            theirs = [(m.group(1) or m.group(2), m.group(1) is not None) for m in pattern.finditer(tagged)]
            ours_text = tag_text(plain, frozenset(terms))
            ours = [(m.group(1) or m.group(2), m.group(1) is not None) for m in ours_pattern.finditer(ours_text)]
            assert [w for w, _ in theirs] == [w for w, _ in ours]
            for (word, a), (_, b) in zip(theirs, ours):
                agree += a and b
                extra += b and not a
                missed += a and not b
    assert missed == 0 and agree == 1660
    assert agree / (agree + extra) > 0.95
    # and the authors never tag the commonest function words, which the default leaves out
    with open(path, newline="", encoding="utf-8") as file:
        tagged_words = {w.lower() for row in csv.reader(file) for w in re.findall(r"\[TAG\](.*?)\[TAG\]", row[0])}
    assert not tagged_words & {"the", "a", "an", "of", "to", "and", "in", "is", "was", "for", "on", "that"}


def test_prepend_puts_the_topic_first():
    example = Example("x", "The match ended.", controls={"topic": "sports", "keywords": ["goal", "coach"]})
    source = ModelInput(source=example.document)
    assert ctrlkit.get_controller("prepend").apply(example, source).source == "sports <sep> The match ended."
    both = ctrlkit.get_controller("prepend", attributes="topic,keywords", separator="</s>")
    assert both.apply(example, source).source == "sports | goal, coach </s> The match ended."
    assert both.reads == ("topic", "keywords")


def test_prepend_plus_tag_tags_the_document_then_prepends(sample_space):
    chain = ctrlkit.get_controller("prepend+tag")
    chain.fit([], sample_space)
    example = Example("x", "The coach praised the players after the final.", controls={"topic": "sports"})
    output = chain.apply(example, ModelInput(source=example.document)).source
    assert output == f"sports <sep> The {TAG} coach {TAG} praised the {TAG} players {TAG} after the {TAG} final {TAG}."
    assert chain.reads == ("topic",) and chain.topic_vectorizer == "tfidf"


def test_controllers_are_pure(sample_space):
    chain = ctrlkit.get_controller("prepend+tag")
    chain.fit([], sample_space)
    example = Example("x", "Investors bought shares.", controls={"topic": "business"})
    model_input = ModelInput(source=example.document)
    first = chain.apply(example, model_input)
    assert chain.apply(example, model_input) == first
    assert model_input.source == "Investors bought shares." and example.controls == {"topic": "business"}


def test_chain_options_are_per_controller():
    chain = ctrlkit.get_controller("prepend+tag", tag={"top_n": 7}, prepend={"separator": "|"})
    assert [c.options for c in chain.controllers] == [
        {"attributes": "topic", "separator": "|", "joiner": " | ", "require": "all"}, {"top_n": 7, "stop_words": True}]


def test_lemma_is_context_free_and_lowercase():
    assert [lemma(w) for w in ("Businesses", "children", "planned", "hours")] == ["business", "child", "plan", "hour"]
    assert WORD.findall("6.1 billion") == ["6", "1", "billion"]


def test_a_term_whose_lemma_collides_does_not_tag_unrelated_words():
    """simplemma lemmatizes the term "ai" as "be"; forms of "be" must not be tagged for it."""
    assert lemma("ai") == "be"
    assert tag_text("The AI system is new and was built.", frozenset({"ai", "system"})) == (
        f"The {TAG} AI {TAG} {TAG} system {TAG} is new and was built.")


def test_a_custom_prepend_separator_reaches_the_backbone():
    result = ctrlkit.run(controller="prepend", metrics=["stas"], baseline=None, limit=6,
                         options={"prepend": {"separator": "||"}})
    assert not any("||" in s["prediction"] or s["prediction"].startswith(s["controls"]["topic"])
                   for s in result.samples)
    with pytest.raises(ctrlkit.OptionError, match="'prepend.separator' must not be empty"):
        ctrlkit.get_controller("prepend", separator=" ")
