"""Passali & Tsoumakas's two topic protocols: zero-shot topics (``train --holdout-topics``, ``run
--only-topics``) and non-oracle topics (``run --topic-source topK``), on a tiny fixture and on the
real NEWTS file, each checked against a count or a computation done here apart from ctrlkit's."""

import csv
import json
import logging

import numpy as np
import pytest
from click.testing import CliRunner

import ctrlkit
from ctrlkit import ConfigurationError, OptionError
from ctrlkit.cli import cli
from ctrlkit.topic_selection import topic_names
from ctrlkit.topics import TopicSpace, load_topic_documents
from helpers import shared_file

TOPIC_DOCUMENTS = {
    "sports": ["The striker scored a goal and the team won the match in the league final.",
               "Fans cheered as the coach praised the players after the championship game."],
    "politics": ["The senate passed the bill after the minister and the party leaders voted.",
                 "Voters elected the mayor; the government and parliament debated the law."],
    "weather": ["Heavy rain and strong wind hit the coast as the storm brought cold temperatures.",
                "Forecasters warned of snow, frost and flooding as the weather turned cold."],
}
TOPIC_IDS = {"sports": 7, "politics": 12, "weather": 30}
# (document, [(gold topic, reference)]); the first document has two gold topics, so two examples
ARTICLES = [
    ("The team won the league final after the striker scored a late goal. The mayor attended the match "
     "and the senate voted on the stadium bill.",
     [("sports", "The team won the final with a late goal."), ("politics", "The senate voted on the stadium bill.")]),
    ("A storm brought heavy rain and snow to the coast. The match was cancelled and players went home.",
     [("weather", "A storm brought rain and snow to the coast.")]),
    ("Parliament debated the law for hours. The minister said the government would win the vote.",
     [("politics", "Parliament debated the law.")]),
    ("Cold wind and frost gripped the town as forecasters warned of flooding. Voters stayed home.",
     [("weather", "Frost and wind gripped the town.")]),
]


@pytest.fixture
def fixture(tmp_path):
    """A JSONL dataset (topic and topic_id controls) and its topics file."""
    data, topics = tmp_path / "data.jsonl", tmp_path / "topics.jsonl"
    with open(topics, "w", encoding="utf-8") as file:
        for topic, texts in TOPIC_DOCUMENTS.items():
            for text in texts:
                file.write(json.dumps({"topic": topic, "text": text}) + "\n")
    with open(data, "w", encoding="utf-8") as file:
        for i, (document, golds) in enumerate(ARTICLES):
            for topic, reference in golds:
                file.write(json.dumps({"id": f"a{i}-{topic}", "document": document, "references": [reference],
                                       "controls": {"topic": topic, "topic_id": TOPIC_IDS[topic]}}) + "\n")
    return {"dataset": "jsonl", "data": str(data), "topics": str(topics)}


def _run(fixture, **kwargs):
    return ctrlkit.run(**fixture, **{"baseline": None, "cache": False, **kwargs})


# --- topic names ---------------------------------------------------------------------------------

def test_topic_names_take_a_comma_separated_string_or_a_list():
    assert topic_names(" 12, sports ,,12") == ["12", "sports"]
    assert topic_names(["snow, weather, cold", "62"]) == ["snow, weather, cold", "62"]  # a list keeps commas
    assert topic_names(None) is None
    with pytest.raises(OptionError, match="only_topics names no topic"):
        topic_names(" , ", "only_topics")
    with pytest.raises(OptionError, match="holdout_topics must be topic names"):
        topic_names(12, "holdout_topics")


# --- run --only-topics ---------------------------------------------------------------------------

