"""ROUGE over 10,000 pairs: the toolkit's path against rouge-score in a plain loop, side by side in one run.

Pairs come from NEWTS (all 600 articles, both topics: 1,200 examples). Pair i takes example
i * 1,200 // N, so each example serves 8 or 9 consecutive pairs and any long prefix of the pairs
reuses references as often as all N do (which matters: both sides split a repeated reference once).
A pair's prediction is 2 to 4 consecutive sentences of the article (start and length drawn with
seed 0, sentences cut at . ! ? for speed), its references are the example's topic summary and
the same article's other topic summary (two references, so the maximum over references is
exercised). Both sides compute the metric's defaults: rouge1, rouge2, rougeL, rougeLsum F1,
Porter stemmer on, every text first put one sentence per line by ctrlkit.text.sentences (pysbd).

- toolkit: ``ctrlkit.get_metric("rouge").compute(predictions, examples)`` on all N pairs with
  default options, so one worker process per available core (the pool's start-up is timed too);
- reference: plain loops over the first --subset pairs, one putting the prediction and each
  reference one sentence per line (``"\\n".join(sentences(text))``), one calling
  ``rouge_scorer.RougeScorer(types, use_stemmer=True).score_multi(references, prediction)`` per
  pair; its time per pair is extrapolated to N (about 9 ms a pair here, so all 10,000 take 90 s;
  run with --subset 10000 once, the loop's time per pair came within 2% of the 3,000-pair prefix's).

Sentence splitting is counted on both sides: it is part of the metric. The reference's share is
reported apart; the toolkit does not make pysbd faster, it splits each distinct text once, in the
workers. The sentence cache (ctrlkit.text.sentences keeps 4,096 texts) and the toolkit's stem
cache are emptied before each side runs, so neither inherits the other's work. On the subset the
toolkit's values must equal the reference's exactly (==, and the same type: rouge-score gives an
int 0 for an empty text). The subset is also scored by the toolkit with workers=1, which separates
what one core gains from what the cores add. Target: reference / toolkit seconds per pair >= the
number of cores used, i.e. better than spreading the plain loop perfectly over the cores (the
issue sets no number for ROUGE). Other work on the machine slows the workers most: the 1-minute
load average before the run, and the CPU time the toolkit's processes got over its wall time,
are recorded.

    python bench/rouge_speed.py [--pairs 10000] [--subset 3000] [--out bench/results.json]
"""

import argparse
import os
import random
import re
import resource
import time
from pathlib import Path

from record import record  # bench/ is the script's folder, first on sys.path

