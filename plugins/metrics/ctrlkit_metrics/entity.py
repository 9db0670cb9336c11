from statistics import fmean

from ctrlkit import ConfigurationError, Metric, MetricResult, Option
from ctrlkit.plugin_api import MENTION_FINDERS, MentionFinder, given_aliases


class EntitySuccess(Metric):
    """Entity success (EntSUM entity control): 1.0 when the summary mentions the requested entity.

    A mention follows ``ctrlkit.entities``, the rule the guidance controller uses: the full name
    as whole words in any case; for a person-like name also its surname, capitalised ("Obama"
    for "Barack Obama"; "America" never counts for "Bank of America"); or, when the example has
    an ``aliases`` control, the full name and those names only. Else 0.0. Corpus: the mean.
    ``entity.mentions=spacy`` corrects the rule with spaCy's named entities, ``spacy-pronouns``
    also takes a "He said ..." sentence after one naming the entity alone
    (``ctrlkit.entity_mentions``; the ``ner`` extra).
    """

    scores_each_example_alone = True

    reads = ("entity",)
    options = (Option("mentions", str, "rule", "how a mention is found: rule (full name, or a person-like "
                                               "name's surname, by word lists), spacy (the rule corrected by "
                                               "spaCy's entities; the ner extra) or spacy-pronouns (also a "
                                               "sentence opening with He/She after one naming the entity "
                                               "alone)", choices=MENTION_FINDERS),)

    @property
    def finder(self) -> MentionFinder:
        """How this metric finds mentions (its option ``mentions``), named in errors as ``NAME.mentions``."""
        return MentionFinder(self.options["mentions"], f"{self.name}.mentions")

    def check(self, examples):
        for example in examples:
            self._aliases(example)
        self.file_digests = {**self.file_digests, **self.finder.load()}  # which spaCy pipeline, recorded

    def compute(self, predictions, examples):
        entities = [str(example.controls.get("entity") or "").strip() for example in examples]
        for example, entity in zip(examples, entities):
            if not entity:
                raise ConfigurationError(f"metric '{self.name}': example '{example.id}' requests no entity")
        found = [float(self.finder.mentions(prediction, entity, self._aliases(example)))
                 for prediction, entity, example in zip(predictions, entities, examples)]
        return MetricResult(per_example={"entity": found}, corpus={"entity": fmean(found)})

    def _aliases(self, example):
        """The example's ``aliases`` control, normalised; a malformed one is refused naming the example."""
        try:
            return given_aliases(example.controls.get("aliases"))
        except ConfigurationError as exc:
            raise ConfigurationError(f"metric '{self.name}', example '{example.id}': {exc}") from None