def test_only_topics_keeps_exactly_the_examples_named_by_topic_or_topic_id(fixture):
    by_label = _run(fixture, only_topics=["weather"], metrics=["stas"])
    by_id = _run(fixture, only_topics="30", metrics=["stas"])
    expected = [f"a{i}-weather" for i, (_, golds) in enumerate(ARTICLES) if "weather" in dict(golds)]
    assert [s["id"] for s in by_label.samples] == [s["id"] for s in by_id.samples] == expected
    assert by_label.results["config"]["only_topics"] == ["weather"] and by_id.results["config"]["only_topics"] == ["30"]
    total = sum(len(golds) for _, golds in ARTICLES)
    assert by_label.results["n_other_topics"] == total - len(expected)
    both = _run(fixture, only_topics="sports,12", metrics=["stas"])
    assert {s["controls"]["topic"] for s in both.samples} == {"sports", "politics"} and both.results["n_examples"] == 3


def test_only_topics_applies_before_the_limit(fixture):
    result = _run(fixture, only_topics="politics", limit=2, metrics=["stas"])
    assert [s["id"] for s in result.samples] == ["a0-politics", "a2-politics"]


def test_an_unknown_topic_name_is_one_line_naming_it_and_some_known_ones(fixture):
    with pytest.raises(ConfigurationError) as error:
        _run(fixture, only_topics="weather,hockey", metrics=["stas"])
    message = str(error.value)
    assert "\n" not in message and "topic 'hockey' matches no example's topic or topic_id" in message
    assert "known topic_ids: 7, 12, 30" in message


def test_only_topics_on_the_command_line(fixture, tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["run", "-d", "jsonl", "--data", fixture["data"], "--topics", fixture["topics"],
                                      "-m", "stas", "--only-topics", "7", "--no-baseline", "--no-cache", "-o", str(out)])
    assert result.exit_code == 0, result.output
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [s["id"] for s in samples] == ["a0-sports"]


def test_only_topics_on_newts_keeps_the_examples_the_csv_holds_for_those_topics(tmp_path):
    csv_file = shared_file("newts/NEWTS_test_600.csv")
    folder = tmp_path / "newts"
    folder.mkdir()
    (folder / csv_file.name).symlink_to(csv_file)  # the official test file: every row is in split 'test'
    with open(csv_file, encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file))
    chosen = {"115", "217"}
    expected = sum(row[f"tid{k}"] in chosen for row in rows for k in "12")
    result = ctrlkit.run(dataset="newts", data=str(folder), only_topics=sorted(chosen), metrics=["stas"],
                         baseline=None)
    assert expected > 0 and result.results["n_examples"] == expected
    assert result.results["n_other_topics"] == 2 * len(rows) - expected
    assert {s["controls"]["topic_id"] for s in result.samples} == chosen


# --- run --topic-source topK ---------------------------------------------------------------------

def _space(fixture):
    return TopicSpace.fit(load_topic_documents(fixture["topics"]), "tfidf")


def test_top3_requests_each_documents_three_nearest_topics(fixture):
    result = _run(fixture, topic_source="top3", metrics=["stas"])
    space = _space(fixture)
    documents = [document for document, _ in ARTICLES]
    similarities = space.similarities(documents)
    assert result.results["n_examples"] == 3 * len(documents)  # the two examples of a0 count once
    for i, document in enumerate(documents):
        picked = [s for s in result.samples if s["id"].startswith(f"a{i}-")]
        order = np.argsort(-similarities[i], kind="stable")
        assert [s["controls"]["topic"] for s in picked] == [space.topics[j] for j in order[:3]]
        assert [s["topic_pick"]["rank"] for s in picked] == [1, 2, 3]
        assert [s["id"].rsplit("#", 1)[1] for s in picked] == ["rank1", "rank2", "rank3"]
        assert [s["topic_pick"]["similarity"] for s in picked] == pytest.approx(similarities[i][order[:3]])
    assert len({s["id"] for s in result.samples}) == len(result.samples)
    assert result.results["config"]["topic_source"] == "top3"
    assert result.results["topic_picks"]["documents"] == len(documents)


