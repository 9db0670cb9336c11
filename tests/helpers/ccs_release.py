"""A small CCSBench release folder written for a test: the layout ``ccsbench`` reads (one folder
per subset, ``train.csv`` and ``test.csv`` in each), with made-up papers. The compositional subset
carries all four controls; each single-attribute subset carries its own only, as the release does.
``write_csv`` writes one file of the release's columns (``CCS_COLUMNS``) or others, for a test of
one layout."""

import csv
from pathlib import Path

TOPICS = [("graph networks", "molecules"), ("speech models", "accents"), ("sparse attention", "long documents"),
          ("federated learning", "hospitals"), ("code models", "unit tests"), ("image captioning", "charts"),
          ("retrieval", "legal texts"), ("summarization", "meetings")]
CONTROLS = ("length", "keywords", "readability", "focus")
CCS_COLUMNS = ["text", "summary", "length", "keywords", "readability", "focus"]


def write_csv(path, rows, columns=CCS_COLUMNS):
    """Write ``rows`` (dicts) under a header of ``columns`` to the CSV file ``path``; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def paper(i: int) -> tuple[str, str]:
    """A made-up paper (several sentences, so an extractive summarizer has a choice) and its summary."""
    method, data = TOPICS[i % len(TOPICS)]
    text = (f"We study {method} for {data}. Prior work on {data} ignores structure. "
            f"Our method trains {method} with a contrastive objective on {data}. "
            f"Experiments on {3 + i} benchmarks show gains of {i + 2} points. "
            f"The results suggest that {method} transfers to {data} in practice. "
            f"We release code for paper {i}.")
    summary = f"Paper {i} applies {method} to {data} and gains {i + 2} points on {3 + i} benchmarks."
    return text, summary


def row(i: int, controls=CONTROLS) -> dict:
    text, summary = paper(i)
    method, data = TOPICS[i % len(TOPICS)]
    values = {"length": str(i % 5), "keywords": f"{method}; {data}",
              "readability": ("normal", "high")[i % 2], "focus": ("empirical", "conceptual")[(i // 2) % 2]}
    return {"text": text, "summary": summary, **{name: values[name] for name in controls}}


def write_release(folder: Path, rows: int = 6) -> Path:
    """``folder`` with subsets compositional, length, keywords, readability and focus, each with a
    train and a test split of ``rows`` rows (train rows are other papers than test rows)."""
    for subset, controls in [("compositional", CONTROLS), *((name, (name,)) for name in CONTROLS)]:
        for split, offset in (("train", 100), ("test", 0)):
            path = folder / subset / f"{split}.csv"
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", newline="", encoding="utf-8") as file:
                writer = csv.DictWriter(file, fieldnames=["text", "summary", *controls])
                writer.writeheader()
                writer.writerows(row(offset + i, controls) for i in range(rows))
    return folder
