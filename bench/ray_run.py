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
  (no target: intra-op threads are another way to use the cores);
* two controls without Ray, for the record (no target), each a local run with one torch thread
  on one of the two shards a 2-worker Ray run deals out (the same examples, written to a JSONL file
  and read with ``-d jsonl``): ``local_half``, one shard's run alone, and ``local_halves``, both
  shards' runs started at the same moment, timed until the second ends (its generate seconds: the
  slower process's). ``local_halves`` is what splitting the run over this machine's CPUs gives
  with no executor at all, so local / local_halves is the reference for the 2-worker speedup on
  this machine, and local_halves / ray-2 is what Ray itself costs or saves against it; local /
  local_half is the speedup two processes would give if running together did not slow each other.

Every process that generates imports torch and transformers and loads the model: about 7-9 s of
CPU here, paid once by a local run, and by each worker, in parallel, on Ray, so it is not halved.
A Ray run also adds seconds of its own that do not grow with the run: connecting, starting the
workers, the driver scoring after the last batch, Ray's daemons beside the workers. The generation
is made long enough (256 new tokens: a local run of about 90 s here) that these do not decide the
comparison. Measured the same day at 160 new tokens (a local run of about 59 s): local / ray-2
1.53x, two plain local runs of one shard each 1.74x, Ray at 0.88 of them; at 256: 1.64x, 1.67x
and 0.98.

