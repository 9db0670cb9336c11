"""Novel n-grams: how abstractive a summary is, i.e. how much of it is not copied from its source.

See et al. (2017, "Get To The Point") and Narayan et al. (2018, XSum) report the share of a
summary's n-grams that do not appear in the source document; a controller that only adds
markup to the input should not move it, and one that steers an abstractive model may.
"""

from statistics import fmean

from ctrlkit import Metric, MetricResult, Option
from ctrlkit.plugin_api import WORD


class Novelty(Metric):
    """Novel n-gram rate: the share of a summary's n-grams that do not occur in its source document.

    Text is lowercased and split into runs of word characters (``\\w+``); each of the
    summary's n-gram occurrences counts, so a novel n-gram written twice counts twice.
    Per example: ``novel``, in [0, 1]. A summary with fewer than ``n`` tokens has no n-gram,
    so its rate is undefined: it is None, left out of the mean and counted in the corpus
    value ``undefined``, never scored as 0 or 1. Corpus: ``novel``, the mean over defined
    examples (None when none is). The rate describes a summary; it is not a quality score.
    """

    options = (Option("n", int, 2, "n-gram length", minimum=1),)

    def compute(self, predictions, examples):
        n = self.options["n"]
        rates = [_novel_rate(_ngrams(prediction, n), set(_ngrams(example.document, n)))
                 for prediction, example in zip(predictions, examples)]
        defined = [rate for rate in rates if rate is not None]
        return MetricResult(
            per_example={"novel": rates},
            corpus={"novel": fmean(defined) if defined else None, "undefined": float(len(rates) - len(defined))},
        )


def _ngrams(text: str, n: int) -> list[tuple[str, ...]]:
    tokens = WORD.findall(text.lower())
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def _novel_rate(summary: list[tuple[str, ...]], source: set[tuple[str, ...]]) -> float | None:
    if not summary:
        return None
    return sum(ngram not in source for ngram in summary) / len(summary)
