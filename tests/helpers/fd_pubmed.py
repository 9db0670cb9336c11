"""A PubMed-shaped FD file derived from the arXiv half (``../shared/data/fd/arxiv.json``).

The release's ``dataset/pubmed.json`` (iriscxy/ScholarSum) is not in the shared data. It has the
arXiv file's layout with other names, which this module reproduces by renaming, line by line:
six systems (``bigbird_pegasus`` and ``bigbird_pegasus_block``, ``longt5`` and ``longt5_block``,
whose names nest; ``gpt35_fm``; ``llama2_70b``), each copied from an arXiv system with all its
fields; ``ground_aspect`` for ``human_aspect``; three more scores per system (``geval``,
``gpt4_wo``, ``llama_base``) and ``gpt4_list_wo``, a list not named ``*_list``; and a key that
belongs to no system (``gpt35_gpt4``, as the real file's first line has).
"""

from __future__ import annotations

import json
from pathlib import Path

SOURCES = {"bigbird_pegasus": "bartlarge", "longt5": "llama2_70b", "bigbird_pegasus_block": "factsum",
           "longt5_block": "gpt35", "gpt35_fm": "gpt35", "llama2_70b": "llama2_70b"}
"""Each PubMed system and the arXiv system whose abstract and fields it takes."""
ORPHAN = ("gpt35_gpt4", -1.0)
"""A key of no system, with a value no system has: a loader must leave it unread."""


def pubmed_fields(arxiv: dict, source: str) -> dict:
    """The fields (name: value) a PubMed system gets from arXiv system ``source``, the
    PubMed-only scores derived from them."""
    fields = {key[len(source) + 1:]: value for key, value in arxiv.items() if key.startswith(source + "_")}
    return {**fields, "geval": round(fields["human"] * 5) / 5, "gpt4_wo": fields["gpt4_fm"] / 2,
            "gpt4_list_wo": [value / 2 for value in fields["gpt4_fm_list"]], "llama_base": 1 - fields["gpt4"]}


def pubmed_line(arxiv: dict) -> dict:
    """One arXiv line in PubMed's shape, keys in the real file's order: the paper, the system
    abstracts, the reference and its facets, the systems' facets, then every system's scores."""
    line = {"article": arxiv["article"], **{system: arxiv[source] for system, source in SOURCES.items()},
            "human": arxiv["human"], "ground_aspect": arxiv["human_aspect"]}
    fields = {system: pubmed_fields(arxiv, source) for system, source in SOURCES.items()}
    line.update({f"{system}_aspect": found["aspect"] for system, found in fields.items()})
    for system, found in fields.items():
        line.update({f"{system}_{name}": value for name, value in found.items() if name != "aspect"})
        if system == "gpt35_fm":
            line[ORPHAN[0]] = ORPHAN[1]
    return line


def write_pubmed_shaped(arxiv_path: Path, out: Path) -> Path:
    """Every line of ``arxiv_path`` in PubMed's shape, written to ``out``."""
    lines = [json.loads(text) for text in arxiv_path.read_text(encoding="utf-8").splitlines() if text.strip()]
    out.write_text("".join(json.dumps(pubmed_line(line)) + "\n" for line in lines), encoding="utf-8")
    return out
