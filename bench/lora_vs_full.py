"""LoRA against full fine-tuning of the same model, side by side in one run: time per optimizer
step, peak memory and the share of parameters trained.

The model is a BART built offline (``ctrlkit.tiny_models.build_bart``, 2+2 layers, ``--d-model``
wide, random weights: its summaries mean nothing, its cost is what is measured), trained with
``ctrlkit.train`` on the bundled sample (controller ``none``, batch 4), once in full and
once with ``peft="lora"`` (rank 8, peft's default target modules for BART). Each training runs in
a fresh process with one torch thread, so that one's memory does not hide the other's:

- step time (the variants take turns): (seconds of a training of ``--steps`` + 2 steps - seconds of one of 2 steps) /
  ``--steps``, so loading the model and the data cancels out; the median of ``--repeats`` pairs;
- peak memory: the process's maximum resident set size (``ru_maxrss``) over the longer training;
- trainable share: what ``training.json`` records (``trainable_parameters / total_parameters``).

No target: the figures are reported as measured (the issue asks for them side by side).

    python bench/lora_vs_full.py [--d-model 512] [--steps 10] [--repeats 3]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from record import record  # bench/ is the script's folder, first on sys.path

ROOT = Path(__file__).resolve().parents[1]
WARMUP_STEPS = 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    parser.add_argument("--child", nargs=3, metavar=("MODEL", "PEFT", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return

    from ctrlkit.tiny_models import build_bart

    with tempfile.TemporaryDirectory() as folder:
        model = build_bart(Path(folder) / "model", d_model=args.d_model)
        found = _measure(model, ("full", "lora"), args.steps, args.repeats)
    full, lora = found["full"], found["lora"]
    entry = {
        "name": "lora_vs_full", "ratio": None, "met": None,
        "target": "none: step time, peak memory and trainable share side by side", "d_model": args.d_model, "steps": args.steps, "repeats": args.repeats,
        "full": full, "lora": lora,
        "step_time_ratio_full_over_lora": round(full["step_seconds"] / lora["step_seconds"], 2),
        "peak_memory_ratio_full_over_lora": round(full["peak_mib"] / lora["peak_mib"], 2),
    }
    record(Path(args.out), entry)
    print(f"BART 2+2 layers, d_model {args.d_model}, batch 4, {args.steps} steps (median of {args.repeats})")
    print(f"{'':6} {'step (s)':>9} {'peak (MiB)':>11} {'trainable':>12} {'share':>8}")
    for variant, figures in found.items():
        print(f"{variant:6} {figures['step_seconds']:9.4f} {figures['peak_mib']:11.1f} "
              f"{figures['trainable_parameters']:12,} {figures['trainable_share']:8.2%}")
    print(f"full / lora: step time {entry['step_time_ratio_full_over_lora']}x, "
          f"peak memory {entry['peak_memory_ratio_full_over_lora']}x")


def _measure(model: Path, variants: tuple[str, ...], steps: int, repeats: int) -> dict:
    """Each variant's median step time over ``repeats`` pairs of trainings and the peak memory of
    its longest; the variants take turns in every repeat, so that the machine's load falls on both."""
    times, peaks, last = ({variant: [] for variant in variants} for _ in range(3))
    for _ in range(repeats):
        for variant in variants:
            short = _train(model, variant, WARMUP_STEPS)
            long = _train(model, variant, WARMUP_STEPS + steps)
            times[variant].append((long["seconds"] - short["seconds"]) / steps)
            peaks[variant].append(long["peak_mib"])
            last[variant] = long
    return {variant: {"step_seconds": round(statistics.median(times[variant]), 4),
                      "peak_mib": round(max(peaks[variant]), 1),
                      **{key: last[variant][key] for key in ("trainable_parameters", "total_parameters",
                                                            "trainable_share")}}
            for variant in variants}


def _train(model: Path, variant: str, steps: int) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, __file__, "--child", str(model), variant, str(steps)],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        sys.exit(f"training ({variant}, {steps} steps) failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _child(model: str, variant: str, steps: str) -> None:
    """One training in this process; prints its seconds, peak memory and parameter counts."""
    import resource
    import time

    import torch

    from ctrlkit.training.trainer import train

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        trained = train(backbone=f"hf:{model}", out=str(Path(folder) / "out"), controller="none", split="test",
                        max_steps=int(steps), batch_size=4, peft=None if variant == "full" else variant)
        seconds = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"seconds": seconds, "peak_mib": peak_kib / 1024,
                      **{key: trained[key] for key in ("trainable_parameters", "total_parameters",
                                                       "trainable_share")}}))


if __name__ == "__main__":
    main()
