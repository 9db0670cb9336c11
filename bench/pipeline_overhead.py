"""Pipeline overhead: ``ctrlkit run`` with a tiny ``hf`` model against a bare transformers
``generate`` loop over the same inputs and batch size, side by side in one run.

A tiny BART (d_model 128, 2+2 layers, 1024 positions so no input is truncated; byte-level BPE
tokenizer trained with ``tokenizers`` on the bundled sample; weights seeded and drawn with std 0.3
so that outputs differ from input to input) is built from a config in a temporary folder. Both
sides run as fresh subprocesses, timed end to end (interpreter start and exit, imports, model
load, reading the data, generation, scoring, writing the outputs):

* toolkit: ``ctrlkit run -d sample -c none -b hf:MODEL --no-baseline --no-cache -m readability
  --batch-size B --device cpu --set hf.max_new_tokens=N --set hf.min_new_tokens=N
  --set hf.num_beams=K -o DIR``, with an empty CTRLKIT_CACHE_DIR as well;
* bare: this script with ``--bare``: imports torch and transformers, loads the tokenizer and
  model the same way, reads the same 120 source texts from sample.jsonl (one per article and
  topic), orders them longest first as ``ctrlkit run`` does so that the batches are the same, and
  per batch tokenizes (padding, truncation to the model's limit), calls ``model.generate`` with
  the same options (beam width, length penalty 1.0, min = max new tokens) and ``batch_decode``\\s;
  then scores each output with ``textstat.flesch_kincaid_grade``, as the run's metric does.

A run must score with at least one metric; ``readability`` is the cheapest that applies to the
sample (no references, no topic space, about as cheap as rouge or stas with tf-idf here), yet its
first call loads textstat's pronouncing dictionary: scoring takes about 0.9 s here, 4% of the
workload. So the bare side does the same scoring and both do the same work; beside the ratio, the
ratio without the scoring (ctrlkit: results.json's score_s; bare: its own timer) and the ratio of
ctrlkit against the bare generation loop alone are reported. Every output is forced to exactly N
new tokens, so both sides do the same generation work.

Noise, and what is done about it: both sides get OMP_NUM_THREADS (default 1: with two threads on
a shared 2-core machine the same bare loop took from 11 to 82 s), and glibc malloc with fixed
thresholds (MALLOC_MMAP_THRESHOLD_=256 MiB, MALLOC_TRIM_THRESHOLD_=1 GiB; --system-malloc leaves
the defaults). With glibc's dynamic mmap threshold the large tensors beam search allocates and
frees at every step (the reordered key/value cache) are mapped and unmapped afresh a varying
number of times: the same generation loop took 0.4 to 1.9 million minor page faults, 0.8 to 2.8 s
of system time and 15 to 18 s from run to run, whichever side ran it; with fixed thresholds it
takes about 60,000 faults, 0.1 s and 15 s every time. Rounds alternate which side goes first
(toolkit, bare; bare, toolkit; ...) so drift and order hit both alike; medians are reported.

Agreement: the predictions and FKGL values in the toolkit's samples.jsonl must equal the bare
side's, text for text, in every round. Ratio: ctrlkit median / bare median; target <= 1.05 (at
most 5% overhead) with identical outputs.

    python bench/pipeline_overhead.py [--rounds 3] [--batch-size 16] [--new-tokens 96] [--num-beams 4]
                                      [--threads 1] [--system-malloc] [--out bench/results.json]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "helpers"))  # tiny_models: the tests' model builders
SAMPLE = ROOT / "plugins" / "datasets" / "ctrlkit_datasets" / "data" / "sample.jsonl"
TARGET = 1.05
D_MODEL = 128
POSITIONS = 1024
FIXED_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(256 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}
"""glibc malloc with fixed thresholds: large tensors come from the heap and stay mapped (see the docstring)."""


def bare(model_dir: str, out: str, batch_size: int, new_tokens: int, num_beams: int) -> None:
    """The reference: a plain transformers loop over the sample's source texts, then FKGL of each
    output; outputs, scores and counts to ``out`` (JSON)."""
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(model_dir, dtype=torch.float32).to("cpu").eval()
    limit = min(tokenizer.model_max_length, model.config.max_position_embeddings)
    texts = [article["document"] for article in map(json.loads, SAMPLE.read_text(encoding="utf-8").splitlines())
             for _ in article["topics"]]
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # longest first, as ctrlkit batches
    outputs = [""] * len(texts)
    input_tokens = 0
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            encoded = tokenizer([texts[i] for i in batch], truncation=True, max_length=limit, padding=True,
                                return_tensors="pt")
            input_tokens += int(encoded["attention_mask"].sum())
            generated = model.generate(**encoded, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                                       num_beams=num_beams, length_penalty=1.0)
            for i, text in zip(batch, tokenizer.batch_decode(generated, skip_special_tokens=True)):
                outputs[i] = text.strip()
    scoring = time.perf_counter()
    import textstat

    fkgl = [float(textstat.flesch_kincaid_grade(output)) for output in outputs]
    score_s = time.perf_counter() - scoring
    Path(out).write_text(json.dumps({"outputs": outputs, "fkgl": fkgl, "score_s": score_s,
                                     "input_tokens": input_tokens}), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=96)
    parser.add_argument("--num-beams", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1, help="torch threads of both sides (OMP_NUM_THREADS)")
    parser.add_argument("--system-malloc", action="store_true",
                        help="leave glibc malloc's thresholds at their defaults (noisier: see the docstring)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    parser.add_argument("--bare", nargs=2, metavar=("MODEL", "OUTPUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare:
        bare(*args.bare, args.batch_size, args.new_tokens, args.num_beams)
        return

    import tiny_models
    from record import record  # bench/ is the script's folder, first on sys.path

    ctrlkit = Path(sys.executable).parent / "ctrlkit"
    if not ctrlkit.exists():
        sys.exit(f"no ctrlkit entry point next to {sys.executable}")
    with tempfile.TemporaryDirectory() as temporary:
        temporary = Path(temporary)
        model = tiny_models.build_bart(temporary / "bart", positions=POSITIONS, d_model=D_MODEL, init_std=0.3)
        env = dict(os.environ, HF_HUB_OFFLINE="1", CTRLKIT_CACHE_DIR=str(temporary / "cache"),
                   OMP_NUM_THREADS=str(args.threads), **({} if args.system_malloc else FIXED_MALLOC))

        def toolkit(round_: int):
            out = temporary / f"run{round_}"
            command = [str(ctrlkit), "run", "-d", "sample", "-c", "none", "-b", f"hf:{model}", "--no-baseline",
                       "--no-cache", "-m", "readability", "--batch-size", str(args.batch_size), "--device", "cpu",
                       "--set", f"hf.max_new_tokens={args.new_tokens}", "--set", f"hf.min_new_tokens={args.new_tokens}",
                       "--set", f"hf.num_beams={args.num_beams}", "-o", str(out)]
            seconds = timed([command], env)
            samples = [json.loads(line) for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
            results = json.loads((out / "results.json").read_text(encoding="utf-8"))
            return (seconds, [s["prediction"] for s in samples], [s["scores"]["readability"]["fkgl"] for s in samples],
                    results["timings"])

        def reference(round_: int):
            out = temporary / f"bare{round_}.json"
            seconds = timed([[sys.executable, __file__, "--bare", str(model), str(out), "--batch-size",
                              str(args.batch_size), "--new-tokens", str(args.new_tokens), "--num-beams",
                              str(args.num_beams)]], env)
            return seconds, json.loads(out.read_text(encoding="utf-8"))

        seconds = {"toolkit": [], "bare": []}
        score_seconds = {"toolkit": [], "bare": []}
        timings = []
        identical = True
        for round_ in range(args.rounds):
            if round_ % 2 == 0:
                toolkit_s, predictions, fkgl, run_timings = toolkit(round_)
                bare_s, written = reference(round_)
            else:
                bare_s, written = reference(round_)
                toolkit_s, predictions, fkgl, run_timings = toolkit(round_)
            seconds["toolkit"].append(toolkit_s)
            seconds["bare"].append(bare_s)
            score_seconds["toolkit"].append(run_timings["score_s"])
            score_seconds["bare"].append(written["score_s"])
            timings.append(run_timings)
            outputs = written["outputs"]
            same = predictions == outputs and fkgl == written["fkgl"]
            identical = identical and same
            differing = sum(p != o for p, o in zip(predictions, outputs)) + abs(len(predictions) - len(outputs))
            print(f"round {round_ + 1}: ctrlkit run {toolkit_s:.2f} s, bare loop {bare_s:.2f} s; "
                  f"{differing} of {len(outputs)} outputs differ, FKGL {'equal' if fkgl == written['fkgl'] else 'DIFFER'}",
                  flush=True)

    median = {name: statistics.median(values) for name, values in seconds.items()}
    median_score = {name: statistics.median(values) for name, values in score_seconds.items()}
    without_scoring = {name: statistics.median(s - m for s, m in zip(seconds[name], score_seconds[name]))
                       for name in seconds}
    ratio = median["toolkit"] / median["bare"]
    ratio_without_scoring = without_scoring["toolkit"] / without_scoring["bare"]
    ratio_against_loop_alone = median["toolkit"] / without_scoring["bare"]
    met = ratio <= TARGET and identical
    entry = {
        "name": "pipeline_overhead", "ratio": round(ratio, 4),
        "target": f"ctrlkit run / bare generate loop (both scoring FKGL) <= {TARGET} (at most 5% overhead), "
                  "outputs identical",
        "met": met, "overhead_percent": round(100 * (ratio - 1), 2), "identical": identical,
        "seconds": {name: round(value, 3) for name, value in median.items()},
        "seconds_all_rounds": {name: [round(v, 3) for v in values] for name, values in seconds.items()},
        "ratio_each_round": [round(t / b, 4) for t, b in zip(seconds["toolkit"], seconds["bare"])],
        "scoring_seconds": {name: round(value, 3) for name, value in median_score.items()},
        "ratio_without_scoring": round(ratio_without_scoring, 4),
        "ratio_against_generate_loop_alone": round(ratio_against_loop_alone, 4),
        "ctrlkit_timings_median": {key: round(statistics.median(t[key] for t in timings), 4) for key in timings[0]},
        "rounds": args.rounds, "examples": len(outputs), "distinct_outputs": len(set(outputs)),
        "batch_size": args.batch_size, "new_tokens_per_example": args.new_tokens,
        "input_tokens": written["input_tokens"], "num_beams": args.num_beams, "metric": "readability (FKGL, textstat)",
        "statistic": "median wall time of a fresh subprocess, end to end",
        "model": f"tiny BART (d_model {D_MODEL}, 2+2 layers, {POSITIONS} positions: no input truncated), CPU, "
                 f"OMP_NUM_THREADS={args.threads}",
        "malloc": "glibc defaults" if args.system_malloc else " ".join(f"{k}={v}" for k, v in FIXED_MALLOC.items()),
    }
    record(Path(args.out), entry)
    print(f"{'side':<12} {'median s':>9} {'scoring s':>10} {'without s':>10}")
    for name, label in (("toolkit", "ctrlkit run"), ("bare", "bare loop")):
        print(f"{label:<12} {median[name]:>9.2f} {median_score[name]:>10.2f} {without_scoring[name]:>10.2f}")
    print(f"ctrlkit / bare = {ratio:.3f} (overhead {100 * (ratio - 1):+.1f}%; without scoring {ratio_without_scoring:.3f}; "
          f"against the generate loop alone {ratio_against_loop_alone:.3f}); target <= {TARGET}, outputs "
          f"{'identical' if identical else 'DIFFER'}: {'met' if met else 'NOT met'}")


def timed(commands: list[list[str]], env: dict) -> float:
    """Wall seconds from starting all of ``commands`` as subprocesses at the same moment until the
    last one ends; their output (in files, so that a full pipe cannot stall one) is shown only when
    one fails, and a failure or an interruption stops the others."""
    logs = [tempfile.TemporaryFile() for _ in commands]
    processes = []
    try:
        start = time.perf_counter()
        for command, log in zip(commands, logs):
            processes.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env))
        for command, process, log in zip(commands, processes, logs):
            if process.wait():
                log.seek(0)
                sys.exit(f"{' '.join(command)} failed (exit {process.returncode}):\n"
                         f"{log.read().decode(errors='replace')}")
        return time.perf_counter() - start
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
        for log in logs:
            log.close()


if __name__ == "__main__":
    main()
