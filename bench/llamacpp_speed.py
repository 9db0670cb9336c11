"""The llamacpp backbone's throughput, side by side in one run, on the same GGUF and the same prompts:

- against a bare loop over the same runtime (an ``xllamacpp.Server`` of the same settings, asked
  through its own chat endpoint, one prompt after another): the target is at least 0.95 of the
  bare loop's throughput (what the backbone adds: fitting prompts, tokenizing them, rendering the
  template, threads);
- with 4 parallel sequences against 1 (batches of 4, as a run sends them): reported;
- against ``hf-causal:FILE.gguf`` (the same weights dequantized into torch, greedy, batches of 4):
  tokens per second of both, reported.

The prompts are chat prompts asking for a summary of the first ``--chars`` characters of NEWTS test
articles (``../shared/data``), greedy, ``--new-tokens`` at most. The arms take turns for
``--rounds`` rounds; each figure is the median over rounds, and the ratio is the median of the
rounds' ratios. Tokens are counted as llama.cpp counts them in the bare loop's answers (the
backbone's outputs are checked equal to the bare loop's, so its token count is the same); for
hf-causal, as its tokenizer counts its own outputs. Loading is not timed.

    python bench/llamacpp_speed.py [--model FILE.gguf] [--prompts 8] [--rounds 3] [--threads 2]
"""

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

from record import record  # bench/ is the script's folder, first on sys.path

ROOT = Path(__file__).resolve().parents[1]
NEWTS = ROOT.parent / "shared" / "data" / "newts" / "NEWTS_test_600.csv"
BATCH = 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="a GGUF file (default: SmolLM2-135M-Instruct, scripts/real_models.py)")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--chars", type=int, default=1500)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip-hf", action="store_true", help="leave out the hf-causal arm")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    args = parser.parse_args()
    model = Path(args.model) if args.model else _smollm2()
    if not NEWTS.is_file():
        raise SystemExit(f"needs the shared NEWTS file at {NEWTS}")
    import ctrlkit

    inputs = _inputs(args.prompts, args.chars)
    settings = {"max_new_tokens": args.new_tokens, "threads": args.threads}
    one = ctrlkit.get_backbone(f"llamacpp:{model}", parallel=1, **settings)
    four = ctrlkit.get_backbone(f"llamacpp:{model}", parallel=BATCH, **settings)
    bare = _bare_server(model, one.context_size(), args.threads)
    one.load()
    four.load()
    times = {"bare": [], "backbone": [], "parallel_4": []}
    outputs = {}
    for _ in range(args.rounds):
        started = time.perf_counter()
        answers = [_bare_answer(bare, model_input, args.new_tokens) for model_input in inputs]
        times["bare"].append(time.perf_counter() - started)
        outputs["bare"] = [text for text, _ in answers]
        tokens = sum(count for _, count in answers)
        for name, backbone in (("backbone", one), ("parallel_4", four)):
            started = time.perf_counter()
            outputs[name] = [text for at in range(0, len(inputs), BATCH)
                             for text in backbone.generate(inputs[at:at + BATCH])]
            times[name].append(time.perf_counter() - started)
    ratios = [bare_s / ours for bare_s, ours in zip(times["bare"], times["backbone"])]
    ratio = statistics.median(ratios)
    entry = {
        "name": "llamacpp_speed", "ratio": round(ratio, 3), "met": ratio >= 0.95,
        "target": "llamacpp backbone throughput >= 0.95 of a bare loop over the same runtime, model and prompts",
        "model": model.name, "prompts": len(inputs), "chars": args.chars, "new_tokens": args.new_tokens,
        "threads": args.threads, "rounds": args.rounds, "generated_tokens": tokens,
        "seconds": {name: [round(s, 2) for s in values] for name, values in times.items()},
        "tokens_per_second": {name: round(tokens / statistics.median(values), 2) for name, values in times.items()},
        "round_ratios": [round(r, 3) for r in ratios],
        "outputs_equal_to_bare": outputs["backbone"] == outputs["bare"],
        "parallel_4_over_1": round(statistics.median(times["backbone"]) / statistics.median(times["parallel_4"]), 3),
        "parallel_4_outputs_equal_to_1": sum(a == b for a, b in zip(outputs["parallel_4"], outputs["backbone"])),
    }
    if not args.skip_hf:
        entry["hf_causal"] = _hf_causal(model, inputs, args.new_tokens, args.threads)
        entry["llamacpp_over_hf_causal_tokens_per_second"] = round(
            entry["tokens_per_second"]["backbone"] / entry["hf_causal"]["tokens_per_second"], 2)
    record(Path(args.out), entry)
    for key, value in entry.items():
        print(f"{key}: {value}")


def _smollm2() -> Path:
    sys.path.insert(0, str(ROOT / "scripts"))
    import real_models

    return real_models.checked("smollm2")


def _inputs(count: int, chars: int):
    from ctrlkit import ModelInput

    with NEWTS.open(encoding="utf-8", newline="") as handle:
        articles = [row["article"][:chars] for row, _ in zip(csv.DictReader(handle), range(count))]
    return [ModelInput(source=article, messages=(
        {"role": "user", "content": f"Summarize the following news article in three sentences.\n\n{article}"},))
        for article in articles]


def _bare_server(model: Path, context: int, threads: int):
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.n_ctx = context
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    params.verbosity = -1
    params.api_keys = ["bench-only"]
    return xllamacpp.Server(params)


def _bare_answer(server, model_input, new_tokens: int) -> tuple[str, int]:
    answer = server.handle_chat_completions({"messages": list(model_input.messages), "max_tokens": new_tokens,
                                             "temperature": 0, "cache_prompt": False})
    return answer["choices"][0]["message"]["content"].strip(), answer["usage"]["completion_tokens"]


def _hf_causal(model: Path, inputs, new_tokens: int, threads: int) -> dict:
    import torch

    import ctrlkit

    torch.set_num_threads(threads)
    backbone = ctrlkit.get_backbone(f"hf-causal:{model}", num_beams=1, max_new_tokens=new_tokens)
    backbone.load()
    started = time.perf_counter()
    outputs = [text for at in range(0, len(inputs), BATCH) for text in backbone.generate(inputs[at:at + BATCH])]
    seconds = time.perf_counter() - started
    tokens = sum(len(row) for row in backbone.tokenizer(outputs, add_special_tokens=False)["input_ids"])
    return {"seconds": round(seconds, 2), "generated_tokens": tokens, "tokens_per_second": round(tokens / seconds, 2),
            "batch": BATCH}


if __name__ == "__main__":
    main()
