import re
from statistics import fmean

from ctrlkit import Metric, MetricResult, Option, OptionError
from ctrlkit.text import sentences

_ROUGE_TYPE = re.compile(r"rouge[1-9]|rougeL|rougeLsum")


class Rouge(Metric):
    """ROUGE F1 (rouge-score), the maximum over an example's references for each ROUGE type.

    Summaries are split into sentences, one per line, so that rougeLsum sees sentence
    boundaries (as the CNN/DailyMail evaluation scripts do)."""

    needs_references = True
    options = (
        Option("types", str, "rouge1,rouge2,rougeL,rougeLsum", "comma-separated ROUGE types"),
        Option("use_stemmer", bool, True, "Porter-stem tokens before matching"),
        Option("split_sentences", bool, True, "put each sentence on its own line (rougeLsum)"),
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.types = list(dict.fromkeys(name.strip() for name in self.options["types"].split(",") if name.strip()))
        unknown = [name for name in self.types if not _ROUGE_TYPE.fullmatch(name)]
        if unknown or not self.types:
            raise OptionError(f"option 'rouge.types': unknown ROUGE type {unknown[0] if unknown else '(none)'!r}; "
                              "use rouge1..rouge9, rougeL, rougeLsum")

    def compute(self, predictions, examples):
        from rouge_score import rouge_scorer

        scorer = rouge_scorer.RougeScorer(self.types, use_stemmer=self.options["use_stemmer"])
        per_example = {name: [] for name in self.types}
        for prediction, example in zip(predictions, examples):
            best = scorer.score_multi([self._lines(r) for r in example.references], self._lines(prediction))
            for name in self.types:
                per_example[name].append(best[name].fmeasure)
        corpus = {name: fmean(values) for name, values in per_example.items()}
        return MetricResult(per_example=per_example, corpus=corpus)

    def _lines(self, text):
        return "\n".join(sentences(text)) if self.options["split_sentences"] else text
