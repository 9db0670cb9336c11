"""``ctrlkit.entity_mentions``: the option ``mentions`` (rule, spacy, spacy-pronouns) on real news
text (CTRLsum's CNN/DailyMail test sources), compared with spaCy's own ``doc.ents`` computed here."""

import subprocess
import sys

import pytest

from ctrlkit import ConfigurationError, OptionError
from ctrlkit import spacy_pipeline
from ctrlkit.entity_mentions import MentionFinder, names_person
from ctrlkit.text import sentences
from helpers.english_ner import english_nlp, news_articles, parsed, people, sentences_naming

DOCUMENTS = 12


def test_spacy_mentions_equal_the_sentences_that_spacys_own_entities_give_on_news_articles():
    nlp = english_nlp()
    finder, compared, surname_only = MentionFinder("spacy", "entity.mentions"), 0, 0
    for document in news_articles(DOCUMENTS):
        split = sentences(document)
        names = {span for doc in nlp.pipe(split) for span in people(doc)  # "First Last", no "Jr." or initial
                 if len(span.split()) == 2 and all(word.isalpha() for word in span.split())}
        for entity in sorted(names):
            expected = sentences_naming(split, entity)
            assert finder.sentences(document, entity) == expected, entity
            compared += 1
            surname_only += sum(entity.lower() not in sentence.lower() for sentence in expected)
    assert compared >= 50 and surname_only >= 10  # 56 and 13 with spaCy 3.8.18: many found by the surname alone


CORRECTIONS = [  # (text, entity, what the rule finds, what spacy finds): spaCy's labels correct the word lists
    ("Goldman Sachs reported earnings. Analysts said Sachs shares fell.", "Goldman Sachs", [0, 1], [0]),
    ("Roger Sterling left. He joined Sterling Cooper in 1950. Sterling laughed.", "Roger Sterling", [0, 1, 2], [0, 2]),
    ("Barack Obama arrived. Michelle Obama spoke first.", "Barack Obama", [0, 1], [0]),
    ("Margaret Court won the title. Court said she was proud.", "Margaret Court", [0], [0, 1]),
    ("Isaiah Washington appeared on CNN. Washington defended the tweet.", "Isaiah Washington", [0, 1], [0, 1]),
    ("Tim Cook spoke. Analysts said firms cook the books. Cook smiled.", "Tim Cook", [0, 2], [0, 2]),
]


@pytest.mark.parametrize("text, entity, by_rule, by_spacy", CORRECTIONS)
def test_spacy_corrects_the_rule_where_the_recogniser_labels_the_name(text, entity, by_rule, by_spacy):
    nlp = english_nlp()
    split = sentences(text)
    assert MentionFinder("rule", "x.mentions").sentences(text, entity) == [split[i] for i in by_rule]
    assert MentionFinder("spacy", "x.mentions").sentences(text, entity) == [split[i] for i in by_spacy]
    if entity != "Goldman Sachs":  # a person, as spaCy's own labels say: its sentences as the test helper finds them
        assert nlp(entity + " arrived.").ents[0].label_ == "PERSON"
        assert MentionFinder("spacy", "x.mentions").sentences(text, entity) == sentences_naming(split, entity)


def test_an_aliases_control_is_read_as_the_rule_reads_it():
    english_nlp()
    text = "Tim Cook spoke. Analysts said firms cook the books. Cook smiled."
    spacy, rule = MentionFinder("spacy", "x.mentions"), MentionFinder("rule", "x.mentions")
    assert spacy.sentences(text, "Tim Cook", ["Cook"]) == rule.sentences(text, "Tim Cook", ["Cook"])
    assert spacy.sentences(text, "Tim Cook", []) == ["Tim Cook spoke."]


def test_names_person_takes_the_last_name_word_and_other_words_of_the_name():
    assert names_person("Robin", "Brice Robin") and names_person("Brice Robin's", "Brice Robin")
    assert names_person("Mr. Robin", "Brice Robin") and names_person("Assad", "Bashar al-Assad")
    assert names_person("King", "Martin Luther King Jr.") and names_person("Luther King", "Martin Luther King, Jr.")
    assert not names_person("Michelle Obama", "Barack Obama") and not names_person("Brice", "Brice Robin")


def test_pronoun_attachment_finds_he_added_after_the_one_person_named():
    english_nlp()
    document = news_articles(1)[0]
    split = sentences(document)
    he_added = next(sentence for sentence in split if sentence.startswith("He added"))
    plain = MentionFinder("spacy", "x.mentions").sentences(document, "Brice Robin")
    pronouns = MentionFinder("spacy-pronouns", "x.mentions").sentences(document, "Brice Robin")
    assert he_added not in plain and he_added not in MentionFinder("rule", "x.mentions").sentences(document, "Brice Robin")
    assert pronouns == [sentence for sentence in split if sentence in plain or sentence == he_added]
    # the same sentence never attaches to a person the previous sentence did not name alone
    two = "Brice Robin met Julian Reichelt. He added that the video was fake."
    assert MentionFinder("spacy-pronouns", "x.mentions").sentences(two, "Brice Robin") == [sentences(two)[0]]
    # nor does a sentence that names a person, opens with a quotation or has its pronoun elsewhere
    for later in ('He met Julian Reichelt.', '"He lied," a witness said.', 'Later, he left.'):
        text = f"Brice Robin spoke. {later}"
        assert MentionFinder("spacy-pronouns", "x.mentions").sentences(text, "Brice Robin") == ["Brice Robin spoke."]
    assert MentionFinder("spacy-pronouns", "x.mentions").sentences("Brice Robin spoke. She left.", "Brice Robin") == \
        ["Brice Robin spoke.", "She left."]  # no gender is read
    # nor with an aliases control, which names the entity's mentions itself
    assert MentionFinder("spacy-pronouns", "x.mentions").sentences(document, "Brice Robin", ["Robin"]) == \
        MentionFinder("rule", "x.mentions").sentences(document, "Brice Robin", ["Robin"])


