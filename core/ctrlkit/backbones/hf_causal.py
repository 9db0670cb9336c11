"""Backbone ``hf-causal``: decoder-only language models (GPT-2, Llama, Qwen, ...).

Chat messages go through the tokenizer's chat template when it has one, else they are
flattened to plain text; a plain source becomes ``source + "\\nTL;DR:"``. A base model (no chat
template) counts as one that only flattens messages, so the prompt controller's hard prompt
reaches it as plain text, not as a ``System:``/``User:`` transcript. Batches are padded
on the left so every prompt ends where generation starts, and only the new tokens are returned.
"""

from __future__ import annotations

from ..chat import flatten_messages
from .hf_base import HFBackbone


class HFCausal(HFBackbone):
    """Any transformers decoder-only model, by path or hub id (hf-causal:PATH); chat template when present."""

    capabilities = frozenset({"text", "messages"})
    auto_model_class = "AutoModelForCausalLM"

    @property
    def flattens_messages(self) -> bool:
        """True for a base model: its tokenizer has no chat template (loads the model to know)."""
        return not getattr(self.tokenizer, "chat_template", None)

    def _after_load(self):
        tokenizer = self._tokenizer
        tokenizer.padding_side = "left"
        # keep the end of a long prompt, where the cue to answer is
        tokenizer.truncation_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token

    def input_limit(self) -> int:
        """Prompt and new tokens share the model's positions, so the prompt gets what is left."""
        if self.options["max_input_tokens"]:
            return self.options["max_input_tokens"]
        return max(1, super().input_limit() - self.options["max_new_tokens"])

    def prompt(self, model_input) -> str:
        if model_input.messages:
            if getattr(self.tokenizer, "chat_template", None):
                return self.tokenizer.apply_chat_template(list(model_input.messages), tokenize=False,
                                                          add_generation_prompt=True)
            return flatten_messages(model_input.messages)
        return f"{model_input.source}\nTL;DR:"

    def generate(self, inputs):
        import torch

        # a chat template writes its own special tokens (BOS); the tokenizer must not add more
        templated = bool(getattr(self.tokenizer, "chat_template", None)) and any(i.messages for i in inputs)
        batch = self.tokenize([self.prompt(model_input) for model_input in inputs], add_special_tokens=not templated)
        with torch.inference_mode():
            output = self.model.generate(**batch, **self.generation_options(),
                                         pad_token_id=self.tokenizer.pad_token_id)
        new_tokens = output[:, batch["input_ids"].shape[1]:]
        return [text.strip() for text in self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)]
