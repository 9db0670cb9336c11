"""Tag controller throughput on the NEWTS test articles against a per-token reference, side by side in one run.

The tag controller is fitted as a run fits it (tf-idf topic space of the NEWTS topic documents,
top 100 terms per topic, stop words left out) and tags every NEWTS test example (one article and
one of its topics each). The reference applies the same rule token by token: for each ``\\w+``
token, lowercase it, lemmatize it with simplemma on its own (a ``Lemmatizer`` without its memo,
so each token is really lemmatized) and look the form and the lemma up in the topic's terms (a
frozenset). Also timed: the tag controller as it was before this fast path (token by token, with
a memo of lemmas; commit 684a87e). Every round starts the toolkit and that previous version cold
(a freshly loaded controller, every lemma and word cache emptied), so nothing learned in one
round helps the next; rounds alternate and medians are reported. Outputs must be identical.
Target: toolkit documents per second >= 3 x the reference's (issue 19 restated it from 50x, which
lemmatizing and splitting the words alone put out of reach in Python).

    python bench/tag_speed.py [--rounds 5] [--out bench/results.json]
"""

import argparse
import statistics
import time
from pathlib import Path

from record import record  # bench/ is the script's folder, first on sys.path

ROOT = Path(__file__).resolve().parents[1]
NEWTS = ROOT.parent / "shared" / "data" / "newts" / "NEWTS_test_600.csv"
TARGET = 3.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--newts", default=str(NEWTS))
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    args = parser.parse_args()
    if not Path(args.newts).is_file():
        print(f"skipped: NEWTS file not found at {args.newts}")
        return

    import simplemma

    import ctrlkit
    from ctrlkit.text import WORD, lemma
    from ctrlkit.topics import TopicSpace
    from ctrlkit.types import ModelInput
    from ctrlkit_controllers.tagging import distinct_words

    newts = ctrlkit.get_dataset("newts", path=args.newts)
    examples = newts.load("test")
    fitted = ctrlkit.get_controller("tag")
    fitted.fit([], TopicSpace.fit(newts.topic_documents(), "tfidf"))
    term_lists = fitted.state()["terms"]
    uncached = simplemma.Lemmatizer(cache_max_size=0)
    uncached.lemmatize("warm", lang="en")  # loads simplemma's English dictionary, once per process

    def toolkit() -> list[str]:
        lemma.cache_clear()
        distinct_words.cache_clear()
        tag = ctrlkit.get_controller("tag")
        tag.load_state({"terms": term_lists})
        return [tag.apply(example, ModelInput(source=example.document)).source for example in examples]

    def token_by_token(lemmatize) -> list[str]:
        def tag_text(text: str, terms: frozenset[str]) -> str:
            def replace(found):
                word = found.group(0)
                lowered = word.lower()
                if lowered in terms or lemmatize(lowered) in terms:
                    return f"[TAG] {word} [TAG]"
                return word

            return WORD.sub(replace, text)

        term_sets = {topic: frozenset(terms) for topic, terms in term_lists.items()}
        return [tag_text(example.document, term_sets[example.controls["topic"]]) for example in examples]

    def reference() -> list[str]:
        return token_by_token(lambda word: uncached.lemmatize(word, lang="en").lower())

    def previous() -> list[str]:
        lemma.cache_clear()
        return token_by_token(lemma)

    def timed(function):
        start = time.perf_counter()
        output = function()
        return time.perf_counter() - start, output

    seconds = {"toolkit": [], "reference": [], "previous_tag_controller": []}
    for _ in range(args.rounds):
        outputs = {}
        for name, function in (("toolkit", toolkit), ("reference", reference), ("previous_tag_controller", previous)):
            elapsed, outputs[name] = timed(function)
            seconds[name].append(elapsed)
        if not outputs["toolkit"] == outputs["reference"] == outputs["previous_tag_controller"]:
            raise SystemExit("tag_speed: the toolkit's tagging differs from the reference's")
    ours = outputs["toolkit"]
    tag = ctrlkit.get_controller("tag")
    tag.load_state({"terms": term_lists})
    for example in examples:
        tag.apply(example, ModelInput(source=example.document))
    warm = timed(lambda: [tag.apply(e, ModelInput(source=e.document)) for e in examples])[0]  # all words known

    median = {name: statistics.median(values) for name, values in seconds.items()}
    per_second = {name: len(examples) / value for name, value in median.items()}
    per_second["toolkit_warm"] = len(examples) / warm
    ratio = per_second["toolkit"] / per_second["reference"]
    tokens = sum(len(WORD.findall(example.document)) for example in examples)
    tags = sum(output.count("[TAG] ") for output in ours)
    entry = {
        "name": "tag_speed", "ratio": round(ratio, 2), "target": f"toolkit / per-token reference >= {TARGET:g}x, identical tagging",
        "met": ratio >= TARGET, "identical": True, "documents_per_second": {k: round(v, 1) for k, v in per_second.items()},
        "seconds_per_100_documents": {k: round(100 / v, 4) for k, v in per_second.items()},
        "ratio_against_previous_tag_controller": round(per_second["toolkit"] / per_second["previous_tag_controller"], 2),
        "examples": len(examples), "distinct_articles": len({e.document for e in examples}), "tokens": tokens,
        "tags": tags, "rounds": args.rounds, "published_tagging_seconds_per_100_articles": 7.1,
    }
    record(Path(args.out), entry)
    print(f"{'path':<26} {'docs/s':>9} {'s/100 docs':>11}")
    for name, value in per_second.items():
        print(f"{name:<26} {value:>9.1f} {100 / value:>11.4f}")
    print(f"toolkit / reference = {ratio:.1f}x (target >= {TARGET:g}x): {'met' if entry['met'] else 'NOT met'}; "
          f"{tags} tags on {len(examples)} examples, identical")


if __name__ == "__main__":
    main()
