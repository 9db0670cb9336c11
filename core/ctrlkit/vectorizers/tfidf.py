from __future__ import annotations

from ..components import Vectorizer
from ..errors import ConfigurationError
from ..options import Option


class TfidfVectorizer(Vectorizer):
    """tf-idf over the topic documents; defaults are scikit-learn's TfidfVectorizer() defaults,
    as the STAS paper used."""

    has_terms = True
    options = (
        Option("stop_words", str, "none", "drop stop words before weighting", choices=("none", "english")),
        Option("sublinear_tf", bool, False, "use 1 + log(tf)"),
        Option("min_df", int, 1, "ignore terms in fewer documents than this", minimum=1),
        Option("max_df", float, 1.0, "ignore terms in more than this fraction of documents", minimum=0.0, maximum=1.0),
        Option("max_features", int, 0, "keep only the most frequent terms (0: all)", minimum=0),
    )

    def __init__(self, **options):
        super().__init__(**options)
        self._model = None

    def _new_model(self):
        from sklearn.feature_extraction.text import TfidfVectorizer as SklearnTfidf

        o = self.options
        return SklearnTfidf(
            stop_words=None if o["stop_words"] == "none" else o["stop_words"],
            sublinear_tf=o["sublinear_tf"],
            min_df=o["min_df"],
            max_df=o["max_df"],
            max_features=o["max_features"] or None,
        )

    def fit(self, documents):
        try:
            self._model = self._new_model().fit(documents)
        except ValueError as exc:  # e.g. min_df above the number of documents, or no terms left
            raise ConfigurationError(f"vectorizer 'tfidf' cannot be fitted on the topic documents: {exc}") from None

    def transform(self, texts):
        return self._model.transform(texts)

    def terms(self):
        return list(self._model.get_feature_names_out())

    def state(self):
        return {"terms": self.terms(), "idf": self._model.idf_.tolist()}

    def load_state(self, state):
        import numpy as np

        model = self._new_model()
        model.vocabulary_ = {term: i for i, term in enumerate(state["terms"])}
        model.idf_ = np.asarray(state["idf"], dtype=np.float64)
        self._model = model
