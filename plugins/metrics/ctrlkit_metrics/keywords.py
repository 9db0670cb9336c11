from functools import lru_cache
from statistics import fmean

from ctrlkit import ConfigurationError, Metric, MetricResult
from ctrlkit.text import WORD


class SuccessRate(Metric):
    """Keyword success rate (SR, CCSBench): the fraction of an example's requested keywords found
    in its summary, by exact match after stemming.

    Text is lowercased and split into runs of word characters (``\\w+``), each Porter-stemmed
    (nltk); a keyword is found when its stemmed tokens occur contiguously in the summary's.
    The ``keywords`` control is a list of strings or one comma-separated string; each listed
    keyword counts once. An example that requests no keyword is refused (SR would be 0/0),
    naming the example, before any is scored; so is a keyword without a word character.
    """

    reads = ("keywords",)

    def check(self, examples):
        for example in examples:
            _keywords(example)

    def compute(self, predictions, examples):
        from nltk.stem import PorterStemmer

        stem = lru_cache(maxsize=None)(PorterStemmer().stem)

        def tokens(text):
            return tuple(stem(word) for word in WORD.findall(text.lower()))

        requested = [[tokens(keyword) for keyword in _keywords(example)] for example in examples]
        rates = []
        for prediction, keywords in zip(predictions, requested):
            summary = tokens(prediction)
            rates.append(fmean(_occurs(keyword, summary) for keyword in keywords))
        return MetricResult(per_example={"sr": rates}, corpus={"sr": fmean(rates)})


def _keywords(example) -> list[str]:
    value = example.controls.get("keywords")
    keywords = value.split(",") if isinstance(value, str) else list(value or [])
    keywords = [str(keyword).strip() for keyword in keywords if str(keyword).strip()]
    if not keywords:
        raise ConfigurationError(f"metric 'sr': example '{example.id}' requests no keywords")
    wordless = [keyword for keyword in keywords if not WORD.search(keyword)]
    if wordless:
        raise ConfigurationError(f"metric 'sr': keyword {wordless[0]!r} of example '{example.id}' has no word "
                                 "to match")
    return keywords


def _occurs(keyword: tuple[str, ...], summary: tuple[str, ...]) -> bool:
    n = len(keyword)
    return any(summary[i : i + n] == keyword for i in range(len(summary) - n + 1))
