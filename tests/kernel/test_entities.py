"""The entity alias rule (ctrlkit.entities) that the guidance controller and the entity metric
share: no alias for organisations and places, a surname for person-like names, and an explicit
``aliases`` control that wins in both components."""

import csv
import re

import pytest

import ctrlkit
from ctrlkit import ConfigurationError, Example, ModelInput
from ctrlkit.entities import _pattern, aliases, mentions, person_like, surname

from helpers import shared_file


# -- the negative cases ---------------------------------------------------------------

@pytest.mark.parametrize("entity, text", [
    ("Bank of America", "America is the largest market, the lender said."),
    ("Bank of America", "Shares of banks in AMERICA rose."),
    ("United Nations", "Several nations refused to sign."),
    ("United Nations", "The Nations Cup final is on Sunday."),
    ("United States", "The states will vote in November."),
    ("Deutsche Bank", "The bank raised its rates."),
])
def test_an_organisation_never_matches_on_its_last_word(entity, text):
    assert aliases(entity) == [entity] and not person_like(entity)
    assert not mentions(text, entity)
    assert mentions(f"A statement from {entity.upper()} followed.", entity)  # the full name, any case


# -- person-like names ----------------------------------------------------------------------------

@pytest.mark.parametrize("entity, expected", [
    ("Barack Obama", "Obama"),
    ("Martin Luther King Jr.", "King"),
    ("Martin Luther King, Jr.", "King"),
    ("President Barack Obama", "Obama"),
    ("Mr. Smith", "Smith"),
    ("Sir Alex Ferguson", "Ferguson"),
    ("Vice President Joe Biden", "Biden"),
    ("John F. Kennedy", "Kennedy"),
    ("J.K. Rowling", "Rowling"),
    ("Ludwig van Beethoven", "Beethoven"),
    ("Alex Oxlade-Chamberlain", "Oxlade-Chamberlain"),
    ("José Martí", "Martí"),
    ("King Charles III", "Charles"),
])
def test_a_person_like_name_also_matches_by_its_surname(entity, expected):
    assert person_like(entity) and surname(entity) == expected
    assert aliases(entity) == [entity, expected]
    assert mentions(f"On Monday, {expected} said he would stay.", entity)


@pytest.mark.parametrize("entity", [
    "Bank of America", "United Nations", "Secretary of State John Kerry", "NASA", "IBM Research",
    "New York", "Los Angeles", "Saudi Arabia", "White House", "Manchester United", "Procter & Gamble",
    "The Queen", "Prime Minister", "Supreme Court", "Islamic State", "barack obama", "Obama",
    "A Tale of Two Cities", "Smith 2000",
])
def test_names_that_are_not_person_like(entity):
    assert not person_like(entity) and surname(entity) is None and aliases(entity) == [entity]


def test_an_arabic_article_gives_the_bare_surname_too():
    assert aliases("Bashar al-Assad") == ["Bashar al-Assad", "al-Assad", "Assad"]
    assert mentions("Mr. Assad's forces advanced.", "Bashar al-Assad")


def test_a_surname_counts_only_where_it_is_capitalised():
    assert mentions("Cook met officials last year.", "Tim Cook")
    assert mentions("MR. COOK declined to comment.", "Tim Cook")
    assert not mentions("He had to cook the books.", "Tim Cook")
    assert not mentions("The judge ruled on Friday.", "Aaron Judge")
    assert mentions("the chef tim cook arrived", "Tim Cook")  # the full name ignores case


def test_whole_words_only_and_any_whitespace_inside_a_name():
    assert not mentions("Obamacare passed.", "Barack Obama")
    assert mentions("Barack\nObama spoke.", "Barack Obama")
    assert mentions("Obama's plan stalled.", "Barack Obama")
    assert mentions("The U.S. said no.", "U.S.")


# -- the explicit aliases control -------------------------------------------------------------------

def test_explicit_aliases_replace_the_derived_ones():
    assert aliases("Goldman Sachs") == ["Goldman Sachs", "Sachs"]  # a limit of the word lists...
    assert aliases("Goldman Sachs", ["Goldman", "GS"]) == ["Goldman Sachs", "Goldman", "GS"]  # ...lifted
    assert aliases("Goldman Sachs", "Goldman | GS") == ["Goldman Sachs", "Goldman", "GS"]
    assert aliases("Goldman Sachs", []) == aliases("Goldman Sachs", "") == ["Goldman Sachs"]
    assert aliases("Barack Obama", ["the president"]) == ["Barack Obama", "the president"]
    assert not mentions("Obama spoke.", "Barack Obama", ["the president"])
    assert mentions("The President spoke.", "Barack Obama", "the president")  # given aliases ignore case
    assert mentions("America voted.", "Bank of America", "America|BofA")
    assert aliases("Martin Luther King, Jr.", "Martin Luther King, Jr.|MLK") == ["Martin Luther King, Jr.", "MLK"]


def test_a_malformed_aliases_control_is_refused():
    with pytest.raises(ConfigurationError, match="control 'aliases' must be a list of names or one string"):
        aliases("Barack Obama", 3)
    with pytest.raises(ConfigurationError, match="got list"):
        mentions("x", "Barack Obama", ["Obama", 3])


def test_the_pattern_cache_is_hit_with_given_aliases():
    _pattern.cache_clear()
    for _ in range(3):
        assert mentions("GS rose.", "Goldman Sachs", ["GS"])
        assert mentions("GS rose.", "Goldman Sachs", "GS")
    assert _pattern.cache_info().misses == 1 and _pattern.cache_info().hits == 5


