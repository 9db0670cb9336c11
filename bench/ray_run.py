"""Data-parallel runs on Ray: ``ctrlkit run --executor ray --workers 2`` and ``--workers 1``
against the same run on the local executor, side by side in one benchmark.

The workload is one whose generation dominates: the bundled sample (120 examples: 60 articles,
each asked for two topics, so 60 distinct inputs, each generated twice as any run does), controller
``none``, no baseline, a tiny BART on the CPU (``ctrlkit.tiny_models.build_bart``: d_model 256,
2+2 layers, 1024 positions so that no input is cut, weights drawn with std 0.3 so that outputs
differ from input to input), beam search with every output forced to exactly N new tokens (the
same work for every batch on every side), ``--no-cache`` (nothing found, nothing stored; the
workers' caches untouched too), ``--bootstrap 0``, scored with ``readability`` (the cheapest
metric that applies to the sample: about 1 s of the driver's, counted in every side).

Sides, each a fresh ``ctrlkit run`` subprocess timed end to end: interpreter start, imports,
connecting to Ray (the Ray sides, by ``--address``), starting the workers, which import torch and
load the model themselves while the driver reads the data, generation, scoring, writing the
outputs. Building the model and starting the cluster are not timed:

* local, one torch thread (OMP_NUM_THREADS=1): the baseline of both targets, a process doing what
  one worker does;
* ray with 2 workers and with 1 worker (one torch thread each: Ray sets OMP_NUM_THREADS to the one
  CPU each worker holds);
* local with as many torch threads as the machine has CPUs, torch's own default, for the record
  (no target: intra-op threads are another way to use the cores).

Every process that generates imports torch and transformers and loads the model: about 9 s of
CPU here, paid once by a local run, and by each worker, in parallel, on Ray. The generation is
made long enough (160 new tokens) that this fixed cost does not decide the comparison.

Targets: local / ray-2 median seconds >= 1.6 (data-parallel speedup on 2 cores), and ray-1 / local
<= 1.15 (the executor's overhead at most 15%). Agreement: each Ray side's predictions are compared
with the local ones, text for text, in every round (a worker's batches are not the local batches,
so a padded model may differ in the last bits: :mod:`ctrlkit.ray_generation`); the count that
differ is reported.

The cluster: ``--address`` of a running one; else, for each Ray side in each round, a cluster of
this machine started before the clock starts, as a user's cluster is already running: ``ray start
--head --node-ip-address=127.0.0.1 --num-cpus=N`` (N: the machine's CPUs; ``tests/local_ray.py``:
loopback only, a token of this run's own in the environment only), waited on until its processes
are idle (a new cluster starts its idle workers in the background), and stopped after the side,
so that no cluster runs beside a local side. Its start and settling seconds are reported apart.
Both sides use glibc malloc with fixed thresholds (the workers inherit them from the cluster), as
``pipeline_overhead.py`` explains. Rounds run the sides forward and backward in turn (ray-1, local,
ray-2, local with all threads; then the reverse), so that the local side runs next to each Ray
side, and a machine whose speed drifts over minutes (this one ran the same local side in
77.7 s and, ten minutes later, 118.3 s) moves both sides of a pair alike; an even number of rounds
balances which side goes first. Medians are reported, and each round's own ratios.

    python bench/ray_run.py [--rounds 2] [--address HOST:PORT] [--new-tokens 160] [--d-model 256]
                            [--batch-size 16] [--num-beams 4] [--out bench/results.json]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path

from pipeline_overhead import timed  # bench/ is the script's folder, first on sys.path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # local_ray: the tests' cluster of one machine
SPEEDUP_TARGET = 1.6
OVERHEAD_TARGET = 1.15
POSITIONS = 1024
FIXED_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(256 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}
SIDES = ("local", "ray2", "ray1", "local_all_threads")
RAY_SIDES = ("ray2", "ray1")
ORDER = ("ray1", "local", "ray2", "local_all_threads")
"""A round's sides, the local one beside each Ray side; every other round runs them backwards."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--address", help="a running Ray cluster (default: one of this machine, started for "
                                          "each Ray side, untimed)")
    parser.add_argument("--new-tokens", type=int, default=160)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--num-beams", type=int, default=4)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    args = parser.parse_args()

    from record import record  # bench/ is the script's folder, first on sys.path

    import local_ray
    from ctrlkit.tiny_models import build_bart

    ctrlkit = Path(sys.executable).parent / "ctrlkit"
    if not ctrlkit.exists():
        sys.exit(f"no ctrlkit entry point next to {sys.executable}")
    os.environ.update(FIXED_MALLOC, HF_HUB_OFFLINE="1")
    if not args.address:
        local_ray.set_environment()  # before any cluster starts; the commands inherit it
    cpus = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as temporary:
        temporary = Path(temporary)
        model = build_bart(temporary / "bart", positions=POSITIONS, d_model=args.d_model, init_std=0.3)
        command = [str(ctrlkit), "run", "-d", "sample", "-c", "none", "-b", f"hf:{model}", "--no-baseline",
                   "--no-cache", "--bootstrap", "0", "-m", "readability", "--batch-size", str(args.batch_size),
                   "--device", "cpu", "--set", f"hf.max_new_tokens={args.new_tokens}",
                   "--set", f"hf.min_new_tokens={args.new_tokens}", "--set", f"hf.num_beams={args.num_beams}"]
        sides = {
            "local": ([], {"OMP_NUM_THREADS": "1"}),
            "ray2": (["--executor", "ray", "--workers", "2"], {"OMP_NUM_THREADS": "1"}),
            "ray1": (["--executor", "ray", "--workers", "1"], {"OMP_NUM_THREADS": "1"}),
            "local_all_threads": ([], {"OMP_NUM_THREADS": str(cpus)}),
        }
        seconds = {side: [] for side in SIDES}
        generate_s = {side: [] for side in SIDES}
        differing = {side: [] for side in RAY_SIDES}
        cluster_s = {side: {"start": [], "settle": []} for side in RAY_SIDES}
        speedups, overheads = [], []  # each round's local / ray-2 and ray-1 / local
        for round_ in range(args.rounds):
            order = ORDER if round_ % 2 == 0 else ORDER[::-1]
            predictions = {}
            for side in order:
                extra, env = sides[side]
                out = temporary / f"{side}-{round_}"
                on_ray = side in RAY_SIDES
                with (local_ray.LocalCluster(cpus) if on_ray and not args.address else nullcontext()) as cluster:
                    if cluster:
                        cluster_s[side]["start"].append(cluster.start_seconds)
                        cluster_s[side]["settle"].append(cluster.settle())
                    address = ["--address", args.address or cluster.address] if on_ray else []
                    seconds[side].append(timed([*command, *extra, *address, "-o", str(out)],
                                               {**os.environ, **env, "CTRLKIT_CACHE_DIR": str(temporary / "cache")}))
                results = json.loads((out / "results.json").read_text(encoding="utf-8"))
                generate_s[side].append(results["timings"]["generate_s"])
                predictions[side] = [json.loads(line)["prediction"]
                                     for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
            for side in differing:
                differing[side].append(sum(a != b for a, b in zip(predictions[side], predictions["local"])))
            speedups.append(seconds["local"][-1] / seconds["ray2"][-1])
            overheads.append(seconds["ray1"][-1] / seconds["local"][-1])
            started = "" if args.address else "; clusters started (untimed) in " + ", ".join(
                f"{side} {cluster_s[side]['start'][-1]:.1f} s" for side in RAY_SIDES)
            print(f"round {round_ + 1}: " + ", ".join(f"{side} {seconds[side][-1]:.2f} s" for side in SIDES)
                  + f"; local / ray-2 {speedups[-1]:.2f}x, ray-1 / local {overheads[-1]:.3f}"
                  + f"; outputs differing from local: ray2 {differing['ray2'][-1]}, ray1 {differing['ray1'][-1]} "
                    f"of {len(predictions['local'])}{started}", flush=True)

    median = {side: statistics.median(values) for side, values in seconds.items()}
    speedup = median["local"] / median["ray2"]
    overhead = median["ray1"] / median["local"]
    met = speedup >= SPEEDUP_TARGET and overhead <= OVERHEAD_TARGET
    entry = {
        "name": "ray_run", "ratio": round(speedup, 3),
        "target": f"local / ray with 2 workers >= {SPEEDUP_TARGET}x and ray with 1 worker / local <= "
                  f"{OVERHEAD_TARGET} (at most 15% overhead), medians of end-to-end seconds",
        "met": met, "overhead_ratio": round(overhead, 3),
        "seconds": {side: round(value, 3) for side, value in median.items()},
        "seconds_all_rounds": {side: [round(v, 3) for v in values] for side, values in seconds.items()},
        "ratio_by_round": [round(v, 3) for v in speedups], "overhead_ratio_by_round": [round(v, 3) for v in overheads],
        "generate_seconds_median": {side: round(statistics.median(values), 3) for side, values in generate_s.items()},
        "local_all_threads_speedup_over_local": round(median["local"] / median["local_all_threads"], 3),
        "outputs_differing_from_local": differing, "examples": len(predictions["local"]),
        "distinct_outputs": len(set(predictions["local"])), "rounds": args.rounds, "batch_size": args.batch_size,
        "new_tokens_per_example": args.new_tokens, "num_beams": args.num_beams,
        "cluster": "given by --address" if args.address else
        f"this machine's, {cpus} CPUs, loopback only: ray start --head for each Ray side of each round, untimed",
        "cluster_start_seconds": None if args.address else
        {side: [round(v, 2) for v in cluster_s[side]["start"]] for side in RAY_SIDES},
        "cluster_settle_seconds": None if args.address else
        {side: [round(v, 2) for v in cluster_s[side]["settle"]] for side in RAY_SIDES},
        "statistic": "median wall time of a fresh ctrlkit run subprocess, end to end (the cluster already running)",
        "model": f"tiny BART (d_model {args.d_model}, 2+2 layers, {POSITIONS} positions: no input truncated), CPU",
        "malloc": " ".join(f"{k}={v}" for k, v in FIXED_MALLOC.items()),
    }
    record(Path(args.out), entry)
    labels = {"local": "local, 1 thread", "ray2": "ray, 2 workers", "ray1": "ray, 1 worker",
              "local_all_threads": f"local, {cpus} threads"}
    print(f"{'side':<18} {'median s':>9} {'generate s':>11}")
    for side in SIDES:
        print(f"{labels[side]:<18} {median[side]:>9.2f} {statistics.median(generate_s[side]):>11.2f}")
    print(f"speedup local / ray-2 = {speedup:.2f}x (target >= {SPEEDUP_TARGET}x); ray-1 / local = {overhead:.3f} "
          f"(target <= {OVERHEAD_TARGET}); {'met' if met else 'NOT met'}")
    if not args.address:
        starts = [v for side in RAY_SIDES for v in cluster_s[side]["start"]]
        print(f"cluster start (not in the times above): median {statistics.median(starts):.1f} s over {len(starts)} "
              f"starts")


if __name__ == "__main__":
    main()
