"""Topics assigned from words for the super-article builder (Passali & Tsoumakas's pipeline):
the vocabulary hits against an independent count, the assignment against NEWTS's gold topics and
against the tags of the authors' released sample, and the mix built from assigned topics."""

import csv
import json
import re
from collections import Counter

import pytest
import simplemma
from sklearn.feature_extraction.text import CountVectorizer

import ctrlkit
from ctrlkit import Example
from ctrlkit_datasets.topic_assignment import (TopicAssigner, TopicVocabularies, read_vocabularies,
                                               vocabularies_from_examples)
from ctrlkit_datasets.topic_mix import build_topic_mix, mix_topics, topic_mix

from helpers import invoke_ctrlkit, shared_file

TAGGED = re.compile(r"\[TAG\](.*?)\[TAG\]")


def _independent_bag(document):
    """(lowercased word, its simplemma lemma called directly, not through ctrlkit, occurrences),
    the bag of words counted by scikit-learn."""
    counter = CountVectorizer(lowercase=True, token_pattern=r"(?u)\b\w+\b")
    counts = counter.fit_transform([document]).toarray()[0]
    return [(word, simplemma.lemmatize(word, lang="en").lower(), int(n))
            for word, n in zip(counter.get_feature_names_out(), counts)]


def _independent_hits(document, vocabulary, bag=None):
    """The words of ``document`` (with repeats) whose lowercased form or lemma is in ``vocabulary``."""
    return sum(n for word, lemma, n in bag or _independent_bag(document) if word in vocabulary or lemma in vocabulary)


def _independent_assignment(document, vocabularies):
    """The topics with the most hits (all of them on a tie), or () when none is hit."""
    bag = _independent_bag(document)
    hits = {topic: _independent_hits(document, words, bag) for topic, words in vocabularies.items()}
    most = max(hits.values())
    return tuple(sorted(topic for topic, n in hits.items() if n == most)) if most else ()


def _newts(split):
    return ctrlkit.get_dataset("newts", path=str(shared_file("newts/NEWTS_test_600.csv"))).load(split)


def _passali_rows():
    with open(shared_file("passali/sample_with_tags.csv"), newline="", encoding="utf-8") as file:
        return list(csv.reader(file))  # no header: tagged text, summary, topic


def _write_seed_file(path, rows):
    """The authors' topic seed layout (one column per topic, its words below the header), with
    each topic's words taken from what the released sample tags for it."""
    words = {}
    for text, _, topic in rows:
        words.setdefault(topic, set()).update(word.lower() for word in TAGGED.findall(text))
    topics = sorted(words)
    columns = [sorted(words[topic]) for topic in topics]
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(topics)
        for i in range(max(map(len, columns))):
            writer.writerow([column[i] if i < len(column) else "" for column in columns])
    return path


def test_hits_are_a_count_of_the_bag_of_words_in_each_vocabulary():
    # by hand: markets, market (lemma and form) and Shares (lemma share); "rallied" is in neither
    assigner = TopicAssigner({"finance": frozenset({"market", "share"}), "sport": frozenset({"rally", "goal"})})
    document = "Shares fell as markets fell; the market rallied."
    assert assigner.hits(document) == {"finance": 3, "sport": 1}  # simplemma: rallied -> rally
    assert assigner.assign(document).topic == "finance"
    assert assigner.assign("A goal, then shares.").topics == ("finance", "sport")  # a tie: no topic
    assert assigner.assign("A goal, then shares.").topic is None
    assert assigner.assign("Nothing here.").topics == ()


def test_hits_equal_an_independent_count_on_newts_articles():
    examples = _newts("train") + _newts("test")
    vocabularies = vocabularies_from_examples(examples).words
    assert len(vocabularies) == 50  # NEWTS's 50 LDA topics, each with its listed top words
    assigner = TopicAssigner(vocabularies)
    documents = list(dict.fromkeys(example.document for example in examples))[:6]
    for document in documents:
        bag = _independent_bag(document)
        expected = {topic: _independent_hits(document, words, bag) for topic, words in vocabularies.items()}
        assert assigner.hits(document) == expected
        assert sum(expected.values()) > 0


def test_assignment_on_newts_against_its_gold_topics():
    """Each distinct NEWTS article against its own two gold LDA topics: the figures (574 articles;
    36 ties; 473 of the other 538 on one of their gold topics) are computed independently too."""
    examples = _newts("train") + _newts("test")
    vocabularies = vocabularies_from_examples(examples).words
    gold = {}
    for example in examples:
        gold.setdefault(example.document, set()).add(example.controls["topic"])
    outcome = Counter()
    for document, topics in gold.items():
        assigned = _independent_assignment(document, vocabularies)
        outcome["tie" if len(assigned) > 1 else "gold" if assigned[0] in topics else "other"] += 1
    assert outcome == {"gold": 473, "other": 65, "tie": 36}

    counts = [mix_topics(_newts(split), seed=0, vocabularies=vocabularies_from_examples(_newts(split))).assignment
              for split in ("train", "test")]
    assert sum(c.articles for c in counts) == len(gold) == 574
    assert sum(c.multi_topic for c in counts) == outcome["tie"]
    assert sum(c.differs_from_gold for c in counts) == outcome["other"]
    assert sum(c.assigned for c in counts) == outcome["gold"]
    assert sum(c.no_hit for c in counts) == 0


