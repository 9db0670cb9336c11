"""The tag controller (Passali & Tsoumakas): mark the source tokens that belong to the topic.

For the requested topic, take its N most representative terms (the top-N entries of its tf-idf
topic vector); surround every source token whose lemma is one of them with ``[TAG]``:
``individuals and [TAG] businesses [TAG] together``.

Matching is on lowercased words: a token is tagged when its lemma is a term (the paper's rule:
"businesses" for the term "business") or when the token itself is a term, since tf-idf keeps
inflected forms such as "planned" as terms of their own. Terms are not lemmatized: a
dictionary lemmatizer maps some terms to unrelated words (simplemma: "ai" -> "be"), which
would tag every form of "be". scikit-learn's English stop words are left out of the terms by
default: the authors' released tagged data never tags function words such as "the" or "of"
(their list was narrower: it does tag a few words on scikit-learn's, such as "made").
"""

from ctrlkit import TAG, Controller, CtrlkitError, Option

from .tagging import TermTagger


class Tag(Controller):
    """Surrounds source words whose lemma is among the topic's top-N tf-idf terms with [TAG]."""

    reads = ("topic",)
    topic_vectorizer = "tfidf"
    options = (
        Option("top_n", int, 100, "representative terms per topic (the paper's N)", minimum=1),
        Option("stop_words", bool, True, "leave English stop words out of the terms"),
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.terms: dict[str, list[str]] = {}
        self._tagger = TermTagger({})

    def fit(self, train_examples, topic_space):
        if topic_space is None:
            raise CtrlkitError("controller 'tag' needs a tf-idf topic space")
        excluded = ()
        if self.options["stop_words"]:
            from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS as excluded
        self.load_state({"terms": {
            topic: topic_space.representative_terms(topic, self.options["top_n"], exclude=excluded)
            for topic in topic_space.topics
        }})

    def state(self):
        return {"terms": self.terms}

    def load_state(self, state):
        self.terms = state["terms"]
        self._tagger = TermTagger(self.terms)

    def prepare(self, backbone):
        backbone.add_special_tokens([TAG])

    def apply(self, example, model_input):
        topic = example.controls["topic"]
        if topic not in self._tagger:
            raise CtrlkitError(f"controller 'tag': topic '{topic}' of example '{example.id}' has no terms")
        return model_input.replace(source=self._tagger.tag(model_input.source, topic))


def tag_text(text: str, terms: frozenset[str]) -> str:
    """``text`` with every word tagged whose lowercased form or lemma is in ``terms``."""
    return TermTagger({None: terms}).tag(text, None)