def test_each_output_is_scored_with_stas_against_its_own_topic(fixture):
    result = _run(fixture, controller="prepend", topic_source="top2", metrics=["stas"])
    expected = _space(fixture).stas([s["prediction"] for s in result.samples],
                                    [s["controls"]["topic"] for s in result.samples])
    assert [s["scores"]["stas"]["stas"] for s in result.samples] == pytest.approx(expected)
    assert result.metrics["stas"]["stas"] == pytest.approx(expected.mean())
    for rank in ("1", "2"):
        ranked = [e for s, e in zip(result.samples, expected) if s["topic_pick"]["rank"] == int(rank)]
        assert result.results["topic_picks"]["by_rank"][rank]["metrics"]["stas"]["stas"] == pytest.approx(np.mean(ranked))
    assert "by rank of the picked topic" in result.table()


def test_k_topics_give_k_times_the_examples_of_one_example_per_document(fixture):
    single = _run(fixture, only_topics="weather,sports", metrics=["stas"])  # one example per document here
    assert len({s["id"].split("-")[0] for s in single.samples}) == single.results["n_examples"] == 3
    tripled = _run(fixture, only_topics="weather,sports", topic_source="top3", metrics=["stas"])
    assert tripled.results["n_examples"] == 3 * single.results["n_examples"]


def test_a_picked_topic_is_scored_against_a_reference_only_when_it_is_a_gold_topic(fixture):
    result = _run(fixture, topic_source="top3", metrics=["rouge", "stas"])
    rouge = ctrlkit.get_metric("rouge")
    golds = {f"a{i}": dict(pairs) for i, (_, pairs) in enumerate(ARTICLES)}
    scored = 0
    for sample in result.samples:
        gold = golds[sample["id"].split("-")[0]]
        topic = sample["controls"]["topic"]
        assert sample["topic_pick"]["gold_topics"] == sorted(gold)
        if topic in gold:
            scored += 1
            own = rouge.compute([sample["prediction"]], [{"id": "x", "document": "", "references": [gold[topic]]}])
            assert sample["scores"]["rouge"]["rouge1"] == pytest.approx(own.per_example["rouge1"][0])
            assert sample["controls"]["topic_id"] == TOPIC_IDS[topic]  # the gold example's topic controls
        else:
            assert sample["scores"]["rouge"]["rouge1"] is None and "topic_id" not in sample["controls"]
    assert 0 < scored < len(result.samples)
    assert result.results["scored"] == {"rouge": scored, "stas": len(result.samples)}
    assert result.results["topic_picks"]["with_reference"] == scored
    assert f"(n={scored} of {len(result.samples)})" in result.table()


def test_reference_metrics_are_refused_when_no_picked_topic_has_a_reference(fixture, tmp_path):
    data = tmp_path / "mislabelled.jsonl"  # a weather report whose only gold topic is sports
    data.write_text(json.dumps({"id": "w", "document": ARTICLES[3][0], "references": ["Frost gripped the town."],
                                "controls": {"topic": "sports"}}) + "\n")
    with pytest.raises(ConfigurationError, match="metric 'rouge' needs references, but none of the 1 examples"):
        _run({**fixture, "data": str(data)}, topic_source="top1", metrics=["rouge"])
    assert _run({**fixture, "data": str(data)}, topic_source="top1", metrics=["stas"]).samples[0]["controls"] == {
        "topic": "weather"}


def test_oracle_is_the_default_and_records_no_picks(fixture):
    result = _run(fixture, metrics=["stas"])
    assert result.results["config"]["topic_source"] == "oracle" and result.results["topic_picks"] is None
    assert [s["id"] for s in result.samples] == [f"a{i}-{t}" for i, (_, golds) in enumerate(ARTICLES) for t, _ in golds]
    assert all("topic_pick" not in s for s in result.samples)


@pytest.mark.parametrize("source, says", [("top", "topic source must be 'oracle' or 'topK'"),
                                          ("top0", "topic source must be"), ("Top2", "topic source must be"),
                                          ("top4", "asks for 4 topics per document, but the topic space has 3")])
def test_a_bad_topic_source_is_one_line(fixture, source, says):
    with pytest.raises(ctrlkit.CtrlkitError, match=says):
        _run(fixture, topic_source=source, metrics=["stas"])


