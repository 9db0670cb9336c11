import ctrlkit
from ctrlkit import Metric, MetricResult, Option
from ctrlkit.plugin_api import weighted_mean

STAS_THRESHOLD = 0.696
"""Above this STAS, people judged the topic strongly present (Passali & Tsoumakas)."""


class Stas(Metric):
    """Summarization Topic Affinity Score (Passali & Tsoumakas): cos(y_s, y_t) / max_z cos(y_s, y_z)
    for the requested topic t; 1.0 means t is the summary's dominant topic.

    Corpus values: the mean, and ``above_threshold``, the fraction of summaries at or above 0.696,
    where people judged a topic strongly present; both are recomputed for a subset (:meth:`aggregate`).
    """

    scores_each_example_alone = True

    reads = ("topic",)
    options = (Option("vectorizer", str, "tfidf", "topic vectorizer: tfidf, embedding, or a plugin's"),)

    def __init__(self, **options):
        super().__init__(**options)
        self.topic_vectorizer = self.options["vectorizer"]
        self.topic_space = None

    def use_topic_space(self, topic_space):
        self.topic_space = topic_space

    def compute(self, predictions, examples):
        if self.topic_space is None:
            raise ctrlkit.CtrlkitError("metric 'stas' has no topic space: call use_topic_space() first")
        values = self.topic_space.stas(list(predictions), [example.controls["topic"] for example in examples])
        return MetricResult(
            per_example={"stas": values.tolist()},
            corpus={"stas": float(values.mean()), "above_threshold": float((values >= STAS_THRESHOLD).mean())},
        )

    def aggregate(self, parts, weights):
        stas = parts["stas"]
        return {"stas": weighted_mean(stas, weights),
                "above_threshold": weighted_mean((stas >= STAS_THRESHOLD).astype(float), weights)}
