"""MACSum (Zhang et al., mixed-attribute controllable summarization): MACSum-Doc (CNN/DailyMail
sources) and MACSum-Dial (QMSum meetings). Each source has several references, each written
for its own ``control_attribute`` set; every reference becomes one example.

Controls: ``length`` (short | normal | long), ``extractiveness`` (normal | high | fully),
``specificity`` (normal | high), ``topic`` and ``speaker`` (when the reference has them).

MACSum's length levels are relative, not word counts. For the ``length`` metric the dataset
maps each level to the median word count of the released val references with that level
(``length_levels``): MACSum-Doc short 24, normal 30, long 59; MACSum-Dial short 32, normal 60,
long 77. ``--set length.levels=...`` overrides them.

Where the files are: ``--data`` is one JSON file (its split is named by the file: ``val.json``,
``macdoc_val.json``), a folder holding ``train.json``, ``val.json`` and ``test.json`` (the
release's ``dataset/macdoc/``), or the release's ``dataset/`` folder itself, holding ``macdoc/``
and ``macdial/`` (``macsum.domain`` picks one; ``macdoc_val.json``-style names are found the same
way). ``--split`` picks the file; ``valid``, ``validation`` and ``dev`` are also read as ``val``.
One file holds no train split; ``macsum.train_fraction`` (0 to 1) holds out that share of the
file's sources, chosen by a hash of each source's text (the same sources on every machine and
order), as a ``train`` split for few-shot demonstrations or training; the file's own split keeps
the rest. The release's train.json is the split to use where you have it.
Attribute keys are read in any case (the release's description writes ``Speaker``, its files
``speaker``).
"""

import hashlib
import json
from pathlib import Path

from ctrlkit import Dataset, DatasetError, Example, Option
from ctrlkit.plugin_api import read_json
from ctrlkit.plugin_api import SKIP_INVALID

LENGTH_LEVELS = {
    "doc": {"short": 24, "normal": 30, "long": 59},
    "dial": {"short": 32, "normal": 60, "long": 77},
}
CONTROLS = ("length", "extractiveness", "specificity", "topic", "speaker")
SPLIT_NAMES = {"train": ("train",), "val": ("val", "valid", "validation", "dev"), "test": ("test",)}


