"""The tests' tiny transformers models, built from configs with tokenizers trained here: no hub
needed. The BART is the one users build (``ctrlkit.tiny_models``); T5, PEGASUS and GPT-2 are the
tests' own."""

from pathlib import Path

from ctrlkit.tiny_models import build_bart, save_model, train_tokenizer

__all__ = ["build_bart", "build_gpt2", "build_pegasus", "build_t5"]


def build_t5(directory: Path) -> Path:
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    tokenizer = train_tokenizer(["<pad>", "</s>", "<unk>"])
    tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="</s>", pad_token="<pad>", unk_token="<unk>",
                                   model_max_length=256)
    config = T5Config(vocab_size=len(fast), d_model=64, d_kv=32, d_ff=128, num_layers=2, num_heads=2,
                      pad_token_id=0, eos_token_id=1, decoder_start_token_id=0, dropout_rate=0.0)
    return save_model(T5ForConditionalGeneration, config, fast, directory)


def build_pegasus(directory: Path) -> Path:
    """PEGASUS scales token embeddings in its encoder, not in the embedding module."""
    from tokenizers import processors
    from transformers import PegasusConfig, PegasusForConditionalGeneration, PreTrainedTokenizerFast

    tokenizer = train_tokenizer(["<pad>", "</s>", "<unk>"])
    tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="</s>", pad_token="<pad>", unk_token="<unk>",
                                   model_max_length=256)
    config = PegasusConfig(vocab_size=len(fast), d_model=64, encoder_layers=2, decoder_layers=2,
                           encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=128,
                           decoder_ffn_dim=128, max_position_embeddings=256, scale_embedding=True, dropout=0.0,
                           pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    return save_model(PegasusForConditionalGeneration, config, fast, directory)


def build_gpt2(directory: Path, tied: bool = True) -> Path:
    """``tied=False``: output embeddings of their own, as Llama's."""
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tokenizer = train_tokenizer(["<|endoftext|>"])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                                   model_max_length=256)
    config = GPT2Config(vocab_size=len(fast), n_embd=64, n_layer=2, n_head=2, n_positions=256, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        bos_token_id=0, eos_token_id=0, tie_word_embeddings=tied)
    return save_model(GPT2LMHeadModel, config, fast, directory)

