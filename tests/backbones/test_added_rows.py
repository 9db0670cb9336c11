"""The rows a controller adds to an untrained model (a special token's embeddings, a table of input
embeddings) are drawn from seeds of what they are for: the same in every process, whatever order
the tokens come in and whatever drew random numbers before, with torch's random state left as it
was; and from the distribution transformers itself gives new rows."""

import pytest

pytest.importorskip("torch", reason="the neural backbone tests need torch")
pytest.importorskip("transformers", reason="the neural backbone tests need transformers")

import torch  # noqa: E402

import ctrlkit  # noqa: E402

from helpers import tiny_models  # noqa: E402

TOKENS = ["[TAG]", "<sep>", "<len_3>"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    # BART's output embeddings are its input embeddings; this GPT-2's are its own
    return {"bart": tiny_models.build_bart(root / "bart", init_std=0.3),
            "gpt2": tiny_models.build_gpt2(root / "gpt2", tied=False)}


def _loaded(path):
    backbone = ctrlkit.get_backbone(f"{'hf' if path.name == 'bart' else 'hf-causal'}:{path}", device="cpu")
    backbone.model  # loading is not what is checked here
    return backbone


def _token_rows(model, tokenizer, tokens) -> dict:
    """Each token's input row and, when the model has its own, output row."""
    tables = {"input": model.get_input_embeddings().weight}
    if model.get_output_embeddings().weight is not tables["input"]:
        tables["output"] = model.get_output_embeddings().weight
    return {(role, token): weight[tokenizer.convert_tokens_to_ids(token)].detach().clone()
            for role, weight in tables.items() for token in tokens}


@pytest.mark.parametrize("kind", ["bart", "gpt2"])
def test_a_tokens_rows_depend_on_its_text_alone_and_leave_the_random_state_as_it_was(models, kind):
    rows = []
    for order, draws_before in [(TOKENS, 0), (TOKENS[::-1], 1000)]:
        backbone = _loaded(models[kind])
        torch.randn(draws_before)  # whatever else the process drew first
        state = torch.get_rng_state()
        for token in order:  # one call per token, as controllers add them
            backbone.add_special_tokens([token])
        assert torch.equal(torch.get_rng_state(), state)
        rows.append(_token_rows(backbone.model, backbone.tokenizer, TOKENS))
    first, second = rows
    assert len(first) == (3 if kind == "bart" else 6) and first.keys() == second.keys()
    for key in first:
        assert torch.equal(first[key], second[key]), key
    # rows of their own: no two tokens (nor a token's input and output rows) share one
    distinct = {tuple(row.tolist()) for row in first.values()}
    assert len(distinct) == len(first)


@pytest.mark.parametrize("kind, std", [("bart", 0.3), ("gpt2", 0.02)])
def test_new_rows_have_the_distribution_transformers_gives_them(models, kind, std):
    """Against transformers' own resize (``mean_resizing=False``, as before this change): the same
    spread, for input rows and for a model's own output rows (BART's init_std, GPT-2's
    initializer_range)."""
    import transformers

    tokens = [f"<new_{i}>" for i in range(256)]
    backbone = _loaded(models[kind])
    backbone.add_special_tokens(tokens)
    ours = _token_rows(backbone.model, backbone.tokenizer, tokens)
    tokenizer = transformers.AutoTokenizer.from_pretrained(models[kind])
    auto = transformers.AutoModelForSeq2SeqLM if kind == "bart" else transformers.AutoModelForCausalLM
    model = auto.from_pretrained(models[kind])
    tokenizer.add_tokens(tokens, special_tokens=True)
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    theirs = _token_rows(model, tokenizer, tokens)
    for role in {role for role, _ in ours}:
        mine = torch.stack([row for (r, _), row in ours.items() if r == role])
        reference = torch.stack([row for (r, _), row in theirs.items() if r == role])
        assert mine.shape == reference.shape == (256, 64)
        # 16,384 values each: the sample spreads are within ~1% of the true one
        assert abs(mine.std().item() / reference.std().item() - 1) < 0.05, role
        assert abs(mine.std().item() / std - 1) < 0.05 and abs(mine.mean().item()) < 0.05 * std, role


def test_an_input_embedding_table_depends_on_its_key_and_size_alone_and_leaves_the_random_state(models):
    tables = []
    for count, draws_before in [(3, 0), (5, 1000)]:
        backbone = _loaded(models["bart"])
        torch.randn(draws_before)
        state = torch.get_rng_state()
        tables.append(backbone.add_input_embeddings("topic", count).weight.detach().clone())
        assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(tables[0], tables[1][:3])  # a longer table begins with the same rows
    other = _loaded(models["bart"]).add_input_embeddings("length", 3).weight.detach()
    assert not torch.equal(other, tables[0])
    wide = _loaded(models["bart"]).add_input_embeddings("topic", 256).weight.detach()
    assert abs(wide.std().item() / 0.3 - 1) < 0.05  # the model's init_std, as before this change
