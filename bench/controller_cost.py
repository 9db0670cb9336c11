"""Inference cost of the topic controllers on one tiny BART, side by side in one run.

Every controller generates for the same examples with the same backbone instance; each output is
forced to the same number of new tokens, so the times differ only by what the controller adds
(a prefix, [TAG] tokens, or an embedding added to the encoder input). Rounds are interleaved
(prepend, tag, embed, prepend, ...) so drift on a noisy machine hits all three alike, and the
median per-example time over rounds is reported. Target: embed within 10% of prepend (the
published embedding implementation was about 10 times slower than control tokens).

    python bench/controller_cost.py [--rounds 7] [--examples 48] [--out bench/results.json]
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from record import record  # bench/ is the script's folder, first on sys.path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

CONTROLLERS = ("prepend", "tag", "embed")
TARGET = 1.10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--examples", type=int, default=48)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    args = parser.parse_args()

    import torch

    import ctrlkit
    import tiny_models
    from ctrlkit.engine.generation import generate
    from ctrlkit.topics import TopicSpace

    torch.set_num_threads(1)  # steadier timings on a shared machine
    dataset = ctrlkit.get_dataset("sample")
    examples = dataset.load("test")[: args.examples]
    space = TopicSpace.fit(dataset.topic_documents(), "tfidf")
    with tempfile.TemporaryDirectory() as directory:
        backbone = ctrlkit.get_backbone(f"hf:{tiny_models.build_bart(Path(directory) / 'bart', positions=1024)}", num_beams=1, device="cpu",
                                        max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens)
        controllers = {name: ctrlkit.get_controller(name) for name in CONTROLLERS}
        for controller in controllers.values():
            controller.fit([], space)
            controller.prepare(backbone)
        generate(controllers["prepend"], backbone, examples[:8], args.batch_size, False)  # warm up
        seconds = {name: [] for name in CONTROLLERS}
        for _ in range(args.rounds):
            for name, controller in controllers.items():
                start = time.perf_counter()
                generate(controller, backbone, examples, args.batch_size, False)
                seconds[name].append((time.perf_counter() - start) / len(examples))

    per_example = {name: statistics.median(values) for name, values in seconds.items()}
    ratio = per_example["embed"] / per_example["prepend"]
    entry = {
        "name": "controller_cost", "ratio": round(ratio, 4), "target": f"embed / prepend <= {TARGET}",
        "met": ratio <= TARGET, "seconds_per_example": {k: round(v, 6) for k, v in per_example.items()},
        "rounds": args.rounds, "examples": len(examples), "batch_size": args.batch_size,
        "new_tokens": args.new_tokens, "model": "tiny BART (d_model 64, 2+2 layers, 1024 positions: no input truncated), CPU, 1 thread",
    }
    record(Path(args.out), entry)
    print(f"{'controller':<10} {'ms/example':>10}")
    for name in CONTROLLERS:
        print(f"{name:<10} {per_example[name] * 1000:>10.2f}")
    print(f"embed / prepend = {ratio:.3f} (target <= {TARGET}): {'met' if entry['met'] else 'NOT met'}")


if __name__ == "__main__":
    main()
