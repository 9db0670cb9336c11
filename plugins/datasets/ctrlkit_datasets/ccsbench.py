"""CCSBench (Ding et al., "CCSBench: Evaluating Compositional Controllability in LLMs for
Scientific Document Summarization", arXiv:2410.12601): arXiv computer-science papers, each
summarized under four controls: length in 50-word bins (bin 0 = 0-50 words, bin 1 = 51-100, ...),
keywords that must appear, readability (normal | high) and empirical focus (low = conceptual,
high = empirical).

The release (huggingface.co/datasets/dyxohjl666/CCSBench) is CSV files, one folder per subset,
one file per split; ``compositional/test.csv`` is the one file name confirmed. Assumed, not
confirmed: the other subsets are folders named after their single attribute (``length/``,
``keywords/``, ``readability/``, ``focus/``); the validation file is ``validation``, ``val`` or
``dev``; the columns are ``text`` (the paper), ``summary`` (the target summary), ``length`` (a
bin), ``keywords`` (a list, or a comma-separated string), ``readability`` and ``focus`` (the
names CCSBench's first author used in CocoSciSum's data code: WING-NUS/SciAssist,
mup_scisumm_datamodule.py). ``--set ccsbench.fields=document=abstract,summary=target`` remaps
them; ``length_unit=words`` reads lengths as word counts. JSON (a list of objects) and JSONL
files in the same layout are read too.

A requested bin b becomes the ``length`` control 50b + 25 words, the middle of the bin, so the
``length`` metric (which reads words by default) scores exactly the requested bin in MAD and
PCC, and prompts ask for "about 125 words" rather than "2"; ``meta["length_bin"]`` keeps the bin.
(``word_mad`` then measures the distance to the middle of the bin.) ``focus`` is also read from
``conceptual`` (low) and ``empirical`` (high).

Without ``--data`` the Hub copy is read with the ``datasets`` library (``ctrlkit-datasets[hf]``).
"""

import ast
import csv
import json
import math
from pathlib import Path

from ctrlkit import Dataset, DatasetError, Example, Option, OptionError
from ctrlkit.files import read_jsonl, require_text
from ctrlkit.options import SKIP_INVALID

from .hub import load_hub, parse_renames

HUB_NAME = "dyxohjl666/CCSBench"
BIN_WORDS = 50
CONTROLS = ("length", "keywords", "readability", "focus")
FIELDS = {"document": "text", "summary": "summary", **{control: control for control in CONTROLS}}
SPLIT_FILES = {"train": ("train",), "validation": ("validation", "val", "dev"), "test": ("test",)}
SUFFIXES = (".csv", ".jsonl", ".json")
READABILITY = {"normal": "normal", "high": "high"}
FOCUS = {"low": "low", "high": "high", "conceptual": "low", "empirical": "high"}