def test_explicit_aliases_win_in_the_controller_and_the_metric():
    document = "Obama spoke first. The president then left. Rain fell."
    plain = Example("a", document, controls={"entity": "Barack Obama"})
    given = Example("b", document, controls={"entity": "Barack Obama", "aliases": ["the president"]})
    none_given = Example("c", document, controls={"entity": "Barack Obama", "aliases": []})
    guidance = ctrlkit.get_controller("guidance")
    guided = [guidance.apply(e, ModelInput(source=document)).guidance for e in (plain, given, none_given)]
    assert guided == ["Obama spoke first.", "The president then left.", "Barack Obama"]
    metric = ctrlkit.get_metric("entity")
    scores = metric.compute(["Obama spoke first."] * 3, [plain, given, none_given]).per_example["entity"]
    assert scores == [1.0, 0.0, 0.0]
    assert metric.compute(["The president then left."], [given]).per_example["entity"] == [1.0]


def test_a_malformed_aliases_control_names_the_example_in_both_components():
    bad = Example("x1", "Obama spoke.", controls={"entity": "Barack Obama", "aliases": {"a": 1}})
    with pytest.raises(ConfigurationError, match="controller 'guidance', example 'x1': control 'aliases'"):
        ctrlkit.get_controller("guidance").apply(bad, ModelInput(source=bad.document))
    with pytest.raises(ConfigurationError, match="metric 'entity', example 'x1': control 'aliases'"):
        ctrlkit.get_metric("entity").check([bad])


# -- news sentences ----------------------------------------------------------------------------------

NEWS = [
    "Bank of America said on Tuesday that profit rose 12 percent in the third quarter.",
    "Investors in America and Europe cheered the result.",
    "The United Nations Security Council met in emergency session.",
    "Delegates from 40 nations attended the talks in Geneva.",
    "President Barack Obama welcomed the agreement.",
    "Mr. Obama said the deal would cut emissions.",
    "Critics of Obamacare were not persuaded.",
    "Martin Luther King Jr. Day is a federal holiday.",
    "Dr. King's speech was read aloud.",
]


@pytest.mark.parametrize("entity, found", [
    ("Bank of America", [0]),
    ("United Nations", [2]),
    ("Barack Obama", [4, 5]),
    ("Martin Luther King Jr.", [7, 8]),
])
def test_news_sentences(entity, found):
    assert [i for i, sentence in enumerate(NEWS) if mentions(sentence, entity)] == found


# -- real articles (NEWTS, read from the shared data; never copied here) ---------------------------

ORGANISATIONS = [
    "United States", "United Nations", "White House", "Manchester United", "Manchester City", "Supreme Court",
    "State Department", "Justice Department", "Deutsche Bank", "European Union", "Islamic State",
    "Premier League", "Champions League", "American Airlines", "Alaska Airlines", "Washington Post",
    "Democratic Party", "Air Force", "Secret Service", "Soviet Union", "Crystal Palace", "Buckingham Palace",
    "Wall Street", "New York", "Los Angeles", "San Francisco", "Saudi Arabia", "Las Vegas", "Middle East",
    "North Carolina", "Hull City", "Leicester City", "Stoke City", "Real Madrid", "Boston Marathon",
]
PEOPLE = ["Arsene Wenger", "Hillary Clinton", "Vladimir Putin", "Jose Mourinho", "Brendan Rodgers",
          "Carlo Ancelotti", "Marco Rubio", "David Cameron"]


@pytest.fixture(scope="module")
def newts_articles():
    with open(shared_file("newts/NEWTS_test_600.csv"), newline="", encoding="utf-8") as file:
        return [row["article"] for row in csv.DictReader(file)]


def _word(word):
    return re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", re.IGNORECASE)


def test_over_newts_an_organisation_never_matches_on_its_last_word_alone(newts_articles):
    checked = 0
    for name in ORGANISATIONS:
        assert aliases(name) == [name], name
        full, last = _word(name), _word(name.split()[-1])
        for article in newts_articles:
            if last.search(article) and not full.search(article):  # the last word alone, never the name
                assert not mentions(article, name), (name, article[:200])
                checked += 1
    assert checked >= 50  # the check is not vacuous: such articles abound


def test_over_newts_a_person_is_found_by_the_surname_alone(newts_articles):
    found = 0
    for name in PEOPLE:
        last = name.split()[-1]
        for article in newts_articles:
            if re.search(rf"(?<!\w){last}(?!\w)", article) and name.lower() not in article.lower():
                assert mentions(article, name), (name, article[:200])
                found += 1
    assert found >= 5


def test_an_aliases_control_of_thousands_of_names_is_refused_in_one_line():
    from ctrlkit.entities import MAX_ALIASES, given_aliases

    # before: 20,000 names became one alternation searched over each sentence (a 725 KB line: 6 s)
    assert len(given_aliases([f"Name{i}" for i in range(MAX_ALIASES)])) == MAX_ALIASES
    for names in ([f"Name{i}" for i in range(MAX_ALIASES + 1)], ["N" * 201]):
        with pytest.raises(ctrlkit.ConfigurationError) as caught:
            given_aliases(names)
        assert "\n" not in str(caught.value) and "at most 100 names of up to 200 characters" in str(caught.value)