class MacSum(Dataset):
    """MACSum-Doc or -Dial JSON: one example per reference, mixed-attribute controls."""

    splits = ("train", "val", "test")
    controls = ("length", "extractiveness", "specificity")
    optional_controls = ("topic", "speaker")
    group_field = "source_index"  # several references (examples) per source
    options = (
        Option("path", str, "", "a MACSum JSON file (macdoc/val.json), a folder with train/val/test.json, or the "
                                "release's dataset/ folder holding macdoc/ and macdial/ (--data)"),
        Option("domain", str, "doc", "which domain a folder holding both gives: doc (MACSum-Doc) or dial",
               choices=("doc", "dial")),
        Option("train_fraction", float, 0.0, "share of a single file's sources held out (by a hash of each source's "
                                           "text) as a train split for few-shot demonstrations; 0 keeps the file whole",
               minimum=0.0, maximum=0.9),
        SKIP_INVALID,
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.length_levels: dict[str, int] = {}

    @property
    def default_split(self):
        """A file is its own split (named by the file, e.g. macdoc_val.json); a folder defaults to test."""
        path = Path(self.options["path"])
        if path.is_file():
            return _split_named(path)
        return "test"

    def data_splits(self):
        path = Path(self.options["path"])
        if not path.is_file():
            return self.splits
        return ("train", self.default_split) if self._held_out else ()

    def describe_split(self, split):
        if not (self._held_out and Path(self.options["path"]).is_file()):
            return None
        share = self.options["train_fraction"]
        part = "held out as" if split == "train" else "left after holding out"
        return (f"the sources of {Path(self.options['path']).name} {part} a train split (train_fraction {share:g}, "
                f"by a hash of each source's text); the release's train.json is the official one")

    @property
    def _held_out(self) -> bool:
        return self.options["train_fraction"] > 0

    def load(self, split):
        held_out = self._held_out and split == "train" and Path(self.options["path"]).is_file()
        path = self._file(None if held_out else split)
        sources = read_json(path, list, DatasetError, "MACSum JSON")
        if self._held_out and path == Path(self.options["path"]):
            wanted = "train" if held_out else "rest"
            sources = [(i, s) for i, s in enumerate(sources) if self._part(s) == wanted]
        else:
            sources = list(enumerate(sources))
        dialogue = any(isinstance(s, dict) and isinstance(s.get("metadata"), dict) and s["metadata"].get("dataset") == "qmsum"
                       for _, s in sources)
        self.length_levels = LENGTH_LEVELS["dial" if dialogue else "doc"]
        return self.build_examples(sources, lambda item: self._examples(path, *item, dialogue))

    def _part(self, source) -> str:
        """``train`` or ``rest``: where a source of a single file falls when a share is held out."""
        text = json.dumps(source.get("source") if isinstance(source, dict) else source, ensure_ascii=False)
        digest = hashlib.sha1(text.encode("utf-8")).digest()
        return "train" if int.from_bytes(digest[:8], "big") / 2**64 < self.options["train_fraction"] else "rest"

    def _file(self, split) -> Path:
        if not self.options["path"]:
            raise DatasetError("dataset 'macsum' needs a MACSum JSON file or folder: --data PATH")
        path = Path(self.options["path"])
        if path.is_dir():
            self.check_split(split)
            path = self._split_file(path, split)
        elif split == "train":
            raise DatasetError(f"--data is the file {path.name}, which holds no train split: give the release's folder "
                               f"with train.json, or hold some sources out with --set macsum.train_fraction=0.2")
        elif split not in (None, self.default_split):
            raise DatasetError(f"--data is the file {path.name}; --split {split} does not apply to it")
        if not path.is_file():
            raise DatasetError(f"{path}: no such file")
        return path

    def _split_file(self, folder: Path, split: str) -> Path:
        """The split's file: ``{split}.json`` in the folder, in its ``mac{domain}/`` folder, or
        named ``mac{domain}_{split}.json``; two candidates are refused rather than one picked."""
        domain = f"mac{self.options['domain']}"
        places = [folder, folder / domain]
        found = [place / f"{prefix}{name}.json" for place in places for prefix in ("", f"{domain}_")
                 for name in SPLIT_NAMES[split] if (place / f"{prefix}{name}.json").is_file()]
        found = list(dict.fromkeys(found))
        if len(found) > 1:
            raise DatasetError(f"{folder}: {found[0]} and {found[1]} could both be MACSum's {split} split; keep one")
        if not found:
            raise DatasetError(f"{folder}: no MACSum {split} file ({split}.json, {domain}/{split}.json or "
                               f"{domain}_{split}.json)")
        return found[0]

    def _examples(self, path, index, source, dialogue) -> list[Example]:
        where = f"{path}: source {index}"
        if not isinstance(source, dict) or not isinstance(source.get("source"), list):
            raise DatasetError(f"{where}: field 'source' must be a list of sentences")
        document = ("\n" if dialogue else " ").join(str(s).strip() for s in source["source"] if str(s).strip())
        if not document:
            raise DatasetError(f"{where}: field 'source' is empty")
        if not isinstance(source.get("metadata", {}), dict):
            raise DatasetError(f"{where}: field 'metadata' must be an object")
        references = source.get("references")
        if not isinstance(references, list) or not references:
            raise DatasetError(f"{where}: field 'references' must be a non-empty list")
        examples = []
        for j, reference in enumerate(references):
            summary = reference.get("summary") if isinstance(reference, dict) else None
            attributes = reference.get("control_attribute") if isinstance(reference, dict) else None
            if not isinstance(summary, str) or not summary.strip():
                raise DatasetError(f"{where}, reference {j}: field 'summary' is missing or empty")
            if not isinstance(attributes, dict):
                raise DatasetError(f"{where}, reference {j}: field 'control_attribute' must be an object")
            attributes = {str(name).lower(): value for name, value in attributes.items()}
            controls = {name: attributes[name] for name in CONTROLS if attributes.get(name) not in (None, "")}
            examples.append(Example(id=f"{index}:{j}", document=document, references=[summary], controls=controls,
                                    meta={**source.get("metadata", {}), "source_index": index}))
        return examples


def _split_named(path: Path) -> str | None:
    """The split a file's name gives: ``val.json``, ``macdoc_valid.json`` -> ``val``."""
    words = path.stem.lower().split("_")
    return next((split for split, names in SPLIT_NAMES.items() if any(name in words for name in names)), None)
