import unicodedata
from functools import lru_cache
from statistics import fmean

from ctrlkit import ConfigurationError, Metric, MetricResult
from ctrlkit.plugin_api import weighted_mean
from ctrlkit.plugin_api import WORD


class SuccessRate(Metric):
    """Keyword success rate (SR, CCSBench): the fraction of an example's requested keywords found
    in its summary, by exact match after stemming.

    Keywords and summary are normalised the same way: Unicode NFKC (so "ﬁle" is "file" and a
    full-width "Ｘ" is "X"), then casefolded (so "Straße" matches "strasse"), then split into runs
    of word characters (``\\w+``), each Porter-stemmed (nltk). A keyword is found when its stemmed
    tokens occur contiguously in the summary's. The ``keywords`` control is a list of strings or
    one comma-separated string. Each distinct keyword counts once: two keywords that normalise and
    stem alike ("apple", "Apples") are one.

    A keyword with no word character (CTRLsum's oracle keywords include "$" and "£") cannot be
    matched as words; it is left out and counted (``left_out``). An example left with no keyword
    is not scored (``unscored``, and its ``sr`` is null); a run where no example has a keyword to
    match is refused before any work. Of the corpus values, :meth:`aggregate` recomputes ``sr``
    for a subset; the other two are counts.
    """

    reads = ("keywords",)

    def check(self, examples):
        if examples and not any(_keywords(example)[0] for example in examples):
            raise ConfigurationError(f"metric '{self.name}': no example requests a keyword with a word character "
                                     f"to match (e.g. example '{examples[0].id}')")

    def compute(self, predictions, examples):
        from nltk.stem import PorterStemmer

        stem = lru_cache(maxsize=None)(PorterStemmer().stem)

        def tokens(text):
            return tuple(stem(word) for word in WORD.findall(_normal(text)))

        rates, left_out = [], []
        for prediction, example in zip(predictions, examples):
            keywords, dropped = _keywords(example)
            requested = set(map(tokens, keywords))
            left_out.append(dropped)
            summary = tokens(prediction) if requested else ()
            rates.append(fmean(_occurs(keyword, summary) for keyword in requested) if requested else None)
        scored = [rate for rate in rates if rate is not None]
        return MetricResult(per_example={"sr": rates, "left_out": left_out},
                            corpus={"sr": fmean(scored) if scored else None, "left_out": sum(left_out),
                                    "unscored": len(rates) - len(scored)})

    def aggregate(self, parts, weights):
        return {"sr": weighted_mean(parts["sr"], weights)}


def _normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _keywords(example) -> tuple[list[str], int]:
    """The requested keywords that have a word character, and how many others were left out."""
    value = example.controls.get("keywords")
    keywords = value.split(",") if isinstance(value, str) else list(value or [])
    keywords = [str(keyword).strip() for keyword in keywords if str(keyword).strip()]
    kept = [keyword for keyword in keywords if WORD.search(_normal(keyword))]
    return kept, len(keywords) - len(kept)


def _occurs(keyword: tuple[str, ...], summary: tuple[str, ...]) -> bool:
    n = len(keyword)
    return any(summary[i : i + n] == keyword for i in range(len(summary) - n + 1))