@pytest.fixture
def fresh_pipeline():
    """spacy_pipeline loads again in this test (and in the next one that asks), as in a new process."""
    spacy_pipeline.forget_pipeline()
    yield
    spacy_pipeline.forget_pipeline()


def test_a_missing_spacy_is_one_line_that_names_the_option_and_the_extra(monkeypatch, fresh_pipeline):
    monkeypatch.setitem(sys.modules, "spacy", None)  # import spacy then raises ImportError
    with pytest.raises(ConfigurationError) as raised:
        MentionFinder("spacy", "entity.mentions").load()
    message = str(raised.value)
    assert message == ("option entity.mentions=spacy needs spaCy, which is not installed: pip install "
                       "'ctrlkit[ner]', or pip install spacy && python -m spacy download en_core_web_sm")
    with pytest.raises(ConfigurationError, match=r"^option guidance.mentions=spacy-pronouns needs spaCy"):
        MentionFinder("spacy-pronouns", "guidance.mentions").sentences("Tim Cook spoke.", "Tim Cook")
    MentionFinder("rule", "entity.mentions").load()  # the default needs nothing
    assert MentionFinder("rule", "entity.mentions").sentences("Tim Cook spoke.", "Tim Cook") == ["Tim Cook spoke."]


def test_a_missing_pipeline_is_one_line_too(monkeypatch, fresh_pipeline):
    pytest.importorskip("spacy", reason="needs spaCy (pip install 'ctrlkit[ner]')")
    monkeypatch.setattr(spacy_pipeline, "PIPELINES", ("no_such_pipeline",))
    with pytest.raises(ConfigurationError, match=r"^option entity.mentions=spacy needs an English spaCy pipeline "
                                                 r"\(no_such_pipeline\), and none is installed: pip install "):
        MentionFinder("spacy", "entity.mentions").load()


def test_an_unknown_finder_is_refused():
    with pytest.raises(OptionError, match="option entity.mentions must be one of rule, spacy, spacy-pronouns; got 'ner'"):
        MentionFinder("ner", "entity.mentions")


def test_the_cli_starts_and_runs_the_rule_without_importing_spacy(tmp_path):
    script = f"""
import sys
from click.testing import CliRunner
from ctrlkit.cli import cli
for args in (["--help"], ["list"], ["run", "--help"],
             ["run", "--controller", "guidance", "--metric", "entity", "--data", {str(tmp_path / 'e.jsonl')!r},
              "--dataset", "jsonl", "--bootstrap", "0", "--no-cache", "-o", {str(tmp_path / 'run')!r}]):
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
print("spacy" in sys.modules)
"""
    (tmp_path / "e.jsonl").write_text('{"id": "a", "document": "Tim Cook spoke. Cook smiled.", '
                                      '"references": ["Cook spoke."], "controls": {"entity": "Tim Cook"}}\n')
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


@pytest.mark.slow
def test_on_ctrlsums_100_test_articles_the_finders_find_what_the_docs_say():
    """The figures of docs/reference/metrics.md ("entity"): for every two-word name spaCy labels a
    person in each of CTRLsum's 100 test articles, the sentences each finder gives (spaCy 3.8.18)."""
    articles = news_articles(100)
    finders = {how: MentionFinder(how, "x.mentions") for how in ("rule", "spacy", "spacy-pronouns")}
    found = {how: 0 for how in finders}
    pairs = only_rule = only_spacy = 0
    for article in articles:
        split = sentences(article)
        names = {span for doc in parsed(split) for span in people(doc)
                 if len(span.split()) == 2 and all(word.isalpha() for word in span.split())}
        for entity in names:
            pairs += 1
            given = {how: finder.sentences(article, entity) for how, finder in finders.items()}
            for how in finders:
                found[how] += len(given[how])
            only_rule += len(set(given["rule"]) - set(given["spacy"]))
            only_spacy += len(set(given["spacy"]) - set(given["rule"]))
    assert (pairs, found["rule"], found["spacy"], found["spacy-pronouns"], only_rule, only_spacy) == \
        (497, 1097, 1040, 1071, 58, 1)


@pytest.mark.slow
def test_spacy_analyses_a_long_prediction_in_bounded_memory():
    import tracemalloc

    english_nlp()  # skips without spaCy or a pipeline
    finder = MentionFinder("spacy", "entity.mentions")

    def peak(words):
        text = "aaaa " * words + "John Smith"
        tracemalloc.start()
        try:
            finder.sentences(text, "John Smith")
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    peak(100)  # the pipeline loaded out of the measure
    # before: every 5,000-character window went to spaCy in one batch (a 1.1 MB prediction: 3.7 GB)
    small, large = peak(8000), peak(64000)
    assert large < 2.5 * small, (small, large)
