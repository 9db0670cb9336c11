import logging
import math
import sys
from statistics import fmean

from ctrlkit import ConfigurationError, Metric, MetricResult, Option, OptionError
from ctrlkit.plugin_api import weighted_mean
from ctrlkit.plugin_api import word_count

BIN_WORDS = 50
logger = logging.getLogger("ctrlkit")


def length_bin(words: float) -> int:
    """The 50-word bin of a length: bin 0 = 0-50 words, bin 1 = 51-100, ..."""
    return max(0, math.ceil(words / BIN_WORDS) - 1)


class Length(Metric):
    """Length control: MAD and PCC of the generated against the requested 50-word length bins.

    MAD and PCC follow the CocoSciSum and CCSBench definitions, as stated here. Words are
    whitespace-separated tokens; bin(n) = max(0, ceil(n / 50) - 1), so bin 0 = 0-50 words,
    bin 1 = 51-100, ... Per example: ``words``, ``abs_bin_error`` = |bin(generated words) -
    requested bin|, and ``abs_word_error`` = |generated - requested words| (None when the
    request is a bin). Corpus: ``mad``, the mean absolute bin error; ``pcc``, the Pearson
    correlation of the generated and the requested bins (scipy), None with ``pcc_defined`` 0.0
    when undefined (fewer than two examples, or either side constant); ``word_mad``, the mean
    absolute word error where defined. With ``pcc_generated=words`` the generated side of ``pcc``
    is the summary's word count, uncapped, instead of its bin (CCSBench's variant); the
    requested side is the requested bin either way. Parts: both errors, ``generated`` (the
    generated side of ``pcc``) and ``requested`` (the requested bin), from which ``mad``, ``pcc``
    and ``word_mad`` are recomputed for a subset (:meth:`aggregate`); ``pcc_defined`` is not
    (a subset's ``pcc`` is NaN where it is undefined).

    A numeric ``length`` control (or numeric string) is words or a bin, as ``unit`` says; a
    named level ("short") is mapped to words by the ``levels`` option, else by the dataset's
    ``length_levels``. Every request is checked before any example is scored.

    A dataset that defines a top bin (CCSBench: bin 4, "above 200 words") sets
    ``length_top_bin``; generated and requested bins are then capped at it, so a 400-word summary
    for a bin-4 request has error 0, as the benchmark defines it (``top_bin`` overrides). When the
    requested named levels fall into fewer bins than there are levels (MACSum-Doc: short 24 and
    normal 30 words are both bin 0), a warning says so: MAD and PCC cannot separate those levels.
    """

    reads = ("length",)
    options = (
        Option("unit", str, "words", "how a numeric length control is read", choices=("words", "bin")),
        Option("levels", str, "", "named levels in words, e.g. short=50,normal=100,long=200 "
                                  "(over the dataset's own)"),
        Option("top_bin", int, -1, "highest bin, holding every longer length (-1: the dataset's, else none)",
               minimum=-1),
        Option("pcc_generated", str, "bins", "generated side of pcc against the requested bin: its bin, "
                                             "or its word count (CCSBench)", choices=("bins", "words")),
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.given_levels = _parse_levels(self.options["levels"])
        self.levels = dict(self.given_levels)
        self.top_bin = self.options["top_bin"] if self.options["top_bin"] >= 0 else None
        self.warned = False

    def use_dataset(self, dataset):
        self.levels = {**(getattr(dataset, "length_levels", None) or {}), **self.given_levels}
        if self.options["top_bin"] < 0:
            self.top_bin = getattr(dataset, "length_top_bin", None)

    def bin(self, words: float) -> int:
        """The 50-word bin of a length, capped at the top bin when there is one."""
        found = length_bin(words)
        return found if self.top_bin is None else min(found, self.top_bin)

    def compute(self, predictions, examples):
        from scipy.stats import pearsonr

        requests = [self._request(example) for example in examples]
        words = [word_count(prediction) for prediction in predictions]
        generated = [self.bin(n) for n in words]
        wanted = [self.bin(target) if unit == "words" else self._cap(target) for target, unit in requests]
        bin_errors = [abs(g - w) for g, w in zip(generated, wanted)]
        word_errors = [abs(n - target) if unit == "words" else None for n, (target, unit) in zip(words, requests)]
        correlated = words if self.options["pcc_generated"] == "words" else generated
        defined = len(set(correlated)) > 1 and len(set(wanted)) > 1
        measured = [error for error in word_errors if error is not None]
        return MetricResult(
            per_example={"abs_bin_error": bin_errors, "abs_word_error": word_errors, "words": words},
            corpus={
                "mad": fmean(bin_errors),
                # as floats: a requested length past int64 makes a list of ints an object array scipy refuses
                "pcc": float(pearsonr([float(n) for n in correlated], [float(n) for n in wanted]).statistic)
                if defined else None,
                "pcc_defined": float(defined),
                "word_mad": fmean(measured) if measured else None,
            },
            parts={"abs_bin_error": bin_errors, "abs_word_error": word_errors,
                   "generated": correlated, "requested": wanted},
        )

    def aggregate(self, parts, weights):
        from ctrlkit.plugin_api import weighted_pearson

        return {"mad": weighted_mean(parts["abs_bin_error"], weights),
                "pcc": weighted_pearson(parts["generated"], parts["requested"], weights),
                "word_mad": weighted_mean(parts["abs_word_error"], weights)}

    def _cap(self, requested_bin: int) -> int:
        return requested_bin if self.top_bin is None else min(requested_bin, self.top_bin)

    def check(self, examples):
        for example in examples:
            self._request(example)
        self._warn_collapsed_levels(examples)

    def _warn_collapsed_levels(self, examples) -> None:
        """One warning when the named levels requested fall into fewer bins than there are levels."""
        requested = {example.controls["length"] for example in examples}
        named = sorted((level for level in requested if isinstance(level, str) and level in self.levels),
                       key=lambda level: self.levels[level])
        bins = {level: self.bin(self.levels[level]) for level in named}
        if self.warned or len(set(bins.values())) == len(bins):
            return
        self.warned = True
        shown = ", ".join(f"{level} ({self.levels[level]:g} words) bin {bins[level]}" for level in named)
        logger.warning("ctrlkit: metric '%s': the length levels fall into %d 50-word bins for %d levels (%s); "
                       "MAD and PCC cannot separate levels in one bin (word_mad can)", self.name,
                       len(set(bins.values())), len(bins), shown)

    def _request(self, example) -> tuple[float, str]:
        """``(target, unit)``: the requested words, or the requested bin, of one example."""
        value = example.controls.get("length")
        where = f"metric '{self.name}': example '{example.id}'"
        if isinstance(value, str):
            if value in self.levels:
                return float(self.levels[value]), "words"
            try:
                value = float(value)
            except ValueError:
                known = ", ".join(self.levels) or "none"
                raise ConfigurationError(f"{where} requests length level {value!r}, which is not mapped to words "
                                         f"(known: {known}); set {self.name}.levels, e.g. "
                                         "short=50,normal=100,long=200") from None
        # an int too large for a float is refused like infinity (float(value) would raise OverflowError)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= sys.float_info.max:
            raise ConfigurationError(f"{where} has length control {value!r}; expected words, a bin or a level")
        if self.options["unit"] == "words":
            return float(value), "words"
        if value != int(value):
            raise ConfigurationError(f"{where} requests bin {value!r}, which is not a whole number")
        return int(value), "bin"


def _parse_levels(text: str) -> dict[str, float]:
    """``"short=50,normal=100"`` -> ``{"short": 50.0, "normal": 100.0}``."""
    levels = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, words = (piece.strip() for piece in item.partition("="))
        try:
            levels[name] = float(words)
        except ValueError:
            levels[name] = math.nan
        if not name or not 0 <= levels[name] < math.inf:
            raise OptionError(f"option 'length.levels' expects LEVEL=WORDS pairs (words >= 0), got {item!r}")
    return levels
