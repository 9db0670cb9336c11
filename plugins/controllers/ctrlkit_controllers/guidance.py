"""The guidance controller (GSum, as EntSUM uses it for entities): a guidance signal beside the
document rather than inside it.

- ``entity``: the document's sentences that mention the requested entity, found by its full
  name or, for a name of several words, its last word ("Barack Obama" also matches "Obama");
  when no sentence mentions it, the name itself.
- ``keywords``: the requested keywords, comma-separated.
- ``given``: sentences the dataset supplies in the ``guidance`` control.

``hf`` reads ``guidance <sep> document``; ``extractive`` boosts sentences like the guidance, or
with ``extractive.guidance=restrict`` chooses only among them; with ``selection=lead`` and
``max_sentences=3`` (and a word budget that does not bind) that is the Lead3-ent baseline.
"""

from ctrlkit import Controller, Option
from ctrlkit.entities import aliases, mentions  # aliases: importable from here too
from ctrlkit.text import sentences

_READS = {"entity": "entity", "keywords": "keywords", "given": "guidance"}


class Guidance(Controller):
    """Puts a guidance signal beside the document: entity sentences, keywords, or given sentences."""

    requires = frozenset({"guidance"})
    options = (Option("source", str, "entity", "what the guidance is", choices=tuple(_READS)),)

    def __init__(self, **options):
        super().__init__(**options)
        self.reads = (_READS[self.options["source"]],)

    def apply(self, example, model_input):
        value = example.controls[self.reads[0]]
        if self.options["source"] == "entity":
            guidance = " ".join(entity_sentences(model_input.source, str(value))) or str(value)
        else:
            guidance = ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
        return model_input.replace(guidance=guidance)


def entity_sentences(document: str, entity: str) -> list[str]:
    """The sentences of ``document`` that mention ``entity`` or one of its aliases, in order."""
    return [sentence for sentence in sentences(document) if mentions(sentence, entity)]