def test_the_authors_tags_are_the_vocabulary_hits_of_the_row_topic(tmp_path):
    """In the authors' released sample every tagged word is a hit of the row's topic under our
    rule, and few untagged words are (their WordNet lemmas are case-sensitive, so "States" or
    "Soldiers" go untagged where simplemma matches them). The vocabularies come from these very
    tags, so this checks the matching rule, not how the authors chose their words."""
    rows = _passali_rows()
    vocabularies = read_vocabularies(_write_seed_file(tmp_path / "seeds.csv", rows))
    assert len(vocabularies.words) == 16 and len(rows) == 30
    assigner = TopicAssigner(vocabularies.words)
    ours = tags = untagged_hits = words = 0
    for text, _, topic in rows:
        vocabulary = vocabularies.words[topic]
        for token in text.split():  # the sample is tokenized: one token per space
            word = token.replace("[TAG]", "")
            if not re.fullmatch(r"\w+", word):
                continue
            words += 1
            hit = word.lower() in vocabulary or simplemma.lemmatize(word.lower(), lang="en").lower() in vocabulary
            if token.startswith("[TAG]"):
                assert hit, (topic, word)
            else:
                untagged_hits += hit
        ours += assigner.hits(text.replace("[TAG]", ""))[topic]
        tags += len(TAGGED.findall(text))
    assert (tags, ours, untagged_hits) == (1660, 1720, 23)
    assert untagged_hits < 0.01 * words


def test_each_released_super_article_is_assigned_one_of_its_two_topics_mostly(tmp_path):
    """The sample holds 15 super-articles, each twice (once per topic: the same words, the
    sentences in another order); from its words, 12 of them get one of their two topics, as the
    independent assignment says too."""
    rows = _passali_rows()
    vocabularies = read_vocabularies(_write_seed_file(tmp_path / "seeds.csv", rows)).words
    topics_of, document_of = {}, {}
    for text, _, topic in rows:
        document = text.replace("[TAG]", "")
        bag = tuple(sorted(document.split()))
        topics_of.setdefault(bag, set()).add(topic)
        document_of.setdefault(bag, document)
    assert len(topics_of) == 15 and all(len(topics) == 2 for topics in topics_of.values())
    assigner = TopicAssigner(vocabularies)
    agree = 0
    for bag, topics in topics_of.items():
        document = document_of[bag]
        assigned = assigner.assign(document)
        assert tuple(sorted(assigned.topics)) == _independent_assignment(document, vocabularies)
        agree += assigned.topic in topics
    assert agree == 12


def test_unlabelled_cnn_dailymail_articles_are_mixed_by_assigned_topic(tmp_path):
    """The paper's setting: CNN/DailyMail articles with their highlights and no topic, assigned
    one of the released sample's topics from their words (CTRLsum's copy of CNN/DailyMail)."""
    seeds = _write_seed_file(tmp_path / "seeds.csv", _passali_rows())
    vocabularies = read_vocabularies(seeds).words
    out = tmp_path / "mix.jsonl"
    mix = topic_mix(out, "ctrlsum", str(shared_file("ctrlsum")), topics_from="words", vocabulary=seeds)
    examples = ctrlkit.get_dataset("ctrlsum", path=str(shared_file("ctrlsum"))).load("train")
    by_id = {example.id: example for example in examples}
    documents = list(dict.fromkeys(example.document for example in examples))
    independent = {document: _independent_assignment(document, vocabularies) for document in documents}
    counts = mix.assignment
    assert (counts.articles, counts.assigned, counts.multi_topic, counts.no_hit, counts.differs_from_gold) == \
           (len(documents), sum(len(t) == 1 for t in independent.values()),
            sum(len(t) > 1 for t in independent.values()), 0, 0)
    assert (counts.articles, counts.assigned) == (99, 94)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == mix.rows() and len(rows) == 2 * len(mix.pairs)
    for a_row, b_row in zip(rows[::2], rows[1::2]):
        first, second = (by_id[i] for i in a_row["meta"]["articles"])
        s, t = a_row["meta"]["topics"]
        assert a_row["meta"]["topics_from"] == "words" and s != t
        assert (independent[first.document], independent[second.document]) == ((s,), (t,))
        assert (a_row["references"], b_row["references"]) == ([first.references[0]], [second.references[0]])
        assert (a_row["controls"], b_row["controls"]) == ({"topic": s}, {"topic": t})


