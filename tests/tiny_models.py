"""Tiny transformers models built from configs, with tokenizers trained here: no hub needed."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "plugins" / "datasets" / "ctrlkit_datasets" / "data" / "sample.jsonl"


def _corpus() -> list[str]:
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    return [row["document"] for row in rows] + [s for row in rows for s in row["summaries"].values()]


def _bpe(special: list[str], vocab_size: int = 800):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token=special[-1] if "<unk>" in special[-1] else None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(_corpus(), trainer)
    return tokenizer


def build_bart(directory: Path, positions: int = 256, d_model: int = 64, init_std: float = 0.02) -> Path:
    """A tiny BART. A larger ``init_std`` than the usual 0.02 makes outputs differ from input to input."""
    from tokenizers import processors
    from transformers import BartConfig, BartForConditionalGeneration, PreTrainedTokenizerFast

    tokenizer = _bpe(["<s>", "<pad>", "</s>", "<mask>", "<unk>"])
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>", mask_token="<mask>", model_max_length=positions)
    heads = max(1, d_model // 32)
    config = BartConfig(vocab_size=len(fast), d_model=d_model, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=heads, decoder_attention_heads=heads, encoder_ffn_dim=2 * d_model,
                        decoder_ffn_dim=2 * d_model, max_position_embeddings=positions, dropout=0.0, attention_dropout=0.0,
                        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2,
                        init_std=init_std)
    return _save(BartForConditionalGeneration(config), fast, directory)


def build_t5(directory: Path) -> Path:
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    tokenizer = _bpe(["<pad>", "</s>", "<unk>"])
    tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="</s>", pad_token="<pad>", unk_token="<unk>",
                                   model_max_length=256)
    config = T5Config(vocab_size=len(fast), d_model=64, d_kv=32, d_ff=128, num_layers=2, num_heads=2,
                      pad_token_id=0, eos_token_id=1, decoder_start_token_id=0, dropout_rate=0.0)
    return _save(T5ForConditionalGeneration(config), fast, directory)


def build_pegasus(directory: Path) -> Path:
    """PEGASUS scales token embeddings in its encoder, not in the embedding module."""
    from tokenizers import processors
    from transformers import PegasusConfig, PegasusForConditionalGeneration, PreTrainedTokenizerFast

    tokenizer = _bpe(["<pad>", "</s>", "<unk>"])
    tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="</s>", pad_token="<pad>", unk_token="<unk>",
                                   model_max_length=256)
    config = PegasusConfig(vocab_size=len(fast), d_model=64, encoder_layers=2, decoder_layers=2,
                           encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=128,
                           decoder_ffn_dim=128, max_position_embeddings=256, scale_embedding=True, dropout=0.0,
                           pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    return _save(PegasusForConditionalGeneration(config), fast, directory)


def build_gpt2(directory: Path) -> Path:
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tokenizer = _bpe(["<|endoftext|>"])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                                   model_max_length=256)
    config = GPT2Config(vocab_size=len(fast), n_embd=64, n_layer=2, n_head=2, n_positions=256, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        bos_token_id=0, eos_token_id=0)
    return _save(GPT2LMHeadModel(config), fast, directory)


def _save(model, tokenizer, directory: Path) -> Path:
    import torch

    torch.manual_seed(0)
    model.init_weights()
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
