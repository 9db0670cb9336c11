"""Backbone ``hf-causal``: decoder-only language models (GPT-2, Llama, Qwen, ...).

Chat messages go through the tokenizer's chat template when it has one, else they are
flattened to plain text; a plain source becomes ``source + "\\nTL;DR:"``. A base model (no chat
template) counts as one that only flattens messages, so the prompt controller's hard prompt
reaches it as plain text, not as a ``System:``/``User:`` transcript. Batches are padded
on the left so every prompt ends where generation starts, and only the new tokens are returned.
A prompt over the input limit loses the end of its document (the input's ``source``), not its
head or its cue to answer, and a few-shot prompt its earliest demonstrations where they leave the
document too little room (:mod:`.document_cut`); one whose document no message holds, or that
cannot be cut enough, is cut from the left by the tokenizer, keeping the cue.

Trainable: a training example is the prompt generation would feed, then the reference summary
and EOS; the loss counts the summary and EOS tokens only.
"""

from __future__ import annotations

import inspect

from ..errors import ConfigurationError
from .hf_base import HFBackbone
from .prompt_fitting import ChatPromptFitting


class HFCausal(ChatPromptFitting, HFBackbone):
    """Any transformers decoder-only model, by path or hub id (hf-causal:PATH); chat template when
    present; trainable."""

    capabilities = frozenset({"text", "messages", "training"})
    auto_model_class = "AutoModelForCausalLM"
    reads_gguf = True

    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self.tokenizer, "chat_template", None))

    def render_chat(self, messages) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

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

    def generate(self, inputs):
        import torch

        batch = self.padded(self.fitted_ids(inputs, self.input_limit()), "left")
        batch = {key: value.to(self.device) for key, value in batch.items()}
        with torch.inference_mode():
            output = self.model.generate(**batch, **self.generation_options(),
                                         pad_token_id=self.tokenizer.pad_token_id)
        new_tokens = output[:, batch["input_ids"].shape[1]:]
        return [text.strip() for text in self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)]

    def training_prompt_limit(self, max_target_tokens: int) -> int:
        """The input limit generation uses, lowered where the model's positions leave less room
        beside ``max_target_tokens`` target tokens."""
        positions = self.position_limit()
        if positions is None:
            return self.input_limit()
        if max_target_tokens >= positions:
            raise ConfigurationError(f"backbone '{self.name}': --max-target-tokens {max_target_tokens} leaves no "
                                     f"room for the prompt in the model's {positions} positions")
        return min(self.input_limit(), positions - max_target_tokens)

    def training_batch(self, inputs, targets: list[str], max_target_tokens: int) -> dict:
        """What :meth:`loss` feeds the model: each row is the prompt generation would feed (cut as
        :meth:`fitted_ids` cuts), then the target's first tokens and EOS, ``max_target_tokens`` at most; rows are
        padded on the left, as in generation. ``labels`` are the token ids of the target and EOS,
        -100 on the prompt and the padding; ``position_ids`` count from each row's first real
        token, as ``generate`` counts them, where the model takes them."""
        import torch

        limit = self.training_prompt_limit(max_target_tokens)
        prompts = self.fitted_ids(inputs, limit)
        eos = self.tokenizer.eos_token_id
        end = [] if eos is None else [eos]
        answers = [ids[:max_target_tokens - len(end)] + end
                   for ids in self.tokenizer(list(targets), add_special_tokens=False, verbose=False)["input_ids"]]
        batch = self.padded([prompt + answer for prompt, answer in zip(prompts, answers)], "left")
        width = batch["input_ids"].shape[1]
        batch["labels"] = torch.tensor([[-100] * (width - len(answer)) + answer for answer in answers])
        if self._takes_position_ids():
            attention_mask = batch["attention_mask"]
            batch["position_ids"] = (attention_mask.cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)
        return {key: value.to(self.device) for key, value in batch.items()}

    def _takes_position_ids(self) -> bool:
        """Whether the model's own forward takes ``position_ids`` (behind a LoRA adapter, the base
        model's; peft's prefix tuning ignores them, with a warning, so none are given to it)."""
        config = getattr(self.model, "active_peft_config", None)
        if config is not None and config.is_prompt_learning:
            return False
        base = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
        return "position_ids" in inspect.signature(base.forward).parameters

    def loss(self, inputs, targets: list[str], max_target_tokens: int):
        """Mean token cross-entropy of ``targets`` (and EOS) after the prompts (for ``ctrlkit train``)."""
        return self.model(**self.training_batch(inputs, targets, max_target_tokens)).loss
