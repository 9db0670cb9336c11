"""FD, the facet-aware evaluation benchmark (Chen et al.): arXiv papers with the human abstract
and the abstracts of several systems, human facet scores and stored metric scores.

One example per (paper, system): the human abstract is the reference and the system's abstract
is a given prediction (``meta["prediction"]``), so ``ctrlkit evaluate --dataset fd`` scores it
without generation. ``meta`` also holds the human total and per-facet scores and the stored
scores (``human``, ``human_facets``, ``gpt4_fm``, ``gpt35_fm``, ``bert``, ``rouge1``, ``rouge2``,
``rougeL``), which ``evaluate`` keeps under ``given`` for ``ctrlkit meta-eval``.
"""

from ctrlkit import Dataset, DatasetError, Example, Option
from ctrlkit.plugin_api import read_jsonl, require_text
from ctrlkit.plugin_api import SKIP_INVALID

SYSTEMS = ("gpt35", "llama2_70b", "bartlarge", "factsum")
STORED = {"human": "human", "human_facets": "human_list", "gpt4_fm": "gpt4_fm", "gpt35_fm": "gpt35_fm",
          "bert": "bert", "rouge1": "newrouge1", "rouge2": "newrouge2", "rougeL": "newrougel"}


class FacetBenchmark(Dataset):
    """FD arXiv JSON lines: one example per (paper, system) with the system abstract as its prediction."""

    group_field = "paper"  # one example per system for each paper

    options = (
        Option("path", str, "", "the FD JSON lines file, e.g. arxiv.json (--data)"),
        Option("systems", str, ",".join(SYSTEMS), "comma-separated systems (those with human scores)"),
        SKIP_INVALID,
    )

    def load(self, split):
        if split is not None:
            raise DatasetError("dataset 'fd' has no splits")
        if not self.options["path"]:
            raise DatasetError("dataset 'fd' needs the FD JSON lines file: --data PATH (e.g. arxiv.json)")
        systems = [name.strip() for name in self.options["systems"].split(",") if name.strip()]
        return self.build_examples(read_jsonl(self.options["path"]),
                                   lambda numbered: self._examples(*numbered, systems))

    def _examples(self, line, paper, systems) -> list[Example]:
        where = f"{self.options['path']}:{line}"
        reference = require_text(paper, "human", where)
        document = require_text(paper, "article", where)
        examples = []
        for system in systems:
            meta = {"prediction": require_text(paper, system, where), "system": system, "paper": line}
            for name, suffix in STORED.items():
                if f"{system}_{suffix}" not in paper:
                    raise DatasetError(f"{where}: field '{system}_{suffix}' is missing")
                meta[name] = paper[f"{system}_{suffix}"]
            examples.append(Example(id=f"{line}:{system}", document=document, references=[reference], meta=meta))
        return examples