class CCSBench(Dataset):
    """CCSBench CSV (or JSON/JSONL) files: one example per row, controls length, keywords,
    readability and focus; the target summary is the reference."""

    splits = ("train", "validation", "test")
    controls = CONTROLS
    options = (
        Option("path", str, "", "a CCSBench file, a subset folder, or the release folder holding the "
                                "subset folders (--data); empty: the Hub copy"),
        Option("subset", str, "compositional", "subset folder (compositional, or one attribute: length, "
                                               "keywords, readability, focus)"),
        Option("fields", str, "", "column names over the defaults, ROLE=COLUMN: document=text, summary=summary, "
                                  "length, keywords, readability, focus"),
        Option("length_unit", str, "bin", "what the length column holds", choices=("bin", "words")),
        Option("hub_name", str, HUB_NAME, "the Hub copy read when no path is given"),
        SKIP_INVALID,
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.fields = {**FIELDS, **dict(parse_renames(self.options["fields"], "ccsbench.fields"))}
        unknown = sorted(set(self.fields) - set(FIELDS))
        if unknown:
            raise OptionError(f"option 'ccsbench.fields' names the unknown role '{unknown[0]}' "
                              f"(roles: {', '.join(FIELDS)})")

    @property
    def default_split(self):
        """A file is its own split (named by its file name, if it is one); otherwise test."""
        path = Path(self.options["path"])
        if self.options["path"] and path.is_file():
            return next((split for split, names in SPLIT_FILES.items() if path.stem.lower() in names), None)
        return "test"

    def load(self, split):
        if not self.options["path"]:
            self.check_split(split)
            return self._build(self._hub_rows(split))
        path = Path(self.options["path"])
        if path.is_dir():
            self.check_split(split)
            path = self._split_file(path, split)
        elif not path.is_file():
            raise DatasetError(f"{path}: no such file or folder")
        elif split not in (None, self.default_split):
            raise DatasetError(f"--data is the file {path.name}; --split {split} does not apply to it")
        return self._build(_file_rows(path, [self.fields["document"], self.fields["summary"]]))

    def _build(self, rows):
        """Examples from ``(id, where, row)`` triples; ``where`` names the row in errors."""
        return self.build_examples(rows, lambda triple: self._example(*triple))

    def _split_file(self, root: Path, split: str) -> Path:
        """The split's file in the subset folder under ``root`` (or in ``root`` itself)."""
        folder = root / self.options["subset"]
        folder = folder if folder.is_dir() else root
        for suffix in SUFFIXES:
            for name in SPLIT_FILES[split]:
                if (folder / f"{name}{suffix}").is_file():
                    return folder / f"{name}{suffix}"
        subsets = sorted(child.name for child in root.iterdir() if child.is_dir())
        if folder == root and subsets:
            raise DatasetError(f"{root}: no subset folder '{self.options['subset']}' (has {', '.join(subsets)}); "
                               "set ccsbench.subset")
        raise DatasetError(f"{folder}: no {split} file ({', '.join(n + '.csv' for n in SPLIT_FILES[split])})")

    def _hub_rows(self, split):
        name, subset = self.options["hub_name"], self.options["subset"]
        rows = load_hub(name, data_dir=subset, split=split)
        return ((f"{split}:{i}", f"{name}/{subset}[{split}] row {i}", row) for i, row in enumerate(rows, 1))

    def _example(self, identifier, where, row) -> Example:
        if not isinstance(row, dict):
            raise DatasetError(f"{where}: expected an object, got {type(row).__name__}")
        field = self.fields
        controls = {}
        for control, parse in (("length", self._length), ("keywords", _keywords),
                               ("readability", _choice(READABILITY)), ("focus", _choice(FOCUS))):
            value = row.get(field[control])
            if value not in (None, ""):
                controls[control] = parse(value, f"{where}: field '{field[control]}'")
        required = self.options["subset"] if self.options["subset"] in CONTROLS else None
        if required and required not in controls:
            raise DatasetError(f"{where}: field '{field[required]}' is missing (subset '{required}')")
        if not controls:
            raise DatasetError(f"{where}: no control field ({', '.join(field[c] for c in CONTROLS)}) has a value")
        meta = {"source": where, "subset": self.options["subset"]}
        if "length" in controls and self.options["length_unit"] == "bin":
            meta["length_bin"] = controls["length"]
            controls["length"] = BIN_WORDS * controls["length"] + BIN_WORDS // 2
        return Example(
            id=identifier,
            document=require_text(row, field["document"], where),
            references=[require_text(row, field["summary"], where)],
            controls=controls,
            meta=meta,
        )

    def _length(self, value, where) -> int:
        """A bin or a word count: a whole number >= 0 (also as a string such as "2")."""
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not 0 <= number < math.inf or number != int(number):
            raise DatasetError(f"{where} must be a whole number of {self.options['length_unit']}s, got {value!r}")
        return int(number)


def _file_rows(path: Path, columns: list[str]):
    """``(id, where, row)`` for each row of a CSV, JSONL or JSON file: the id is the file's name and
    the row number (``test:3``), ``where`` its file and line. A CSV must have ``columns``."""
    if path.suffix.lower() == ".jsonl":
        return ((f"{path.stem}:{i}", f"{path}:{number}", row) for i, (number, row) in enumerate(read_jsonl(path), 1))
    if path.suffix.lower() == ".json":
        try:
            rows = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DatasetError(f"{path}: cannot read as JSON ({exc})") from None
        if not isinstance(rows, list):
            raise DatasetError(f"{path}: expected a JSON list of rows")
        return ((f"{path.stem}:{i}", f"{path}: row {i}", row) for i, row in enumerate(rows, 1))
    try:
        with open(path, newline="", encoding="utf-8") as file:
            reader = csv.DictReader(file)
            rows = [(f"{path.stem}:{i}", f"{path}:{reader.line_num}", row) for i, row in enumerate(reader, 1)]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DatasetError(f"{path}: cannot read as CSV ({exc})") from None
    missing = [column for column in columns if column not in (reader.fieldnames or [])]
    if missing:
        raise DatasetError(f"{path}: column '{missing[0]}' is missing (not a CCSBench file? map the columns "
                           "with --set ccsbench.fields=document=COLUMN,...)")
    return rows


def _keywords(value, where) -> list[str]:
    """A list of strings, a Python/JSON list written as a string, or a comma-separated string."""
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise DatasetError(f"{where} is not a readable list: {value!r}") from None
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise DatasetError(f"{where} must be a list of strings or a comma-separated string")
    keywords = [item.strip() for item in value if item.strip()]
    if not keywords:
        raise DatasetError(f"{where} lists no keyword")
    return keywords


def _choice(values: dict[str, str]):
    """A parser that accepts the keys of ``values`` (any case) and returns the mapped value."""

    def parse(value, where):
        key = str(value).strip().lower()
        if key not in values:
            raise DatasetError(f"{where} must be one of {', '.join(values)}; got {value!r}")
        return values[key]

    return parse
