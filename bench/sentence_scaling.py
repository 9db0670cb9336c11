"""Sentence splitting on huge texts: ``ctrlkit.text.sentences`` (pysbd in bounded blocks) against
pysbd on the whole text, and how other components scale on the same texts.

Texts are the distinct NEWTS test articles, repeated, cut to each size, in two shapes: one long
paragraph (newlines turned into spaces: pysbd's worst case, quadratic in a line's length) and
paragraphs (articles joined by blank lines). Each size is split by the toolkit and, up to
--whole-max characters, by pysbd on the whole text (the splitting before blocks), with the sentence
cache bypassed. Also timed on the paragraph shape: the extractive backbone, the tag controller
(fitted on the NEWTS topic documents), ROUGE (prediction: the first 1,000 characters) and the
length and readability metrics, each with the text as document and as prediction. The machine's
1-minute load average before the run is recorded: other work slows everything here.

    python bench/sentence_scaling.py [--sizes 100000,400000,1600000] [--whole-max 400000]
"""

import argparse
import os
import time
from pathlib import Path

from record import record  # bench/ is the script's folder, first on sys.path

ROOT = Path(__file__).resolve().parents[1]
NEWTS = ROOT.parent / "shared" / "data" / "newts" / "NEWTS_test_600.csv"


def _timed(function, *args):
    start = time.perf_counter()
    output = function(*args)
    return round(time.perf_counter() - start, 3), output


def _whole(text: str):
    """The splitting before blocks: pysbd on the whole text, its start offsets as cuts."""
    from ctrlkit import text as text_module

    text_module._cuts("warm up")
    cuts = sorted({0, *(s.start for s in text_module._segmenter.segment(text) if 0 < s.start < len(text))})
    return tuple(p for p in (text[a:b].strip() for a, b in zip(cuts, cuts[1:] + [len(text)])) if p)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000,400000,1600000")
    parser.add_argument("--whole-max", type=int, default=400_000, help="largest size pysbd gets whole")
    parser.add_argument("--components", action="store_true", help="also time the other components")
    parser.add_argument("--newts", default=str(NEWTS))
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    args = parser.parse_args()
    if not Path(args.newts).is_file():
        print(f"skipped: NEWTS file not found at {args.newts}")
        return

    import ctrlkit
    from ctrlkit.text import sentences

    newts = ctrlkit.get_dataset("newts", path=args.newts)
    articles = list(dict.fromkeys(example.document for example in newts.load("test")))
    sizes = [int(size) for size in args.sizes.split(",")]
    shapes = {"one_paragraph": " ".join(a.replace("\n", " ") for a in articles),
              "paragraphs": "\n\n".join(articles)}
    load = os.getloadavg()[0]
    rows = []
    for shape, base in shapes.items():
        base = base * (max(sizes) // len(base) + 1)
        for size in sizes:
            text = base[:size]
            seconds, split = _timed(sentences.__wrapped__, text)
            row = {"shape": shape, "characters": size, "toolkit_s": seconds, "sentences": len(split)}
            if size <= args.whole_max:
                row["whole_pysbd_s"], whole = _timed(_whole, text)
                row["identical"] = whole == split
            rows.append(row)
            print(row, flush=True)
    components = _components(shapes["paragraphs"], sizes, newts) if args.components else None
    record(Path(args.out), {"name": "sentence_scaling", "load_average_1m": round(load, 2), "rows": rows,
                            "components": components})


def _components(base: str, sizes, newts) -> list[dict]:
    """Seconds each component takes on one example whose document (or prediction) is the text."""
    import ctrlkit
    from ctrlkit.text import sentences
    from ctrlkit.topics import TopicSpace
    from ctrlkit.types import Example, ModelInput

    tag = ctrlkit.get_controller("tag")
    tag.fit([], TopicSpace.fit(newts.topic_documents(), "tfidf"))
    topic = tag.state()["terms"] and next(iter(tag.state()["terms"]))
    base = base * (max(sizes) // len(base) + 1)
    rows = []
    for size in sizes:
        text = base[:size]
        sentences(text)  # split once, as a run does; the components share the cache
        example = Example(id="x", document=text, references=[text[:1000]], controls={"topic": topic, "length": 2})
        row = {"characters": size}
        row["extractive_s"], _ = _timed(ctrlkit.get_backbone("extractive").generate, [ModelInput(source=text)])
        row["tag_s"], _ = _timed(tag.apply, example, ModelInput(source=text))
        for name in ("rouge", "length", "readability"):
            metric = ctrlkit.get_metric(name, **({"workers": 1} if name == "rouge" else {}))
            row[f"{name}_prediction_s"], _ = _timed(metric.compute, [text], [example])
        rows.append(row)
        print(row, flush=True)
    return rows


if __name__ == "__main__":
    main()
