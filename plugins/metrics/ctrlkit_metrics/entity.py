from statistics import fmean

from ctrlkit import ConfigurationError, Metric, MetricResult
from ctrlkit.entities import mentions


class EntitySuccess(Metric):
    """Entity success (EntSUM entity control): 1.0 when the summary mentions the requested entity.

    A mention is the full name or, for a name of several words, its last word, as whole words
    in any case (``ctrlkit.entities``, the rule the guidance controller uses); else 0.0.
    Corpus: the mean.
    """

    reads = ("entity",)

    def compute(self, predictions, examples):
        entities = [str(example.controls.get("entity") or "").strip() for example in examples]
        for example, entity in zip(examples, entities):
            if not entity:
                raise ConfigurationError(f"metric '{self.name}': example '{example.id}' requests no entity")
        found = [float(mentions(prediction, entity)) for prediction, entity in zip(predictions, entities)]
        return MetricResult(per_example={"entity": found}, corpus={"entity": fmean(found)})
