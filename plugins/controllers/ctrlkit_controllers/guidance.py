"""The guidance controller (GSum, as EntSUM uses it for entities): a guidance signal beside the
document rather than inside it.

- ``entity``: the document's sentences that mention the requested entity, by the alias rule of
  ``ctrlkit.entities`` (the entity metric's too): the full name; for a person-like name also
  the surname ("Barack Obama" also matches "Obama", "Bank of America" never "America"); or,
  when the example has an ``aliases`` control, the full name and those names only. When no
  sentence mentions it, the name itself. ``mentions=spacy`` corrects the rule with spaCy's
  named entities and ``spacy-pronouns`` adds "He said ..." sentences (``ctrlkit.entity_mentions``).
- ``name``: the requested entity's name alone (EntSUM's GSum with the entity as its guidance).
- ``keywords``: the requested keywords, comma-separated.
- ``given``: sentences the dataset supplies in the ``guidance`` control.
- ``salient`` / ``summary_sentences``: the oracle sentences an annotated dataset supplies in the
  ``salient_sentences`` / ``summary_sentences`` control (EntSUM's annotations): the document's
  sentences that match them, in document order, or the given sentences themselves when none
  matches (``oracle_sentences``).

``hf`` reads ``guidance <sep> document``; ``extractive`` boosts sentences like the guidance, or
with ``extractive.guidance=restrict`` chooses only among them; with ``selection=lead`` and
``max_sentences=3`` (and a word budget that does not bind) that is the Lead3-ent baseline, and
with ``source=salient`` (or ``summary_sentences``) its oracle upper bound.
"""

from ctrlkit import ConfigurationError, Controller, Option
from ctrlkit.plugin_api import MENTION_FINDERS, MentionFinder, aliases, given_aliases, sentences

__all__ = ["Guidance", "aliases", "entity_sentences", "oracle_sentences"]  # aliases: importable from here too

_READS = {"entity": "entity", "name": "entity", "keywords": "keywords", "given": "guidance",
          "salient": "salient_sentences", "summary_sentences": "summary_sentences"}
_ORACLES = ("salient", "summary_sentences")
_CONTAINED_MIN_WORDS = 4


class Guidance(Controller):
    """Puts a guidance signal beside the document: entity sentences, keywords, given or oracle sentences."""

    requires = frozenset({"guidance"})
    options = (Option("source", str, "entity", "which control becomes the guidance: entity (the sentences naming "
                                               "it), name (the entity's name alone), keywords, given (the "
                                               "'guidance' control), salient or "
                                               "summary_sentences (those oracle sentences)", choices=tuple(_READS)),
               Option("mentions", str, "rule", "with source=entity, how a sentence is found to mention the "
                                               "entity: rule (full name, or a person-like name's surname, by "
                                               "word lists), spacy (the rule corrected by spaCy's entities; the "
                                               "ner extra) or spacy-pronouns (also a sentence opening with "
                                               "He/She after one naming the entity alone)",
                      choices=MENTION_FINDERS))

    def __init__(self, **options):
        super().__init__(**options)
        self.reads = (_READS[self.options["source"]],)

    def prepare(self, backbone):
        if self.options["source"] == "entity":
            # a missing spaCy fails before any work; the pipeline loaded is recorded with the options
            self.file_digests = {**self.file_digests, **self._finder().load()}

    def apply(self, example, model_input):
        value = example.controls[self.reads[0]]
        source = self.options["source"]
        if source == "entity":
            try:
                given = given_aliases(example.controls.get("aliases"))
            except ConfigurationError as exc:
                raise ConfigurationError(f"controller '{self.name}', example '{example.id}': {exc}") from None
            guidance = " ".join(entity_sentences(model_input.source, str(value), given, self._finder())) \
                or str(value)
        elif source == "name":
            guidance = str(value).strip()
        elif source in _ORACLES:
            given = [value] if isinstance(value, str) else [str(sentence) for sentence in value]
            guidance = " ".join(oracle_sentences(model_input.source, given) or given)
        else:
            guidance = ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
        return model_input.replace(guidance=guidance)

    def _finder(self) -> MentionFinder:
        """How this controller finds the entity's sentences (its option ``mentions``)."""
        return MentionFinder(self.options["mentions"], f"{self.name}.mentions")


def entity_sentences(document: str, entity: str, names=None, finder: MentionFinder | None = None) -> list[str]:
    """The sentences of ``document`` that mention ``entity`` or one of its aliases, in order;
    ``names`` is the example's ``aliases`` control, which replaces the derived aliases; ``finder``
    says how a mention is found (the alias rule when None)."""
    return (finder or MentionFinder("rule", "guidance.mentions")).sentences(document, entity, names)


def oracle_sentences(document: str, given: list[str]) -> list[str]:
    """The sentences of ``document`` that match one of ``given``, in document order.

    Equal up to whitespace is a match; so is one inside the other when the shorter has at least
    four words, since the annotators' sentence splitter need not be ours (one of their sentences
    may be two of ours, or the reverse)."""
    wanted = [" ".join(sentence.split()) for sentence in given if sentence.strip()]
    exact = set(wanted)
    found = []
    for sentence in sentences(document):
        normal = " ".join(sentence.split())
        if normal in exact or any(_contains(normal, other) for other in wanted):
            found.append(sentence)
    return found


def _contains(a: str, b: str) -> bool:
    shorter, longer = sorted((a, b), key=len)
    return len(shorter.split()) >= _CONTAINED_MIN_WORDS and shorter in longer