def test_what_is_dropped_and_which_reference_is_kept():
    vocabularies = TopicVocabularies({"a": frozenset({"apple"}), "b": frozenset({"bread"}),
                                      "c": frozenset({"cheese"})}, "a test")

    def article(name, text, topics):
        return [Example(id=f"{name}:{t}", document=text, references=[f"{name} on {t}"], controls={"topic": t})
                for t in topics]

    examples = (article("x", "Apple and apple.", ["b", "a"])  # assigned a, a gold topic: its reference
                + article("y", "Bread, bread and cheese.", ["c"])  # assigned b, not gold: dropped
                + article("z", "Apple and bread.", ["a"])  # a tie: dropped
                + [Example(id="w", document="Cheese.", references=["w's highlights"])])  # no gold topic
    mix = mix_topics(examples, seed=0, vocabularies=vocabularies)
    c = mix.assignment
    assert (c.articles, c.assigned, c.differs_from_gold, c.multi_topic, c.no_hit) == (4, 2, 1, 1, 0)
    assert [(row["id"], row["controls"], row["references"]) for row in mix.rows()] in (
        [("mix-1-a", {"topic": "a"}, ["x on a"]), ("mix-1-b", {"topic": "c"}, ["w's highlights"])],
        [("mix-1-a", {"topic": "c"}, ["w's highlights"]), ("mix-1-b", {"topic": "a"}, ["x on a"])])
    with pytest.raises(ctrlkit.DatasetError, match="^no two articles are on different topics after assigning "
                                                   "topics from words"):
        mix_topics(article("x", "Apple.", ["a"]) + article("y", "Apple pie.", ["a"]), vocabularies=vocabularies)


def test_gold_topics_stay_the_default_and_the_choice_is_recorded(tmp_path):
    csv_path = str(shared_file("newts/NEWTS_test_600.csv"))
    gold = topic_mix(tmp_path / "gold.jsonl", "newts", csv_path)
    assert gold.assignment is None and gold.rows() == build_topic_mix(_newts("train"))
    assert {row["meta"]["topics_from"] for row in gold.rows()} == {"gold"}

    out = tmp_path / "words.jsonl"
    result = invoke_ctrlkit("data", "topic-mix", "-d", "newts", "--data", csv_path, "--topics-from", "words",
                            "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "topics from words (49 topic vocabularies from the examples' topic_words): 256 articles, 210 assigned one "
        "topic; dropped: 19 multi-topic (a tie), 27 with a topic other than gold, 0 without a vocabulary word",
        f"210 articles, 210 used in 105 pairs: 210 examples in {out}"]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {row["meta"]["topics_from"] for row in rows} == {"words"}


def test_errors_name_the_option_or_the_file(tmp_path):
    out = str(tmp_path / "mix.jsonl")
    seeds = tmp_path / "seeds.csv"
    seeds.write_text("finance\nmarket\n")

    def error(*args):
        result = invoke_ctrlkit("data", "topic-mix", "-o", out, *args)
        assert result.returncode == 1
        return result.stderr

    assert error("--vocabulary", str(seeds)) == "Error: --vocabulary applies only with --topics-from words\n"
    assert error("--split", "test", "--topics-from", "words") == (
        "Error: dataset 'sample': its examples carry no 'topic_words' to assign topics from; give the topic "
        "vocabularies with --vocabulary FILE (a CSV, one column of words per topic)\n")
    seeds.write_text("finance,football\nmarket,goal\n")
    assert error("--split", "test", "--topics-from", "words", "--vocabulary", str(seeds)) == (
        f"Error: {seeds}: none of its topics ('finance', 'football') is a topic of the examples ('business', "
        "'environment', 'health', ... 6 in all)\n")
    for text, message in (("business,\nmarket,goal\n", "column 2 has no topic name in the header"),
                          ("a,a\nx,y\n", "topic 'a' names two columns"),
                          ("a,b\nx,\n", "topic 'b' has no words"),
                          ("", "no header row naming the topics (one column per topic)")):
        seeds.write_text(text)
        assert error("--split", "test", "--topics-from", "words", "--vocabulary", str(seeds)) == \
               f"Error: {seeds}: {message}\n"
    assert error("--split", "test", "--topics-from", "words", "--vocabulary", str(tmp_path / "none.csv")) == \
           f"Error: {tmp_path / 'none.csv'}: no such file (topic vocabularies)\n"
    assert not (tmp_path / "mix.jsonl").exists()
    with pytest.raises(ctrlkit.OptionError, match="^topics_from: 'labels' is not one of gold, words$"):
        topic_mix(out, split="test", topics_from="labels")


def test_a_vocabulary_file_is_read_a_row_at_a_time(tmp_path):
    import tracemalloc

    def peak(rows):
        path = tmp_path / f"seeds{rows}.csv"
        path.write_text("sport,politics\n" + "ball,vote\n" * rows)
        tracemalloc.start()
        try:
            read_vocabularies(path)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    # before: the whole file was held as rows (a 21 MB file peaked at 510 MB); what is kept is the words
    small, large = peak(20000), peak(160000)
    assert large < 1.5 * small, (small, large)
