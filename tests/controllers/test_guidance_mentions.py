"""The guidance controller's option ``mentions`` on real news articles, and through it Lead3-ent
(guidance with ``source=entity`` before the extractive backbone taking the first three sentences),
in a run and in the ``entsum`` recipe; what spaCy finds is computed here from its own ``doc.ents``."""

import json

import pytest

import ctrlkit
from ctrlkit import Example, ModelInput
from ctrlkit.testing import check_controller
from ctrlkit.sweeps.sweep import sweep
from ctrlkit.text import sentences
from helpers.english_ner import news_articles, parsed, people, sentences_naming

LEAD3 = {"guidance": "restrict", "selection": "lead", "max_sentences": 3, "max_words": 10000}


def _two_word_people(document):
    return sorted({span for doc in parsed(sentences(document)) for span in people(doc)
                   if len(span.split()) == 2 and all(word.isalpha() for word in span.split())})


def _with_pronouns(split, entity):
    """``sentences_naming`` and, computed here from spaCy's entities, each sentence whose first word is
    He or She and that has no PERSON entity, after a sentence whose PERSON entities are all the entity
    (its full name or last name)."""
    naming, last, found = set(sentences_naming(split, entity)), [], []
    for sentence, doc in zip(split, parsed(split)):
        pronoun = sentence.split()[0] in ("He", "She") and not people(doc)
        if sentence in naming or (pronoun and last and all(span in (entity, entity.split()[-1]) for span in last)):
            found.append(sentence)
        last = people(doc) or last
    return found


def test_guidance_gives_the_sentences_spacy_names_the_entity_in():
    guidance = ctrlkit.get_controller("guidance", mentions="spacy")
    checked = 0
    for document in news_articles(4):
        split = sentences(document)
        for entity in _two_word_people(document):
            example = Example("x", document, controls={"entity": entity})
            expected = " ".join(sentences_naming(split, entity)) or entity
            assert guidance.apply(example, ModelInput(source=document)).guidance == expected, entity
            checked += 1
    assert checked >= 10


def _articles_with_people(count):
    rows = []
    for index, document in enumerate(news_articles(count)):
        for entity in _two_word_people(document):
            rows.append({"id": f"{index}:{entity}", "document": document, "references": ["-"],
                         "controls": {"entity": entity}})
    return rows


def test_lead3_ent_takes_the_first_three_sentences_spacy_finds(tmp_path):
    rows = _articles_with_people(3)
    data = tmp_path / "entities.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    for mentions, expected_of in (("spacy", sentences_naming), ("spacy-pronouns", _with_pronouns)):
        result = ctrlkit.run(dataset="jsonl", data=str(data), controller="guidance", metrics=["entity"],
                             baseline=None, bootstrap=0, cache=False,
                             options={"guidance": {"mentions": mentions}, "entity": {"mentions": mentions},
                                      "extractive": LEAD3})
        assert result.results["config"]["options"]["guidance"]["mentions"] == mentions
        for row, sample in zip(rows, result.samples):
            split = sentences(row["document"])
            expected = (expected_of(split, row["controls"]["entity"]) or list(split))[:3]
            assert sample["prediction"] == " ".join(expected), (mentions, row["id"])
    he_added = next(s for s in sentences(rows[0]["document"]) if s.startswith("He added"))
    assert len(rows) >= 10
    robin = next(sample["prediction"] for sample in result.samples if sample["id"] == "0:Brice Robin")
    assert he_added in robin  # spacy-pronouns, the last run: "He added" after Brice Robin is named alone


def test_the_entsum_recipe_takes_the_option_for_its_lead3_ent_row(tmp_path):
    document = news_articles(1)[0]
    folder = tmp_path / "entsum"
    folder.mkdir()
    annotation = {"doc_id": "g1", "entity": "Brice Robin", "summary": "Robin saw no video."}
    (folder / "nyt_annotated_all_annotation.jsonl").write_text(json.dumps(annotation) + "\n")
    texts = tmp_path / "texts.jsonl"
    texts.write_text(json.dumps({"doc_id": "g1", "text": document}) + "\n")
    out = tmp_path / "out"
    sweep(recipe="entsum", out=str(out), data=str(folder), controllers=["entity-sentences"], backbones=["lead3"],
          metrics=["rouge"], bootstrap=0, cache=False,
          options={"entsum": {"texts": str(texts)}, "guidance": {"mentions": "spacy-pronouns"}})
    [samples] = list(out.rglob("samples.jsonl"))
    [prediction] = [json.loads(line)["prediction"] for line in samples.read_text().splitlines()]
    assert prediction == " ".join(_with_pronouns(sentences(document), "Brice Robin")[:3])
    assert "He added" in prediction


def test_guidance_asking_for_spacy_without_it_fails_in_one_line(monkeypatch, tmp_path):
    import sys

    from ctrlkit import spacy_pipeline

    spacy_pipeline.forget_pipeline()
    monkeypatch.setitem(sys.modules, "spacy", None)
    try:
        with pytest.raises(ctrlkit.ConfigurationError, match=r"^option guidance.mentions=spacy needs spaCy, which "
                                                             r"is not installed: pip install 'ctrlkit\[ner\]'"):
            ctrlkit.run(dataset="jsonl", data=str(_one_row(tmp_path)), controller="guidance", metrics=["rouge"],
                        baseline=None, cache=False, options={"guidance": {"mentions": "spacy"}})
    finally:
        spacy_pipeline.forget_pipeline()


def _one_row(tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"id": "a", "document": "Tim Cook spoke.", "references": ["-"],
                                "controls": {"entity": "Tim Cook"}}) + "\n")
    return path


@pytest.mark.parametrize("mentions", ["spacy", "spacy-pronouns"])
def test_guidance_passes_the_conformance_kit_with_spacy(mentions):
    examples = [Example(str(index), article, controls={"entity": "Brice Robin"})
                for index, article in enumerate(news_articles(2))]
    parsed(sentences(examples[0].document))  # skips without spaCy
    check_controller(ctrlkit.get_controller("guidance", mentions=mentions), examples=examples)