def test_topic_source_on_newts_picks_the_nearest_topics_of_each_article(tmp_path):
    csv_file = shared_file("newts/NEWTS_test_600.csv")
    source = ctrlkit.get_dataset("newts", path=str(csv_file))
    result = ctrlkit.run(dataset="newts", data=str(csv_file), topic_source="top2", limit=6, metrics=["stas", "rouge"],
                         baseline=None)
    examples = source.load("test")[:6]
    documents = list(dict.fromkeys(example.document for example in examples))
    assert result.results["n_examples"] == 2 * len(documents)
    space = TopicSpace.fit(source.topic_documents(), "tfidf")
    similarities = space.similarities(documents)
    for i, document in enumerate(documents):
        order = np.argsort(-similarities[i], kind="stable")[:2]
        picked = result.samples[2 * i:2 * i + 2]
        assert [s["controls"]["topic"] for s in picked] == [space.topics[j] for j in order]
        golds = {e.controls["topic"]: e for e in examples if e.document == document}
        for sample in picked:
            gold = golds.get(sample["controls"]["topic"])
            assert (sample["scores"]["rouge"]["rouge1"] is None) == (gold is None)
            if gold is not None:
                assert sample["controls"]["topic_id"] == gold.controls["topic_id"]
    expected = space.stas([s["prediction"] for s in result.samples], [s["controls"]["topic"] for s in result.samples])
    assert [s["scores"]["stas"]["stas"] for s in result.samples] == pytest.approx(expected)


