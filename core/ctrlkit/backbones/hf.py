"""Backbone ``hf``: any transformers sequence-to-sequence model (BART, T5, PEGASUS, ...).

Guidance goes before the document, ``guidance <sep> document`` (GSum-style guidance as text).
Chat messages, from the prompt controller, are flattened to one prompt for instruction-tuned
seq2seq models. Topic (or other) embeddings asked for in ``ModelInput.features
["input_embeddings"]`` are added to every encoder input vector through the model's own
``inputs_embeds`` path, so the encoder sees word + position + topic embedding.

An input over the limit loses the end of its document: a plain source (or guidance and source)
keeps its first tokens, as the tokenizer cuts; a prompt keeps what follows its document too (an
instruction after it, the cue to answer, and in a few-shot prompt the document itself, which
comes after the demonstrations), as :mod:`.document_cut` cuts, and a few-shot prompt loses its
earliest demonstrations where they leave the document too little room. A prompt whose document
is in none of its messages, or that is over the limit without it, keeps its first tokens.
"""

from __future__ import annotations

from pathlib import Path

from ..chat import flatten_messages
from ..errors import ConfigurationError
from ..types import SEP
from . import adapters, seeded_rows, value_prefixes
from .document_cut import MARK
from .hf_base import HFBackbone

INPUT_EMBEDDINGS_FILE = "ctrlkit_input_embeddings.safetensors"


