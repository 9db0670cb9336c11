import multiprocessing
import os
import re
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from statistics import fmean

from ctrlkit import CtrlkitError, Metric, MetricResult, Option, OptionError

_ROUGE_TYPE = re.compile(r"rouge[1-9]|rougeL|rougeLsum")

# Each worker gets at least this many pairs, so small inputs are scored in this process: a forked
# worker starts at once, a spawned one first imports rouge-score and nltk (about 1.5 s).
PAIRS_PER_WORKER = {"fork": 100, "spawn": 1000}
CHUNKS_PER_WORKER = 4  # smaller chunks than one per worker even out texts of uneven length


class Rouge(Metric):
    """ROUGE F1 (rouge-score), the maximum over an example's references for each ROUGE type.

    Summaries are split into sentences, one per line, so that rougeLsum sees sentence
    boundaries (as the CNN/DailyMail evaluation scripts do). The numbers are rouge-score's
    exactly; pairs are scored in parallel worker processes when there are many of them."""

    scores_each_example_alone = True

    needs_references = True
    options = (
        Option("types", str, "rouge1,rouge2,rougeL,rougeLsum", "comma-separated ROUGE types"),
        Option("use_stemmer", bool, True, "Porter-stem tokens before matching"),
        Option("split_sentences", bool, True, "put each sentence on its own line (rougeLsum)"),
        Option("workers", int, 0, "processes scoring pairs in parallel (same numbers either way): 0 = one per "
                                  "available core where they can be forked (Linux, one thread, no torch), else "
                                  "1 = all in this process; N > 1 spawns them elsewhere, which needs a script's "
                                  "top level under if __name__ == '__main__'", minimum=0),
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.types = list(dict.fromkeys(name.strip() for name in self.options["types"].split(",") if name.strip()))
        unknown = [name for name in self.types if not _ROUGE_TYPE.fullmatch(name)]
        if unknown or not self.types:
            raise OptionError(f"option 'rouge.types': unknown ROUGE type {unknown[0] if unknown else '(none)'!r}; "
                              "use rouge1..rouge9, rougeL, rougeLsum")

    def compute(self, predictions, examples):
        from .rouge_pairs import one_sentence_per_line, score_pairs  # imports nltk: not at `ctrlkit list`

        pairs = list(zip(predictions, examples))
        predictions = [prediction for prediction, _ in pairs]
        references = [list(example.references) for _, example in pairs]
        types, use_stemmer, split_sentences = self.types, self.options["use_stemmer"], self.options["split_sentences"]
        config = (types, use_stemmer, split_sentences)
        method, requested = start_method(), self.options["workers"]
        if method == "spawn" and not requested:
            workers = 1  # a spawned worker re-runs the calling script, which may not guard its top level
        else:
            workers = min(requested or available_cores(), len(pairs) // PAIRS_PER_WORKER[method])
        if workers > 1:
            per_example = _in_workers(config, predictions, references, workers, method)
        else:
            if split_sentences:
                predictions, references = _one_sentence_per_line(predictions, references, one_sentence_per_line)
            per_example = score_pairs(types, use_stemmer, predictions, references)
        corpus = {name: fmean(values) for name, values in per_example.items()}
        return MetricResult(per_example=per_example, corpus=corpus)


def _one_sentence_per_line(predictions, references, split):
    """The pairs' texts one sentence per line, each distinct text split once by ``split`` (a list
    of texts -> a list of texts): one reference often serves many pairs, and pysbd is slow."""
    texts = list(dict.fromkeys([*predictions, *(text for texts in references for text in texts)]))
    lines = dict(zip(texts, split(texts)))
    return [lines[text] for text in predictions], [[lines[text] for text in texts] for texts in references]


def available_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def start_method() -> str:
    """"fork" on Linux while no other Python thread runs and torch is not loaded, else "spawn".

    A forked child holds only the forking thread: a lock another Python thread held stays locked
    in it for ever, and torch's thread pools and CUDA do not survive a fork. The idle native
    threads of numpy's OpenBLAS do not count: OpenBLAS shuts them down before a fork."""
    if sys.platform.startswith("linux") and threading.active_count() == 1 and "torch" not in sys.modules:
        return "fork"
    return "spawn"


def _in_workers(config, predictions, references, workers, method) -> dict[str, list]:
    """Sentence splitting, then scoring, each spread over one process pool in chunks, results in
    order. The pool is shut down before this returns or raises; a worker's failure is a CtrlkitError."""
    from .rouge_pairs import one_sentence_per_line, score_pairs

    types, use_stemmer, split_sentences = config
    executor = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method))
    try:
        if split_sentences:
            split = partial(_map, executor, workers, one_sentence_per_line, what="splitting texts into sentences")
            predictions, references = _one_sentence_per_line(predictions, references, split)
        chunks = _map(executor, workers, partial(score_pairs, types, use_stemmer), predictions, references,
                      what="scoring pairs {}", by_chunk=True)
        return {name: [value for chunk in chunks for value in chunk[name]] for name in types}
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


def _map(executor, workers, function, *columns, what, by_chunk=False) -> list:
    """``function(*columns)`` over contiguous chunks of the columns: the results one after the
    other (each chunk's a list), or the list of the chunks' results when ``by_chunk``. ``what`` names
    the work in an error; "{}" in it becomes the chunk's items, e.g. 1-250."""
    total = len(columns[0])
    size = max(1, -(-total // (workers * CHUNKS_PER_WORKER)))
    bounds = [(start, min(start + size, total)) for start in range(0, total, size)]
    futures = [executor.submit(function, *(column[a:b] for column in columns)) for a, b in bounds]
    results = []
    for (start, end), future in zip(bounds, futures):
        try:
            result = future.result()
        except BrokenProcessPool as exc:
            raise CtrlkitError(f"rouge: a worker process ended abruptly while {what.format(f'{start + 1}-{end}')} "
                               "(killed or out of memory? a spawned worker also dies when the calling script's top level is not under "
                               "if __name__ == '__main__'); rouge.workers=1 scores in this process") from exc
        except Exception as exc:
            raise CtrlkitError(f"rouge: {what.format(f'{start + 1}-{end}')} failed in a worker process: "
                               f"{type(exc).__name__}: {exc}") from exc
        if by_chunk:
            results.append(result)
        else:
            results.extend(result)
    return results