def test_topic_source_on_the_command_line_and_in_a_sweep(fixture, tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["run", "-d", "jsonl", "--data", fixture["data"], "--topics", fixture["topics"],
                                      "-m", "stas", "--topic-source", "top2", "--no-baseline", "--no-cache",
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "requesting the 2 nearest topics of each of 4 documents" in result.output
    recorded = json.loads((out / "results.json").read_text())
    assert recorded["config"]["topic_source"] == "top2" and recorded["n_examples"] == 8
    one = CliRunner().invoke(cli, ["run", "-d", "jsonl", "--data", fixture["data"], "--topics", fixture["topics"],
                                   "-m", "stas", "--topic-source", "top1", "--no-baseline", "-o", str(tmp_path / "one")])
    assert one.exit_code == 0 and "requesting the nearest topic of each of 4 documents" in one.output

    config = tmp_path / "sweep.toml"
    config.write_text(f'controllers = "none"\nmetrics = "stas"\ndatasets = "jsonl"\ndata = "{fixture["data"]}"\n'
                      f'topics = "{fixture["topics"]}"\ntopic_source = "top2"\nonly_topics = ["weather"]\n')
    swept = CliRunner().invoke(cli, ["sweep", "--config", str(config), "-o", str(tmp_path / "sweep")])
    assert swept.exit_code == 0, swept.output
    cell = json.loads(next((tmp_path / "sweep" / "cells").glob("*/results.json")).read_text())
    assert cell["config"]["topic_source"] == "top2" and cell["config"]["only_topics"] == ["weather"]
    assert cell["n_examples"] == 2 * 2  # two weather documents, two topics each
    again = CliRunner().invoke(cli, ["sweep", "--config", str(config), "-o", str(tmp_path / "sweep")])
    assert again.exit_code == 0 and "(1 reused)" in again.output
    changed = CliRunner().invoke(cli, ["sweep", "--config", str(config), "--topic-source", "top1",
                                       "-o", str(tmp_path / "sweep")])
    assert changed.exit_code != 0 and "topic_source" in changed.output


# --- the model's held-out topics, seen by run ----------------------------------------------------

class _Saved(ctrlkit.Backbone):
    """The extractive backbone's output, from a model folder that says it held topics out."""

    name = "held-out-model"
    capabilities = frozenset({"text"})

    def generate(self, inputs):
        return [model_input.source[:80] for model_input in inputs]

    def saved_controller(self):
        return {"controller": "none", "state": {}, "holdout_topics": ["30"]}


class _Plugin:
    @ctrlkit.hookimpl
    def register_backbones(self, register):
        register("held-out-model", _Saved)


def test_a_run_records_the_topics_its_model_held_out_and_warns_when_it_mixes(fixture, throwaway_plugins, caplog):
    throwaway_plugins(_Plugin(), "held-out-test")
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        mixed = _run(fixture, backbone="held-out-model", metrics=["stas"])
    weather = sum(t == "weather" for _, golds in ARTICLES for t, _ in golds)
    assert mixed.results["model_holdout"] == {"topics": ["30"], "n_examples": weather}
    assert f"held out; {weather} of the {mixed.results['n_examples']} examples request one of them" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        unseen = _run(fixture, backbone="held-out-model", metrics=["stas"], only_topics="30")
    assert unseen.results["model_holdout"] == {"topics": ["30"], "n_examples": weather} and "held out" not in caplog.text
    picked = _run(fixture, backbone="held-out-model", metrics=["stas"], topic_source="top1")
    # a picked topic without its topic_id is still known as held out, by its label
    assert picked.results["model_holdout"]["n_examples"] == sum(s["controls"]["topic"] == "weather"
                                                                for s in picked.samples)


class _Capture(ctrlkit.Controller):
    """Keeps the train examples it is fitted on."""

    name = "capture"
    needs_train_examples = True

    def fit(self, train_examples, topic_space):
        self.seen = list(train_examples)

    def apply(self, example, model_input):
        return model_input


def test_a_controller_fits_on_the_train_examples_of_topics_not_held_out():
    from ctrlkit.engine.generation import fit_or_restore

    source = ctrlkit.get_dataset("newts", path=str(shared_file("newts/NEWTS_test_600.csv")))
    train = source.load("train")
    controller = _Capture()
    fit_or_restore(controller, ctrlkit.get_backbone("extractive"), source, None, 0, ["115", "152"])
    assert [e.id for e in controller.seen] == [e.id for e in train if e.controls["topic_id"] not in ("115", "152")]
    assert len(controller.seen) < len(train)


def test_a_holdout_that_leaves_a_split_empty_is_refused_naming_the_split():
    from ctrlkit.topic_selection import check_something_left, drop_topics

    examples = [ctrlkit.Example(id=str(i), document="d", references=["r"], controls={"topic": topic})
                for i, topic in enumerate(["sports", "weather", "sports"])]
    check_something_left(["sports"], examples, drop_topics(examples, ["sports"]), "split 'dev'", "evaluate on")
    check_something_left(["sports"], [], [], "split 'dev'", "evaluate on")  # an empty split is another error's
    with pytest.raises(ConfigurationError, match="^holdout_topics: every example of split 'dev' requests a held-out "
                                                 "topic \\(sports, weather\\); nothing is left to evaluate on$"):
        check_something_left(["sports", "weather"], examples, drop_topics(examples, ["sports", "weather"]),
                             "split 'dev'", "evaluate on")


def test_an_unknown_name_beside_topics_holding_commas_is_told_how_to_name_them():
    from ctrlkit.topic_selection import keep_topics

    examples = [ctrlkit.Example(id="1", document="d", references=["r"], controls={"topic": "Économie"}),
                ctrlkit.Example(id="2", document="e", references=["r"], controls={"topic": "体育, sport"})]
    assert [e.id for e in keep_topics(examples, topic_names(["体育, sport"]), "dataset 'jsonl'")] == ["2"]
    assert [e.id for e in keep_topics(examples, topic_names("Économie"), "dataset 'jsonl'")] == ["1"]
    with pytest.raises(ConfigurationError) as refused:
        keep_topics(examples, topic_names("体育, sport"), "dataset 'jsonl'")  # the command line's split
    assert str(refused.value) == (
        "only_topics: topic '体育' matches no example's topic or topic_id in dataset 'jsonl' (known topics: "
        "'Économie', '体育, sport'); a name holding a comma is split on the command line: name it by its topic_id, "
        "or give a list in Python or a sweep file")
