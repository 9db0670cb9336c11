from statistics import fmean

from ctrlkit import Metric, MetricResult
from ctrlkit.plugin_api import sentences, word_count


class Stats(Metric):
    """Summary statistics that need no control: words, sentences and compression ratio.

    EntSUM reports the average sentences and words per system. Per example: ``words``, the
    whitespace-separated tokens of the summary (as the ``length`` metric counts them);
    ``sentences``, its sentences by the project's splitter (``ctrlkit.text.sentences``, pysbd);
    ``compression``, document words / summary words, so 10.0 means a summary a tenth of its
    document's length. An empty summary (no words) has 0 words and 0 sentences and compression
    None, never a division by zero. Corpus: ``words``, ``sentences``, the means over every
    example; ``compression``, the mean over the examples where it is defined (None when none
    is); ``empty``, the number of summaries without a word. None of these is better high or low,
    so tables mark no best value for them.
    """

    scores_each_example_alone = True

    higher_is_better = None

    def compute(self, predictions, examples):
        words = [word_count(prediction) for prediction in predictions]
        counted = [len(sentences(prediction)) for prediction in predictions]
        ratios = [word_count(example.document) / n if n else None for n, example in zip(words, examples)]
        defined = [ratio for ratio in ratios if ratio is not None]
        return MetricResult(
            per_example={"words": words, "sentences": counted, "compression": ratios},
            corpus={
                "words": fmean(words),
                "sentences": fmean(counted),
                "compression": fmean(defined) if defined else None,
                "empty": float(words.count(0)),
            },
        )
