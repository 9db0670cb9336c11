"""STAS at scale: TopicSpace.stas against a per-summary reference loop, side by side in one run.

A tf-idf TopicSpace of 50 topics is fitted on the bundled sample's topic documents (6 topics)
plus NEWTS topic documents (the first 44 NEWTS topics in sorted order). N summaries (default
100,000) are built deterministically by recombining sentences of NEWTS and sample references,
each paired with a requested topic. The toolkit scores all N with one ``TopicSpace.stas`` call;
the reference is the straightforward loop of the formula (per summary: ``vectorizer.transform([s])``,
cosine to each topic vector with numpy, divided by the max), timed on the first --subset summaries
and extrapolated per summary. Both must agree to 1e-9 on that subset. Target: reference seconds per
summary / toolkit seconds per summary >= 20. With --million, 1,000,000 summaries are scored in
chunks (built chunk by chunk) and the peak-RSS increase is reported; by default this runs only if
its time, estimated from the N-summary run, is under 3 minutes.

    python bench/stas_scale.py [--summaries 100000] [--subset 2000] [--million | --no-million] [--out bench/results.json]
"""

import argparse
import random
import re
import resource
import sys
import time
from pathlib import Path

import numpy as np

from record import record  # bench/ is the script's folder, first on sys.path

ROOT = Path(__file__).resolve().parents[1]
NEWTS = ROOT.parent / "shared" / "data" / "newts" / "NEWTS_test_600.csv"
TOPICS = 50
TARGET = 20.0
MILLION = 1_000_000
CHUNK = 100_000
MILLION_BUDGET_S = 180.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--summaries", type=int, default=100_000)
    parser.add_argument("--subset", type=int, default=2_000)
    parser.add_argument("--million", action=argparse.BooleanOptionalAction, default=None,
                        help="score 1,000,000 summaries in chunks and report peak memory (default: only if estimated < 3 min)")
    parser.add_argument("--newts", default=str(NEWTS))
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    args = parser.parse_args()

    if not Path(args.newts).is_file():
        print(f"skipped: NEWTS file not found at {args.newts} (needed for 50 topics)")
        return

    import ctrlkit
    from ctrlkit.topics import TopicSpace

    sample = ctrlkit.get_dataset("sample")
    newts = ctrlkit.get_dataset("newts", path=args.newts)
    pairs = list(sample.topic_documents())
    sample_topics = sorted({topic for topic, _ in pairs})
    newts_pairs = list(newts.topic_documents())
    extra = sorted({topic for topic, _ in newts_pairs} - set(sample_topics))[: TOPICS - len(sample_topics)]
    chosen = set(extra)
    pairs += [(topic, text) for topic, text in newts_pairs if topic in chosen]
    space = TopicSpace.fit(pairs, "tfidf")
    assert len(space.topics) == TOPICS, len(space.topics)

    references = [ref for example in newts.load("test") for ref in example.references]
    references += [ref for example in sample.load("test") for ref in example.references]
    sentences = sorted({s.strip() for ref in references for s in re.split(r"(?<=[.!?])\s+", ref) if s.strip()})

    def build(count: int, seed: int) -> tuple[list[str], list[str]]:
        rng = random.Random(seed)
        texts = [" ".join(rng.choices(sentences, k=rng.randint(1, 4))) for _ in range(count)]
        topics = rng.choices(space.topics, k=count)
        return texts, topics

    texts, topics = build(args.summaries, seed=0)

    # Reference loop on the first --subset summaries.
    subset = min(args.subset, len(texts))
    start = time.perf_counter()
    expected = _reference(space, texts[:subset], topics[:subset])
    reference_s = time.perf_counter() - start

    start = time.perf_counter()
    scores = space.stas(texts, topics)
    toolkit_s = time.perf_counter() - start
    max_diff = float(np.max(np.abs(scores[:subset] - expected)))
    identical = max_diff <= 1e-9

    ref_per = reference_s / subset
    kit_per = toolkit_s / len(texts)
    ratio = ref_per / kit_per

    estimate_s = kit_per * MILLION * 1.1  # plus building the summaries chunk by chunk
    run_million = args.million if args.million is not None else estimate_s < MILLION_BUDGET_S
    million = None
    if run_million:
        del texts, topics
        rss_before = _maxrss_mib()
        start = time.perf_counter()
        total = 0
        all_scores = np.empty(MILLION)
        for offset in range(0, MILLION, CHUNK):
            chunk_texts, chunk_topics = build(min(CHUNK, MILLION - offset), seed=1 + offset // CHUNK)
            all_scores[offset : offset + len(chunk_texts)] = space.stas(chunk_texts, chunk_topics)
            total += len(chunk_texts)
            del chunk_texts, chunk_topics
        million_s = time.perf_counter() - start
        rss_after = _maxrss_mib()
        million = {
            "summaries": total, "chunk": CHUNK, "seconds": round(million_s, 2),
            "peak_rss_mib_before": round(rss_before, 1), "peak_rss_mib_after": round(rss_after, 1),
            "peak_rss_delta_mib": round(rss_after - rss_before, 1),
        }
    million_note = ("run" if run_million else "skipped") + (
        " (--million)" if args.million else " (--no-million)" if args.million is False
        else f" (auto: estimated {estimate_s:.0f} s {'<' if run_million else '>='} {MILLION_BUDGET_S:.0f} s)")

    entry = {
        "name": "stas_scale", "ratio": round(ratio, 2), "target": f"reference / toolkit seconds per summary >= {TARGET:g}x",
        "met": bool(ratio >= TARGET and identical),
        "seconds_per_summary": {"reference": ref_per, "toolkit": kit_per},
        "reference_seconds": round(reference_s, 4), "reference_summaries": subset,
        "toolkit_seconds": round(toolkit_s, 4), "toolkit_summaries": len(scores),
        "reference_extrapolated_seconds": round(ref_per * len(scores), 2),
        "identical_to_1e-9": identical, "max_abs_difference": max_diff,
        "topics": TOPICS, "vectorizer": "tfidf",
        "topic_documents": f"sample ({len(sample_topics)} topics) + NEWTS ({len(extra)} topics)",
        "summaries_from": f"1-4 sentences sampled (seed 0) from {len(sentences)} reference sentences of NEWTS test + sample test",
        "million": million, "million_note": million_note,
    }
    record(Path(args.out), entry)
    print(f"{'method':<34} {'summaries':>10} {'seconds':>9} {'us/summary':>11}")
    print(f"{'reference loop (timed subset)':<34} {subset:>10,} {reference_s:>9.3f} {ref_per * 1e6:>11.2f}")
    print(f"{'reference loop (extrapolated)':<34} {len(scores):>10,} {ref_per * len(scores):>9.2f} {ref_per * 1e6:>11.2f}")
    print(f"{'TopicSpace.stas':<34} {len(scores):>10,} {toolkit_s:>9.3f} {kit_per * 1e6:>11.2f}")
    print(f"reference time per summary measured on the first {subset:,} summaries and extrapolated to {len(scores):,}")
    print(f"identical on the subset (max |diff| = {max_diff:.2e} <= 1e-9): {identical}")
    print(f"reference / toolkit = {ratio:.1f}x (target >= {TARGET:g}x): {'met' if entry['met'] else 'NOT met'}")
    if million:
        print(f"1,000,000 summaries in chunks of {CHUNK:,}: {million['seconds']:.1f} s, peak RSS {million['peak_rss_mib_before']:.0f} -> "
              f"{million['peak_rss_mib_after']:.0f} MiB (delta {million['peak_rss_delta_mib']:.0f} MiB) [{million_note}]")
    else:
        print(f"1,000,000-summary memory run {million_note}; enable with --million")


def _reference(space, texts, topics) -> np.ndarray:
    """The STAS formula, one summary at a time."""
    topic_vectors = np.asarray(space.topic_vectors, dtype=np.float64)
    topic_norms = np.linalg.norm(topic_vectors, axis=1)
    out = np.zeros(len(texts))
    for i, (text, topic) in enumerate(zip(texts, topics)):
        vector = space.vectorizer.transform([text])
        vector = np.asarray(vector.toarray() if hasattr(vector, "toarray") else vector, dtype=np.float64)[0]
        norm = np.linalg.norm(vector)
        cosines = np.zeros(len(topic_vectors))
        for j in range(len(topic_vectors)):
            if norm > 0 and topic_norms[j] > 0:
                cosines[j] = float(np.dot(vector, topic_vectors[j])) / (norm * topic_norms[j])
        best = cosines.max()
        out[i] = cosines[space.topic_index(topic)] / best if best > 0 else 0.0
    return out


def _maxrss_mib() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


if __name__ == "__main__":
    main()
