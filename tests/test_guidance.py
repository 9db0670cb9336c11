import json

import pytest

import ctrlkit
from ctrlkit import Example, ModelInput
from ctrlkit.text import sentences
from ctrlkit_controllers.guidance import aliases, entity_sentences

SAMPLE = ctrlkit.get_dataset("sample").load("test")


def _document(article_id):
    return next(e.document for e in SAMPLE if e.meta["article"] == article_id)


def test_entity_sentences_match_the_full_name_and_the_surname():
    document = _document("sample-001")
    assert aliases("Anita Valdez") == ["Anita Valdez", "Valdez"] and aliases("Valdez") == ["Valdez"]
    found = entity_sentences(document, "Anita Valdez")
    expected = [s for s in sentences(document) if "Valdez" in s]
    assert found == expected and len(found) >= 2
    assert any("Anita Valdez" not in s for s in found)  # a surname-only mention is found too
    assert entity_sentences(document, "valdez") == expected  # case does not matter
    assert entity_sentences("Obamacare passed. Obama spoke.", "Barack Obama") == ["Obama spoke."]


def test_guidance_sources():
    example = Example("x", "Ms Stroud spoke. The match ended. Stroud left.",
                      controls={"entity": "Delia Stroud", "keywords": ["match", "goal"], "guidance": "Given."})
    source = ModelInput(source=example.document)
    assert ctrlkit.get_controller("guidance").apply(example, source).guidance == "Ms Stroud spoke. Stroud left."
    assert ctrlkit.get_controller("guidance", source="keywords").apply(example, source).guidance == "match, goal"
    assert ctrlkit.get_controller("guidance", source="given").apply(example, source).guidance == "Given."
    absent = Example("y", "Nobody here.", controls={"entity": "Delia Stroud"})
    assert ctrlkit.get_controller("guidance").apply(absent, ModelInput(source=absent.document)).guidance == \
        "Delia Stroud"
    assert ctrlkit.get_controller("guidance", source="given").reads == ("guidance",)


def _entity_dataset(path):
    rows = [
        {"id": "a", "document": _document("sample-001"), "references": ["Valdez coached the Rovers."],
         "controls": {"entity": "Anita Valdez"}},
        {"id": "b", "document": _document("sample-001"), "references": ["Stroud called a vote."],
         "controls": {"entity": "Delia Stroud"}},
        {"id": "c", "document": _document("sample-002"), "references": ["A summary."],
         "controls": {"entity": "nobody in particular"}},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows


def test_lead3_ent_is_the_first_three_sentences_that_mention_the_entity(tmp_path):
    rows = _entity_dataset(tmp_path / "entities.jsonl")
    result = ctrlkit.run(dataset="jsonl", data=str(tmp_path / "entities.jsonl"), controller="guidance",
                         metrics=["rouge"], baseline=None, options={"extractive": {  # the README's recipe
                             "guidance": "restrict", "selection": "lead", "max_sentences": 3, "max_words": 10000}})
    for row, sample in zip(rows, result.samples):
        name = row["controls"]["entity"]
        mentions = [s for s in sentences(row["document"]) if any(a.lower() in s.lower() for a in aliases(name))]
        lead3 = (mentions or list(sentences(row["document"])))[:3]
        assert sample["prediction"] == " ".join(lead3)


def test_guidance_needs_an_entity_in_the_dataset():
    with pytest.raises(ctrlkit.ConfigurationError, match="'guidance' reads control 'entity', but example"):
        ctrlkit.run(controller="guidance", metrics=["rouge"])


def test_embed_with_openai_is_refused_before_any_request():
    with pytest.raises(ctrlkit.ConfigurationError, match="controller 'embed' needs backbone capability "
                                                         "input_embeddings, which backbone 'openai:m' lacks"):
        ctrlkit.run(controller="embed", backbone="openai:m", metrics=["rouge"])


def test_train_with_guidance_reload_and_run(tmp_path):
    pytest.importorskip("transformers")
    from click.testing import CliRunner

    import tiny_models
    from ctrlkit.cli import cli

    _entity_dataset(tmp_path / "entities.jsonl")
    base = tiny_models.build_bart(tmp_path / "bart")
    common = ["-d", "jsonl", "--data", str(tmp_path / "entities.jsonl"), "-c", "guidance"]
    trained = CliRunner().invoke(cli, ["train", "-b", f"hf:{base}", "-o", str(tmp_path / "m"), "--max-steps", "2",
                                       "--batch-size", "2", *common])
    assert trained.exit_code == 0, trained.output
    ran = CliRunner().invoke(cli, ["run", "-b", f"hf:{tmp_path / 'm'}", "-m", "rouge", "--no-baseline",
                                   "--set", "hf.max_new_tokens=6", "--set", "hf.num_beams=1",
                                   "-o", str(tmp_path / "run"), *common])
    assert ran.exit_code == 0, ran.output
    assert json.loads((tmp_path / "run" / "results.json").read_text())["n_examples"] == 3
    backbone = ctrlkit.get_backbone(f"hf:{tmp_path / 'm'}")
    guided = ctrlkit.get_controller("guidance").apply(
        Example("a", "Valdez spoke. Rain fell.", controls={"entity": "Anita Valdez"}),
        ModelInput(source="Valdez spoke. Rain fell."))
    assert backbone.texts([guided]) == ["Valdez spoke. <sep> Valdez spoke. Rain fell."]
