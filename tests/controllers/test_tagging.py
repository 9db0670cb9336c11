"""The fast tagger against the tag rule applied token by token, on real and generated text."""

import csv

from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import shared_file
from ctrlkit import TAG
from ctrlkit.text import WORD, lemma
from ctrlkit_controllers.tagging import TermTagger, distinct_words, wrap_words


def tag_token_by_token(text: str, terms: frozenset[str]) -> str:
    """The rule as stated: every \\w+ token whose lowercased form or lemma is a term is tagged."""

    def replace(found):
        word = found.group(0)
        lowered = word.lower()
        return f"{TAG} {word} {TAG}" if lowered in terms or lemma(lowered) in terms else word

    return WORD.sub(replace, text)


WORDS = ["business", "Businesses", "BUSINESS", "planned", "plan", "children", "child", "ai", "AI", "is", "was",
         "rescue", "rescuers", "_x", "x_1", "6", "1", "naïve", "Straße", "İstanbul", "ﬁnance", "é", "e\u0301"]
SEPARATORS = [" ", ", ", ".", "-", "'", "\n", "\u00a0", "\u2019", "", "…", "$", "½"]
texts = st.lists(st.tuples(st.sampled_from(WORDS) | st.text(max_size=4), st.sampled_from(SEPARATORS)), max_size=30).map(
    lambda pairs: "".join(word + separator for word, separator in pairs))
term_sets = st.frozensets(st.sampled_from([w.lower() for w in WORDS] + ["be", "rescuer", "finance"]), max_size=6)


@settings(max_examples=400, deadline=None)
@given(text=texts, first=term_sets, second=term_sets)
def test_tagger_equals_the_token_by_token_rule(text, first, second):
    tagger = TermTagger({"first": first, "second": second})
    for topic, terms in (("first", first), ("second", second), ("first", first)):  # memory reused on the repeat
        assert tagger.tag(text, topic) == tag_token_by_token(text, terms)


@given(text=st.text(max_size=60))
def test_distinct_words_equals_findall(text):
    assert distinct_words(text) == set(WORD.findall(text))
    assert distinct_words(text.encode("ascii", "replace").decode()) == set(WORD.findall(text.encode("ascii", "replace").decode()))


def test_wrap_words_tags_whole_words_only():
    assert wrap_words("plan planned plans plan_b xplan plan", {"plan"}) == (
        f"{TAG} plan {TAG} planned plans plan_b xplan {TAG} plan {TAG}")
    assert wrap_words("aaa aa", {"aa"}) == f"aaa {TAG} aa {TAG}"


def test_tagger_equals_the_token_by_token_rule_on_newts():
    path = shared_file("newts/NEWTS_test_600.csv")
    with open(path, newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))[:40]
    vocabulary = sorted({lemma(word.lower()) for row in rows for word in WORD.findall(row["article"])})
    terms = {index: frozenset(vocabulary[index::7][:60]) for index in range(7)}
    tagger = TermTagger(terms)
    for number, row in enumerate(rows):
        topic = number % 7
        assert tagger.tag(row["article"], topic) == tag_token_by_token(row["article"], terms[topic])
