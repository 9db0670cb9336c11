"""``ctrlkit train --holdout-topics`` on a tiny BART: the held-out topics' examples are left out
(counted here from the data files themselves), the model's folder records them, and a run of the
model says which of its examples request a topic the model never saw."""

import csv
import json
import logging

import pytest

pytest.importorskip("torch", reason="training needs torch")
pytest.importorskip("transformers", reason="training needs transformers")

from click.testing import CliRunner  # noqa: E402

import ctrlkit  # noqa: E402
from ctrlkit.cli import cli  # noqa: E402
from ctrlkit.training.trainer import train  # noqa: E402

from helpers import ROOT, shared_file  # noqa: E402

SAMPLE = ROOT / "plugins" / "datasets" / "ctrlkit_datasets" / "data" / "sample.jsonl"
FAST = {"hf": {"max_new_tokens": 4, "num_beams": 1}}


def _sample_examples_of(topic: str) -> int:
    """Examples of ``topic`` in the bundled sample, from its file: one per topic an article lists."""
    articles = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    return sum(topic in article["topics"] for article in articles)


def test_holdout_leaves_the_topic_out_of_training_and_eval_and_the_model_records_it(tiny_bart, tmp_path, caplog):
    out = tmp_path / "model"
    trained = CliRunner().invoke(cli, ["train", "-b", f"hf:{tiny_bart}", "-c", "prepend", "--split", "test",
                                       "--eval-split", "test", "--holdout-topics", "sports", "--max-steps", "1",
                                       "--batch-size", "8", "-o", str(out)])
    assert trained.exit_code == 0, trained.output
    sports = _sample_examples_of("sports")
    record = json.loads((out / "training.json").read_text())
    assert sports > 0 and record["n_held_out"] == {"train": sports, "eval": sports}
    assert record["n_pairs"] == 120 - sports and record["config"]["holdout_topics"] == ["sports"]
    assert json.loads((out / "ctrlkit_controller.json").read_text())["holdout_topics"] == ["sports"]

    unseen = ctrlkit.run(backbone=f"hf:{out}", controller="prepend", only_topics="sports", limit=3,
                         metrics=["stas"], baseline=None, options=FAST)
    assert unseen.results["model_holdout"] == {"topics": ["sports"], "n_examples": 3}
    assert {s["controls"]["topic"] for s in unseen.samples} == {"sports"}
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        mixed = ctrlkit.run(backbone=f"hf:{out}", controller="prepend", limit=6, metrics=["stas"], baseline=None,
                            options=FAST)
    held = sum(s["controls"]["topic"] == "sports" for s in mixed.samples)
    assert mixed.results["model_holdout"] == {"topics": ["sports"], "n_examples": held}
    assert f"held out; {held} of the 6 examples request one of them" in caplog.text


def test_an_unknown_held_out_topic_is_refused_before_training(tiny_bart, tmp_path):
    with pytest.raises(ctrlkit.ConfigurationError,
                       match="holdout_topics: topic 'hockey' matches no example's topic or topic_id in dataset "
                             "'sample', split 'test' \\(known topics: "):
        train(backbone=f"hf:{tiny_bart}", out=str(tmp_path / "m"), split="test", holdout_topics="sports,hockey",
              max_steps=1)
    assert not (tmp_path / "m").exists()


def test_holdout_on_newts_removes_exactly_the_rows_of_those_topic_ids(tiny_bart, tmp_path):
    csv_file = shared_file("newts/NEWTS_test_600.csv")
    folder = tmp_path / "newts"
    folder.mkdir()
    (folder / csv_file.name).symlink_to(csv_file)  # the official test file: split 'test' is every row
    with open(csv_file, encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file))
    held = {"115", "152"}
    removed = sum(row[f"tid{k}"] in held for row in rows for k in "12")
    record = train(backbone=f"hf:{tiny_bart}", out=str(tmp_path / "m"), dataset="newts", data=str(folder),
                   split="test", holdout_topics=sorted(held), max_steps=1, batch_size=2)
    assert removed > 0 and record["n_held_out"] == {"train": removed, "eval": 0}
    assert record["n_pairs"] == 2 * len(rows) - removed  # one reference per remaining example


def test_holding_out_every_topic_is_refused_in_one_line_naming_the_option(tiny_bart, tmp_path):
    articles = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    every = sorted({topic for article in articles for topic in article["topics"]})
    refused = CliRunner().invoke(cli, ["train", "-b", f"hf:{tiny_bart}", "--split", "test", "--holdout-topics",
                                       ",".join(every), "--max-steps", "1", "-o", str(tmp_path / "m")])
    assert refused.exit_code != 0
    assert refused.output.strip() == (
        f"Error: holdout_topics: every example of dataset 'sample', split 'test' requests a held-out topic "
        f"({', '.join(every)}); nothing is left to train on")
    assert not (tmp_path / "m").exists()