class HFSeq2Seq(HFBackbone):
    """Any transformers sequence-to-sequence model, by path or hub id (hf:PATH); trainable."""

    capabilities = frozenset({"text", "guidance", "messages", "input_embeddings", "training", "value_prefixes"})
    flattens_messages = True
    auto_model_class = "AutoModelForSeq2SeqLM"

    def __init__(self, **options):
        super().__init__(**options)
        self.input_embeddings = None  # a torch ModuleDict of tables, made on first use

    def _after_load(self):
        import torch

        self._tokenizer.truncation_side = "right"  # a text the document cut cannot fit keeps its head
        self.input_embeddings = torch.nn.ModuleDict()
        saved = Path(self.options["model"]) / INPUT_EMBEDDINGS_FILE
        if saved.is_file():
            for key, weight in adapters.load_weights_file(saved, self.name).items():
                table = torch.nn.Embedding.from_pretrained(weight, freeze=False)
                self.input_embeddings[key] = table.to(self.device, dtype=self.model.dtype)

    def add_input_embeddings(self, key: str, count: int):
        """A trainable table of ``count`` vectors the size of the token embeddings, added to the
        encoder input when an input names one of them; a saved table of that size is reused. A new
        table's rows are drawn from seeds of ``key`` and their index, the same in every process
        (:mod:`.seeded_rows`)."""
        import torch

        self._load()
        if key in self.input_embeddings:
            if self.input_embeddings[key].num_embeddings != count:
                raise ConfigurationError(f"the model's saved '{key}' embeddings have "
                                         f"{self.input_embeddings[key].num_embeddings} rows, not {count}")
            return self.input_embeddings[key]
        width = self.model.get_input_embeddings().embedding_dim
        std = getattr(self.model.config, "init_std", 0.02)
        rows = seeded_rows.normal_rows(count, width, std, "input embeddings", key)
        table = torch.nn.Embedding.from_pretrained(rows, freeze=False)
        self.input_embeddings[key] = table.to(self.device, dtype=self.model.dtype)
        return self.input_embeddings[key]

    def prompt(self, model_input) -> str:
        """The text the encoder reads for an input."""
        text = flatten_messages(model_input.messages) if model_input.messages else model_input.source
        return f"{model_input.guidance} {SEP} {text}" if model_input.guidance else text

    def texts(self, inputs) -> list[str]:
        """The text the encoder reads for each input."""
        return [self.prompt(model_input) for model_input in inputs]

    def fitted_ids(self, inputs, limit: int) -> list[list[int]]:
        """The token ids of each input's text within ``limit``: a prompt over it has its document's
        end cut, where that can be; any other text keeps its first tokens (counted in ``truncated``,
        and a prompt among them in ``truncated_tail``)."""
        ids, whole = self.fit_to_limit(inputs, self.texts(inputs), [True] * len(inputs), limit)
        self.truncated_tail += sum(bool(inputs[index].messages) for index in whole)
        return ids

    def document_parts(self, model_input):
        """A prompt's text split around its document, as every transformers backbone splits it; None
        for a plain source (the tokenizer's cut already keeps its head) and where the guidance before
        the prompt holds the mark that stands for the document."""
        return None if MARK in (model_input.guidance or "") else super().document_parts(model_input)

    def encoder_inputs(self, inputs) -> dict:
        """``input_ids`` and ``attention_mask``, or ``inputs_embeds`` when inputs add embeddings."""
        batch = self.padded(self.fitted_ids(inputs, self.input_limit()), self.tokenizer.padding_side)
        batch = {key: value.to(self.device) for key, value in batch.items()}
        requested = [model_input.features.get("input_embeddings", {}) for model_input in inputs]
        if not any(requested):
            return batch
        import torch

        embeds = self.token_embeddings(batch.pop("input_ids"))
        for key in sorted({key for wanted in requested for key in wanted}):
            if key not in self.input_embeddings:
                raise ConfigurationError(f"backbone '{self.name}' has no '{key}' embeddings; "
                                         "the controller's prepare() must add them")
            rows = [wanted[key] for wanted in requested]
            if any(row is None for row in rows):
                raise ConfigurationError(f"every input of a batch must name a '{key}' embedding")
            indices = torch.tensor(rows, device=self.device)
            embeds = embeds + self.input_embeddings[key](indices)[:, None, :]
        batch["inputs_embeds"] = embeds
        return batch

    def token_embeddings(self, input_ids):
        """What the encoder itself makes of ``input_ids``: some models scale the embedding inside
        the embedding module (BART), others in the encoder (PEGASUS), others not at all (T5)."""
        encoder = self.model.get_encoder()
        embedding = getattr(encoder, "embed_tokens", None) or self.model.get_input_embeddings()
        embeds = embedding(input_ids)
        if not hasattr(embedding, "embed_scale"):
            embeds = embeds * getattr(encoder, "embed_scale", 1.0)
        return embeds

    def generate(self, inputs):
        outputs: list[str] = [""] * len(inputs)
        for positions in self._prefix_groups(inputs):
            for position, text in zip(positions, self._generate_with_active_adapter([inputs[i] for i in positions])):
                outputs[position] = text
        return outputs

    def _generate_with_active_adapter(self, inputs) -> list[str]:
        import torch

        with torch.inference_mode():
            output = self.model.generate(**self.encoder_inputs(inputs), **self.generation_options())
        return [text.strip() for text in self.tokenizer.batch_decode(output, skip_special_tokens=True)]

    def loss(self, inputs, targets: list[str], max_target_tokens: int):
        """Mean token cross-entropy of ``targets`` given ``inputs`` (for ``ctrlkit train``); with one
        prefix per value, each value's inputs run under their own prefix, their losses weighted by
        their target tokens, so that the mean is the batch's and each prefix learns from its inputs only."""
        if not self.value_prefixes:
            self._prefix_groups(inputs)  # refuses inputs that ask for a prefix
            return self._loss_with_active_adapter(inputs, targets, max_target_tokens)[0]
        total, tokens = 0, 0
        for positions in self._prefix_groups(inputs):
            loss, counted = self._loss_with_active_adapter([inputs[i] for i in positions],
                                                           [targets[i] for i in positions], max_target_tokens)
            total, tokens = total + loss * counted, tokens + counted
        return total / tokens

    def _loss_with_active_adapter(self, inputs, targets: list[str], max_target_tokens: int):
        """The mean token cross-entropy, and how many target tokens it averages."""
        labels = self.tokenizer(text_target=targets, truncation=True, max_length=max_target_tokens,
                                padding=True, return_tensors="pt")["input_ids"].to(self.device)
        labels[labels == self.tokenizer.pad_token_id] = -100
        return self.model(**self.encoder_inputs(inputs), labels=labels).loss, int((labels != -100).sum())

    def _prefix_groups(self, inputs):
        """The positions of the inputs that share a prefix, one group per prefix, each made active
        as it is iterated (:mod:`.value_prefixes`); all inputs in one group for a model without
        per-value prefixes, which refuses inputs that ask for one."""
        self._load()  # which loads the prefixes a model folder holds
        if not self.value_prefixes:
            wanted = value_prefixes.wanted_keys(inputs)
            if wanted:
                raise ConfigurationError(f"backbone '{self.name}' holds no per-value prefixes, but inputs ask for "
                                         f"{', '.join(wanted)}: train them with ctrlkit train --peft prefix -c "
                                         "soft-prefix")
            return [list(range(len(inputs)))]
        chosen = value_prefixes.groups(inputs, self.value_prefixes, self.name)
        return _activating(self.model, chosen)

    def trainable_parameters(self):
        return [*super().trainable_parameters(), *self.input_embeddings.parameters()]

    def train_mode(self, training: bool) -> None:
        super().train_mode(training)
        self.input_embeddings.train(training)

    def save(self, directory):
        super().save(directory)
        if len(self.input_embeddings):
            from safetensors.torch import save_file

            tables = {key: table.weight.detach().cpu().contiguous() for key, table in self.input_embeddings.items()}
            save_file(tables, str(Path(directory) / INPUT_EMBEDDINGS_FILE))


def _activating(model, chosen):
    """Each group's positions, its prefix made the model's active adapter first."""
    for name, positions in chosen:
        model.set_adapter(name)
        yield positions
