from statistics import fmean

from ctrlkit import ConfigurationError, Metric, MetricResult
from ctrlkit.plugin_api import weighted_mean

LEVELS = ("normal", "high")


class Readability(Metric):
    """Flesch-Kincaid grade level (FKGL, textstat) of each summary, as CCSBench measures readability.

    Corpus: ``fkgl``, the mean; and when examples carry a ``readability`` control (normal |
    high), ``fkgl_normal`` and ``fkgl_high``, the means per requested level, and ``dfkgl`` =
    mean FKGL(normal) - mean FKGL(high), which is positive when summaries asked to be highly
    readable are easier; each None when a level is absent. The control is optional, but any
    other value is refused before scoring. Parts (when some example has the control): ``fkgl``
    and ``high``, 1.0 for a ``high`` request, 0.0 for ``normal``, None for none; every corpus
    value is recomputed from them for a subset (:meth:`aggregate`).
    """

    scores_each_example_alone = True

    def check(self, examples):
        for example in examples:
            level = example.controls.get("readability")
            if level not in (None, "", *LEVELS):
                raise ConfigurationError(f"metric '{self.name}': example '{example.id}' requests readability "
                                         f"{level!r}; expected {' or '.join(LEVELS)}")

    def compute(self, predictions, examples):
        import textstat

        self.check(examples)
        requested = [example.controls.get("readability") for example in examples]
        grades = [float(textstat.flesch_kincaid_grade(prediction)) for prediction in predictions]
        corpus = {"fkgl": fmean(grades)}
        parts = None
        if any(requested):
            parts = {"fkgl": grades, "high": [None if not level else float(level == "high") for level in requested]}
            means = {level: _mean([g for g, r in zip(grades, requested) if r == level]) for level in LEVELS}
            corpus.update({f"fkgl_{level}": mean for level, mean in means.items()})
            both = None not in means.values()
            corpus["dfkgl"] = means["normal"] - means["high"] if both else None
        return MetricResult(per_example={"fkgl": grades}, corpus=corpus, parts=parts)

    def aggregate(self, parts, weights):
        import numpy as np

        fkgl = parts["fkgl"]
        found = {"fkgl": weighted_mean(fkgl, weights)}
        if "high" in parts:
            for level, flag in zip(LEVELS, (0.0, 1.0)):
                found[f"fkgl_{level}"] = weighted_mean(np.where(parts["high"] == flag, fkgl, np.nan), weights)
            found["dfkgl"] = found["fkgl_normal"] - found["fkgl_high"]
        return found


def _mean(values):
    return fmean(values) if values else None
