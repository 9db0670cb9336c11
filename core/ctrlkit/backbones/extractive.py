"""The embedded default backbone: sentence extraction, no weights, no network.

Generic salience is lead-biased centrality: each sentence's tf-idf cosine to the document
centroid, plus a bonus that decays with its position. Control relevance comes from the
signals a controller leaves in the input, read the way a trained model would see them:
``[TAG]``-marked terms (tag), text before a separator (prepend; ``<sep>`` or any token a
controller declares through ``add_special_tokens``), and guidance text. With no
signal the relevance is zero everywhere, so controlled and uncontrolled runs differ only by
the control.
"""

from __future__ import annotations


from ..components import Backbone
from ..options import Option
from ..text import sentences
from ..types import SEP, TAG



class ExtractiveBackbone(Backbone):
    """Extracts source sentences under a word budget, steered by tags, a prepended topic or guidance."""

    capabilities = frozenset({"text", "guidance", "length_budget"})
    options = (
        Option("max_words", int, 60, "word budget of each summary (a length controller's target replaces it)",
               minimum=1),
        Option("lead_weight", float, 1.0, "weight of the position bonus 1/(1+i) against centrality", minimum=0.0),
        Option("control_weight", float, 2.0, "weight of control relevance against generic salience", minimum=0.0),
        Option("guidance", str, "boost", "boost sentences like the guidance, or restrict selection to "
               "the guidance's own sentences when it has any", choices=("boost", "restrict")),
        Option("max_sentences", int, 0, "most sentences per summary (0: only the word budget limits)", minimum=0),
        Option("selection", str, "salience", "choose sentences by score, or in document order (lead)",
               choices=("salience", "lead")),
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.separators = {SEP}

    def add_special_tokens(self, tokens):
        """Controllers declare their markup here; every token but [TAG] ends prepended control text."""
        self.separators.update(token for token in tokens if token and token != TAG)

    def generate(self, inputs):
        return [self.summarize(model_input.source, model_input.guidance, model_input.features.get("target_words"))
                for model_input in inputs]

    def summarize(self, source: str, guidance: str | None = None, target_words: int | None = None) -> str:
        """``target_words``, when a length controller asks for it, replaces the ``max_words`` budget."""
        from .sentence_selection import select  # numpy and scikit-learn: loaded to summarize, not to list

        prefix, document = _split_prefix(source, self.separators)
        tagged_terms, document = untagged(document)
        candidates = sentences(document)
        if guidance and self.options["guidance"] == "restrict":
            given = set(sentences(guidance))
            candidates = tuple(s for s in candidates if s in given) or candidates
        if not candidates:
            return ""
        query = " ".join(part for part in (prefix, guidance or "") if part.strip())
        return select(candidates, query, tagged_terms, self.options, target_words or self.options["max_words"])


def _split_prefix(source: str, separators) -> tuple[str, str]:
    """Control text before the first separator, and the document after it."""
    found = [(source.find(separator), separator) for separator in separators if separator in source]
    if not found:
        return "", source
    position, separator = min(found)
    return source[:position], source[position + len(separator):]


def untagged(document: str) -> tuple[set[str], str]:
    """The terms between each pair of [TAG] marks (lower-cased, stripped), and the document with
    each pair replaced by its stripped term and an unpaired mark by a space. One split, so linear in
    the document: a pattern with a lazy body between two ``\\s*`` took cubic time on a mark that
    never closes."""
    parts = document.split(TAG)
    terms, kept = set(), [parts[0]]
    for i in range(1, len(parts)):
        if i % 2 and i < len(parts) - 1:  # between an opening mark and its closing one
            terms.add(parts[i].strip().lower())
            kept.append(parts[i].strip())
        else:
            kept.append((" " if i % 2 else "") + parts[i])
    return terms, "".join(kept)