Targets: local / ray-2 median seconds >= 1.6 (data-parallel speedup on 2 cores), and ray-1 / local
<= 1.15 (the executor's overhead at most 15%). Agreement: each Ray side's and each control's
predictions are compared with the local ones, example by example id, in every round (a worker's
batches are not the local batches, so a padded model may differ in the last bits:
:mod:`ctrlkit.executors.ray_generation`); a side that gives other ids than it should stops the benchmark,
and the count that differ is reported.

The cluster: ``--address`` of a running one; else, for each Ray side in each round, a cluster of
this machine started before the clock starts, as a user's cluster is already running: ``ray start
--head --node-ip-address=127.0.0.1 --num-cpus=N`` (N: the machine's CPUs; ``tests/helpers/local_ray.py``:
loopback only, a token of this run's own in the environment only), waited on until its processes
are idle (a new cluster starts its idle workers in the background), and stopped after the side,
so that no cluster runs beside a local side. Its start and settling seconds are reported apart.
Every side uses glibc malloc with fixed thresholds (the workers inherit them from the cluster), as
``pipeline_overhead.py`` explains. Rounds run the sides forward and backward in turn (ray-1, local,
ray-2, the two controls, local with all threads; then the reverse), so that the local side runs
next to each Ray side and ray-2 next to the controls, and a machine whose speed drifts over minutes
(this one ran the same local side in 77.7 s and, ten minutes later, 118.3 s) moves both sides of a
pair alike; an even number of rounds balances which side goes first. Medians are reported, and
each round's own ratios.

    python bench/ray_run.py [--rounds 2] [--address HOST:PORT] [--new-tokens 256] [--d-model 256]
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
sys.path.insert(0, str(ROOT / "tests" / "helpers"))  # local_ray: the tests' cluster of one machine
SPEEDUP_TARGET = 1.6
OVERHEAD_TARGET = 1.15
POSITIONS = 1024
FIXED_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(256 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}
SIDES = ("local", "ray2", "ray1", "local_all_threads", "local_halves", "local_half")
RAY_SIDES = ("ray2", "ray1")
ORDER = ("ray1", "local", "ray2", "local_halves", "local_half", "local_all_threads")
"""A round's sides, the local one beside each Ray side and ray-2 beside the controls; every other
round runs them backwards."""
COMPARED = ("ray2", "ray1", "local_halves", "local_half")
"""The sides whose predictions are compared with the local side's, example for example."""


def write_shards(folder: Path, shards: int) -> list[tuple[Path, set[str]]]:
    """The bundled sample's examples in the shards a Ray run with ``shards`` workers deals them
    into: for each, a JSONL file that ``-d jsonl`` reads, and its examples' ids."""
    from ctrlkit.api import get_dataset
    from ctrlkit.executors.ray_support import stable_shards

    examples = list(get_dataset("sample").load("test"))
    dealt = stable_shards([example.id for example in examples], shards)
    written = []
    for n in range(shards):
        mine = [example for example, shard in zip(examples, dealt) if shard == n]
        file = folder / f"shard-{n + 1}.jsonl"
        file.write_text("".join(json.dumps({"id": e.id, "document": e.document, "references": list(e.references),
                                            "controls": dict(e.controls)}) + "\n" for e in mine), encoding="utf-8")
        written.append((file, {example.id for example in mine}))
    return written


def read_predictions(outs: list[Path], side: str, expected: set[str]) -> dict[str, str]:
    """Each example id's prediction in the samples.jsonl of ``outs``; the benchmark stops unless
    they hold exactly the ``expected`` ids, once each (a side that left one out, or gave one twice,
    would be compared on fewer examples than it ran)."""
    predictions = {}
    for out in outs:
        for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["id"] in predictions:
                sys.exit(f"{side}: example {row['id']!r} twice in its samples")
            predictions[row["id"]] = row["prediction"]
    if predictions.keys() != expected:
        sys.exit(f"{side}: samples of {len(predictions)} examples, not of the {len(expected)} expected")
    return predictions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--address", help="a running Ray cluster (default: one of this machine, started for "
                                          "each Ray side, untimed)")
    parser.add_argument("--new-tokens", type=int, default=256)
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
        command = [str(ctrlkit), "run", "-c", "none", "-b", f"hf:{model}", "--no-baseline",
                   "--no-cache", "--bootstrap", "0", "-m", "readability", "--batch-size", str(args.batch_size),
                   "--device", "cpu", "--set", f"hf.max_new_tokens={args.new_tokens}",
                   "--set", f"hf.min_new_tokens={args.new_tokens}", "--set", f"hf.num_beams={args.num_beams}"]
        sample = ["-d", "sample"]
        (first, first_ids), (second, second_ids) = write_shards(temporary, 2)
        shards = [["-d", "jsonl", "--data", str(file)] for file in (first, second)]
        everything = first_ids | second_ids
        one_thread = {"OMP_NUM_THREADS": "1"}
        sides = {  # each side's processes, started together, their environment, and the examples they run
            "local": ([sample], one_thread, everything),
            "ray2": ([[*sample, "--executor", "ray", "--workers", "2"]], one_thread, everything),
            "ray1": ([[*sample, "--executor", "ray", "--workers", "1"]], one_thread, everything),
            "local_all_threads": ([sample], {"OMP_NUM_THREADS": str(cpus)}, everything),
            "local_halves": (shards, one_thread, everything),
            "local_half": (shards[:1], one_thread, first_ids),
        }
        seconds = {side: [] for side in SIDES}
        generate_s = {side: [] for side in SIDES}
        differing = {side: [] for side in COMPARED}
        cluster_s = {side: {"start": [], "settle": []} for side in RAY_SIDES}
        speedups, overheads = [], []  # each round's local / ray-2 and ray-1 / local
        without_ray, against_without = [], []  # each round's local / local_halves and local_halves / ray-2
        for round_ in range(args.rounds):
            order = ORDER if round_ % 2 == 0 else ORDER[::-1]
            predictions = {}
            for side in order:
                tails, env, expected = sides[side]
                outs = [temporary / f"{side}-{round_}-{n}" for n in range(len(tails))]
                on_ray = side in RAY_SIDES
                with (local_ray.LocalCluster(cpus) if on_ray and not args.address else nullcontext()) as cluster:
                    if cluster:
                        cluster_s[side]["start"].append(cluster.start_seconds)
                        cluster_s[side]["settle"].append(cluster.settle())
                    address = ["--address", args.address or cluster.address] if on_ray else []
                    seconds[side].append(timed(
                        [[*command, *tail, *address, "-o", str(out)] for tail, out in zip(tails, outs)],
                        {**os.environ, **env, "CTRLKIT_CACHE_DIR": str(temporary / "cache")}))
                generate_s[side].append(max(json.loads((out / "results.json").read_text(encoding="utf-8"))
                                            ["timings"]["generate_s"] for out in outs))
                predictions[side] = read_predictions(outs, side, expected)
            local = predictions["local"]
            for side in differing:
                differing[side].append(sum(text != local[id_] for id_, text in predictions[side].items()))
            speedups.append(seconds["local"][-1] / seconds["ray2"][-1])
            overheads.append(seconds["ray1"][-1] / seconds["local"][-1])
            without_ray.append(seconds["local"][-1] / seconds["local_halves"][-1])
            against_without.append(seconds["local_halves"][-1] / seconds["ray2"][-1])
            started = "" if args.address else "; clusters started (untimed) in " + ", ".join(
                f"{side} {cluster_s[side]['start'][-1]:.1f} s" for side in RAY_SIDES)
            print(f"round {round_ + 1}: " + ", ".join(f"{side} {seconds[side][-1]:.2f} s" for side in SIDES)
                  + f"; local / ray-2 {speedups[-1]:.2f}x, ray-1 / local {overheads[-1]:.3f}, "
                    f"local / local_halves {without_ray[-1]:.2f}x, local_halves / ray-2 {against_without[-1]:.3f}; "
                    f"outputs differing from local: "
                  + ", ".join(f"{side} {differing[side][-1]} of {len(predictions[side])}" for side in COMPARED)
                  + f"{started}", flush=True)

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
        "local_halves_speedup_over_local": round(median["local"] / median["local_halves"], 3),
        "local_halves_speedup_over_local_by_round": [round(v, 3) for v in without_ray],
        "local_over_one_shard_alone": round(median["local"] / median["local_half"], 3),
        "ray2_speedup_over_local_halves": round(median["local_halves"] / median["ray2"], 3),
        "ray2_speedup_over_local_halves_by_round": [round(v, 3) for v in against_without],
        "controls": "local_halves: two local runs at once, one on each shard of a 2-worker Ray run, no Ray; "
                    "local_half: the first shard's run alone; no targets",
        "outputs_differing_from_local": differing, "examples": len(predictions["local"]),
        "examples_compared": {side: len(predictions[side]) for side in COMPARED},
        "distinct_outputs": len(set(predictions["local"].values())), "rounds": args.rounds,
        "batch_size": args.batch_size, "new_tokens_per_example": args.new_tokens, "num_beams": args.num_beams,
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
              "local_all_threads": f"local, {cpus} threads", "local_halves": "local, 2 shards at once",
              "local_half": "local, 1 shard alone"}
    print(f"{'side':<24} {'median s':>9} {'generate s':>11}")
    for side in SIDES:
        print(f"{labels[side]:<24} {median[side]:>9.2f} {statistics.median(generate_s[side]):>11.2f}")
    print(f"speedup local / ray-2 = {speedup:.2f}x (target >= {SPEEDUP_TARGET}x); ray-1 / local = {overhead:.3f} "
          f"(target <= {OVERHEAD_TARGET}); {'met' if met else 'NOT met'}")
    print(f"without Ray (no targets): local / 2 shards at once = {entry['local_halves_speedup_over_local']:.2f}x, "
          f"local / 1 shard alone = {entry['local_over_one_shard_alone']:.2f}x; "
          f"2 shards at once / ray-2 = {entry['ray2_speedup_over_local_halves']:.3f}")
    if not args.address:
        starts = [v for side in RAY_SIDES for v in cluster_s[side]["start"]]
        print(f"cluster start (not in the times above): median {statistics.median(starts):.1f} s over {len(starts)} "
              f"starts")


if __name__ == "__main__":
    main()