ROOT = Path(__file__).resolve().parents[1]
NEWTS = ROOT.parent / "shared" / "data" / "newts" / "NEWTS_test_600.csv"
TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--subset", type=int, default=3_000)
    parser.add_argument("--newts", default=str(NEWTS))
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    args = parser.parse_args()

    if not Path(args.newts).is_file():
        print(f"skipped: NEWTS file not found at {args.newts} (the pairs are built from its articles and summaries)")
        return

    from rouge_score import rouge_scorer

    import ctrlkit
    from ctrlkit import Example
    from ctrlkit.text import sentences
    from ctrlkit_metrics import rouge, rouge_pairs

    examples = ctrlkit.get_dataset("newts", path=args.newts, test_fraction=1.0).load("test")
    by_line = {}
    for example in examples:
        by_line.setdefault(example.meta["line"], []).append(example.references[0])
    rng = random.Random(0)
    predictions, pairs = [], []
    for i in range(args.pairs):
        example = examples[i * len(examples) // args.pairs]
        cut = [s for s in re.split(r"(?<=[.!?])\s+", example.document) if s.strip()]
        length = rng.randint(2, 4)
        start = rng.randrange(max(1, len(cut) - length + 1))
        predictions.append(" ".join(cut[start : start + length]))
        own = example.references[0]
        pairs.append(Example(example.id, example.document, [own] + [r for r in by_line[example.meta["line"]] if r != own]))
    subset = min(args.subset, len(pairs))
    references_per_pair = sum(len(e.references) for e in pairs) / len(pairs)

    # Reference: rouge-score in a plain loop, sentence splitting timed apart.
    load_before = os.getloadavg()[0]  # other work on the machine slows both sides, and the workers most
    sentences.cache_clear()
    scorer = rouge_scorer.RougeScorer(TYPES, use_stemmer=True)
    start = time.perf_counter()
    prepared = [("\n".join(sentences(p)), ["\n".join(sentences(r)) for r in e.references])
                for p, e in zip(predictions[:subset], pairs[:subset])]
    split_s = time.perf_counter() - start
    start = time.perf_counter()
    expected = [scorer.score_multi(refs, prediction) for prediction, refs in prepared]
    score_s = time.perf_counter() - start
    reference_s = split_s + score_s

    def timed(metric, count):
        sentences.cache_clear()
        rouge_pairs.stem.cache_clear()
        cpu = _cpu_seconds()
        start = time.perf_counter()
        result = metric.compute(predictions[:count], pairs[:count])
        return result, time.perf_counter() - start, _cpu_seconds() - cpu

    cores = rouge.available_cores()
    method = rouge.start_method()
    result, toolkit_s, toolkit_cpu_s = timed(ctrlkit.get_metric("rouge"), len(pairs))
    one_core, one_core_s, _ = timed(ctrlkit.get_metric("rouge", workers=1), subset)

    def agrees(values):
        return all(type(values[name][i]) is type(expected[i][name].fmeasure) and values[name][i] == expected[i][name].fmeasure
                   for i in range(subset) for name in TYPES)

    identical = agrees(result.per_example) and agrees(one_core.per_example)

    ref_per = reference_s / subset
    kit_per = toolkit_s / len(pairs)
    one_per = one_core_s / subset
    ratio = ref_per / kit_per
    workers = min(cores, len(pairs) // rouge.PAIRS_PER_WORKER[method])  # as Rouge.compute decides
    parallel = workers > 1
    used = workers if parallel else 1
    entry = {
        "name": "rouge_speed", "ratio": round(ratio, 2),
        "target": f"reference / toolkit seconds per pair >= cores used ({used})",
        "met": bool(identical and ratio >= used),
        "seconds_per_pair": {"reference": ref_per, "toolkit": kit_per, "toolkit_workers_1": one_per},
        "reference_seconds": round(reference_s, 3), "reference_split_seconds": round(split_s, 3),
        "reference_pairs": subset, "reference_extrapolated_seconds": round(ref_per * len(pairs), 2),
        "toolkit_seconds": round(toolkit_s, 3), "toolkit_pairs": len(pairs),
        "toolkit_cpu_seconds": round(toolkit_cpu_s, 3),  # this process and its workers: / wall = cores it got
        "toolkit_workers_1_seconds": round(one_core_s, 3), "toolkit_workers_1_pairs": subset,
        "ratio_workers_1": round(ref_per / one_per, 2),
        "cores": cores, "workers": used, "start_method": method if parallel else None,
        "identical": identical, "load_average_1min_before": round(load_before, 2),
        "types": TYPES, "references_per_pair": references_per_pair,
        "pairs_from": f"NEWTS, {len(examples)} examples: 2-4 consecutive article sentences (seed 0) against both topic summaries",
    }
    record(Path(args.out), entry)
    print(f"{'method':<36} {'pairs':>7} {'seconds':>8} {'ms/pair':>8}")
    print(f"{'rouge-score loop (timed subset)':<36} {subset:>7,} {reference_s:>8.2f} {ref_per * 1e3:>8.3f}")
    print(f"{'  of which sentence splitting':<36} {subset:>7,} {split_s:>8.2f} {split_s / subset * 1e3:>8.3f}")
    if subset < len(pairs):
        print(f"{'rouge-score loop (extrapolated)':<36} {len(pairs):>7,} {ref_per * len(pairs):>8.2f} {ref_per * 1e3:>8.3f}")
    print(f"{'toolkit, workers=1':<36} {subset:>7,} {one_core_s:>8.2f} {one_per * 1e3:>8.3f}")
    label = f"toolkit, default ({used} workers" + (f", {method})" if parallel else ")")
    print(f"{label:<36} {len(pairs):>7,} {toolkit_s:>8.2f} {kit_per * 1e3:>8.3f}")
    print(f"toolkit CPU time {toolkit_cpu_s:.2f} s over {toolkit_s:.2f} s wall: {toolkit_cpu_s / toolkit_s:.2f} cores busy on average "
          f"(load average before the run: {load_before:.2f})")
    print(f"identical to rouge-score on the first {subset:,} pairs (4 types, ==): {identical}")
    print(f"reference / toolkit = {ratio:.2f}x with {used} of {cores} cores (workers=1: {ref_per / one_per:.2f}x; "
          f"target >= {used}x): {'met' if entry['met'] else 'NOT met'}")


def _cpu_seconds() -> float:
    """User and system CPU time of this process and of its finished children (the workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    main()
