"""A tiny BART built offline: a config, and a byte-level BPE tokenizer trained with ``tokenizers``
on the bundled sample's texts. It lets ``ctrlkit train`` and ``ctrlkit run -b hf:...`` be tried
without a model hub (``examples/tiny_model.py``), and the tests use it. Its weights are random
until trained, so its summaries say nothing about a method: it shows the workflow only.

Needs ``ctrlkit[hf]`` (torch, transformers, tokenizers) and the ``sample`` dataset of
``ctrlkit-datasets``.
"""

from __future__ import annotations

from pathlib import Path

from .api import get_dataset
from .quiet import quietly


def sample_texts() -> list[str]:
    """The bundled sample's articles, then its reference summaries, in file order."""
    sample = get_dataset("sample")
    examples = sample.load(sample.default_split)
    documents = list(dict.fromkeys(example.document for example in examples))
    return documents + [reference for example in examples for reference in example.references]


def train_tokenizer(special: list[str], vocab_size: int = 800):
    """A byte-level BPE ``tokenizers.Tokenizer`` trained on :func:`sample_texts`; ``special``
    come first in the vocabulary, and a last one named ``<unk>`` is the unknown token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token=special[-1] if "<unk>" in special[-1] else None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(sample_texts(), trainer)
    return tokenizer


def build_bart(directory: str | Path, positions: int = 256, d_model: int = 64, init_std: float = 0.02) -> Path:
    """Write a tiny BART (2+2 layers, ``d_model`` wide, ``positions`` input tokens at most) and its
    tokenizer to ``directory``. A larger ``init_std`` than the usual 0.02 makes outputs differ from
    input to input."""
    from tokenizers import processors
    from transformers import BartConfig, BartForConditionalGeneration, PreTrainedTokenizerFast

    tokenizer = train_tokenizer(["<s>", "<pad>", "</s>", "<mask>", "<unk>"])
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>", mask_token="<mask>", model_max_length=positions)
    heads = max(1, d_model // 32)
    config = BartConfig(vocab_size=len(fast), d_model=d_model, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=heads, decoder_attention_heads=heads, encoder_ffn_dim=2 * d_model,
                        decoder_ffn_dim=2 * d_model, max_position_embeddings=positions, dropout=0.0, attention_dropout=0.0,
                        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2,
                        init_std=init_std)
    return save_model(BartForConditionalGeneration, config, fast, Path(directory))


@quietly
def save_model(model_class, config, tokenizer, directory: Path) -> Path:
    """Make ``model_class(config)`` with weights drawn from seed 0 (the same model every time) and
    save it with ``tokenizer`` to ``directory``."""
    import torch

    torch.manual_seed(0)
    model = model_class(config)  # draws most weights here; init_weights() applies the config's init_std
    model.init_weights()
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
