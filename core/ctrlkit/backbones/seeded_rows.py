"""Embedding rows a controller adds to a model, the same in every process.

A token a controller adds to a model without it (tag's ``[TAG]`` on an untrained model) and a
table of input embeddings (embed's topics) get new rows before any training. Drawn from torch's
random state of the process, they would differ between a local run and a Ray worker, and with
whatever drew random numbers before. Here each row comes from a seed of its own, the SHA-256 of
what it is for (the token's text; the table's key and the row's index), so it depends on neither
the process nor the order tokens are added in, and the process's random state is left as it was.
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager


def seed(*names: str) -> int:
    """A 64-bit seed: the first 8 bytes of the SHA-256 of ``names``."""
    return int.from_bytes(hashlib.sha256("\0".join(names).encode()).digest()[:8], "big")


@contextmanager
def random_state_kept(model):
    """Puts torch's random state of the process back after the block: the CPU's, and that of the
    CUDA device ``model`` is on."""
    import torch

    device = model.device
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        yield


def resize(model, vocabulary: int) -> None:
    """``model.resize_token_embeddings`` to ``vocabulary`` rows (new ones as transformers draws them,
    ``mean_resizing`` off: for rows that are overwritten next), the random state kept."""
    with random_state_kept(model):
        model.resize_token_embeddings(vocabulary, mean_resizing=False)


def add_token_rows(model, token_ids: dict[str, int], vocabulary: int) -> None:
    """Resize ``model`` to ``vocabulary`` tokens; give each token in ``token_ids`` (text: id) that
    got a new row an input row, and an output row when they are not tied, each drawn as
    transformers draws a new row (the model's own initialization of a fresh embedding or linear
    layer) but from the seed of the token's text."""
    import torch

    before = model.get_input_embeddings().weight.shape[0]
    with random_state_kept(model), torch.no_grad():
        model.resize_token_embeddings(vocabulary, mean_resizing=False)
        tables = {"input": model.get_input_embeddings()}
        output = model.get_output_embeddings()
        if output is not None and output.weight is not tables["input"].weight:
            tables["output"] = output
        for token, index in token_ids.items():
            if index < before:  # a row the model had (a vocabulary padded beyond the tokenizer's)
                continue
            for role, table in tables.items():
                row = _fresh_row(model, table, seed(f"{role} embedding", token))
                table.weight[index] = row.weight[0].to(table.weight)
                if getattr(table, "bias", None) is not None:
                    table.bias[index] = row.bias[0].to(table.bias)


def _fresh_row(model, table, row_seed: int):
    """A one-row layer of ``table``'s kind, drawn on the CPU (the same on any device) from
    ``row_seed`` and initialized by the model, as resizing initializes the layer it makes."""
    import torch

    torch.random.default_generator.manual_seed(row_seed)  # the CPU's only; the caller puts it back
    if isinstance(table, torch.nn.Embedding):
        row = torch.nn.Embedding(1, table.embedding_dim)
    else:
        row = torch.nn.Linear(table.in_features, 1, bias=table.bias is not None)
    model._init_weights(row)
    return row


def normal_rows(count: int, width: int, std: float, *names: str):
    """``count`` rows of ``width`` values from N(0, std²), row ``i`` from the seed of ``names`` and
    ``i`` (a longer table begins with the same rows)."""
    import torch

    return torch.stack([torch.randn(width, generator=torch.Generator().manual_seed(seed(*names, str(i)))) * std
                        for i in range(count)])
