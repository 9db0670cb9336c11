import json

import pytest

import ctrlkit
from ctrlkit import Example, ModelInput
from ctrlkit.text import sentences
from ctrlkit.testing import check_controller
from ctrlkit_controllers.guidance import aliases, entity_sentences, oracle_sentences

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
    named = ctrlkit.get_controller("guidance", source="name")
    assert named.reads == ("entity",) and named.apply(example, source).guidance == "Delia Stroud"


def test_entity_guidance_follows_the_alias_rule():
    document = "Bank of America reported profit. America voted on Tuesday. Several nations met. Obama spoke."
    guidance = ctrlkit.get_controller("guidance")

    def guided(**controls):
        return guidance.apply(Example("x", document, controls=controls), ModelInput(source=document)).guidance

    assert guided(entity="Bank of America") == "Bank of America reported profit."
    assert guided(entity="United Nations") == "United Nations"  # no sentence: the name itself
    assert guided(entity="Barack Obama") == "Obama spoke."
    assert guided(entity="Bank of America", aliases="America") == \
        "Bank of America reported profit. America voted on Tuesday."
    assert guided(entity="Barack Obama", aliases=[]) == "Barack Obama"  # an explicit empty list: no surname
    assert entity_sentences(document, "Barack Obama", ["Bank"]) == ["Bank of America reported profit."]


ORACLE_DOCUMENT = ("Maria Lopez was elected mayor on Tuesday. Turnout was the highest in two decades. "
                   "Lopez promised to fix the city's roads. Her opponent conceded before midnight. "
                   "The council will meet next week. Lopez named a transition team. Markets were calm.")


def test_oracle_sources_give_the_documents_matching_sentences_in_document_order():
    split = sentences(ORACLE_DOCUMENT)
    example = Example("x", ORACLE_DOCUMENT, controls={
        "entity": "Maria Lopez",
        "salient_sentences": [split[5], "  Lopez   promised to fix the city's roads. ", split[1]],
        "summary_sentences": [split[3]],
    })
    source = ModelInput(source=ORACLE_DOCUMENT)
    salient = ctrlkit.get_controller("guidance", source="salient")
    assert salient.reads == ("salient_sentences",)
    assert salient.apply(example, source).guidance == " ".join([split[1], split[2], split[5]])
    summary = ctrlkit.get_controller("guidance", source="summary_sentences")
    assert summary.reads == ("summary_sentences",) and summary.apply(example, source).guidance == split[3]
    check_controller(salient, examples=[example])
    check_controller(summary, examples=[example])


def test_oracle_sentences_tolerate_another_sentence_splitter():
    split = sentences(ORACLE_DOCUMENT)
    merged = split[0] + " " + split[1]  # the annotators' one sentence is two of ours
    assert oracle_sentences(ORACLE_DOCUMENT, [merged]) == [split[0], split[1]]
    fragment = "promised to fix the city's roads"  # one of theirs is part of one of ours
    assert oracle_sentences(ORACLE_DOCUMENT, [fragment]) == [split[2]]
    assert oracle_sentences(ORACLE_DOCUMENT, ["Markets"]) == []  # too short to match inside another
    absent = Example("y", ORACLE_DOCUMENT, controls={"salient_sentences": ["A sentence from elsewhere."]})
    assert ctrlkit.get_controller("guidance", source="salient").apply(
        absent, ModelInput(source=ORACLE_DOCUMENT)).guidance == "A sentence from elsewhere."


def test_oracle_lead3_ent_runs_on_entsum_annotations(tmp_path):
    split = sentences(ORACLE_DOCUMENT)
    second = "Rain fell on Monday. Jon Park opened a bakery. Park hired four workers. Sales were slow. Park smiled."
    lines = [  # two annotators of one (document, entity), the second giving indices; a line without them
        {"doc_id": "d1", "entity": "Maria Lopez", "summary": "Lopez won and named a team.",
         "salient_sentences": [split[5], split[4]], "summary_sentences": [[split[5]], [split[2]]]},
        {"doc_id": "d1", "entity": "Maria Lopez", "summary": "Lopez was elected.", "salient_sentences": [[1, 5]]},
        {"doc_id": "d2", "entity": "Jon Park", "summary": "Park opened a bakery."},
    ]
    (tmp_path / "nyt_annotated_all_annotation.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (tmp_path / "texts.jsonl").write_text(json.dumps({"doc_id": "d1", "text": ORACLE_DOCUMENT}) + "\n"
                                          + json.dumps({"doc_id": "d2", "text": second}) + "\n")
    lead3 = {"guidance": "restrict", "selection": "lead", "max_sentences": 3, "max_words": 10000}

    def run(source):
        return ctrlkit.run(dataset="entsum", data=str(tmp_path), controller="guidance", metrics=["rouge"],
                           baseline=None, options={"entsum": {"texts": str(tmp_path / "texts.jsonl")},
                                                   "guidance": {"source": source}, "extractive": lead3})

    # the oracle, computed here: the union of both annotators' salient sentences, in document order
    oracle = [s for s in split if s in {split[5], split[4], split[1]}][:3]
    predictions = {sample["id"]: sample["prediction"] for sample in run("salient").samples}
    assert predictions["d1:Maria Lopez"] == " ".join(oracle) == " ".join([split[1], split[4], split[5]])
    assert predictions["d2:Jon Park"] == " ".join(sentences(second)[:3])  # no oracle: left uncontrolled
    summary = {sample["id"]: sample["prediction"] for sample in run("summary_sentences").samples}
    assert summary["d1:Maria Lopez"] == " ".join([split[2], split[5]])
    entity = {sample["id"]: sample["prediction"] for sample in run("entity").samples}  # plain Lead3-ent differs
    assert entity["d1:Maria Lopez"] == " ".join([split[0], split[2], split[5]]) != predictions["d1:Maria Lopez"]
    assert entity["d2:Jon Park"] == " ".join(sentences(second)[1:3] + sentences(second)[4:5])


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
                         metrics=["rouge"], baseline=None, options={"extractive": {  # the docs' Lead3-ent
                             "guidance": "restrict", "selection": "lead", "max_sentences": 3, "max_words": 10000}})
    for row, sample in zip(rows, result.samples):
        name = row["controls"]["entity"]
        mentions = [s for s in sentences(row["document"]) if any(a.lower() in s.lower() for a in aliases(name))]
        lead3 = (mentions or list(sentences(row["document"])))[:3]
        assert sample["prediction"] == " ".join(lead3)


def test_guidance_needs_an_entity_in_the_dataset():
    with pytest.raises(ctrlkit.ConfigurationError, match="'guidance' reads control 'entity', but (no )?example"):
        ctrlkit.run(controller="guidance", metrics=["rouge"])


def test_embed_with_openai_is_refused_before_any_request():
    with pytest.raises(ctrlkit.ConfigurationError, match="controller 'embed' needs backbone capability "
                                                         "input_embeddings, which backbone 'openai:m' lacks"):
        ctrlkit.run(controller="embed", backbone="openai:m", metrics=["rouge"])


def test_train_with_guidance_reload_and_run(tmp_path):
    pytest.importorskip("transformers")
    from click.testing import CliRunner

    from helpers import tiny_models
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
