"""CCSBench (Ding et al., "CCSBench: Evaluating Compositional Controllability in LLMs for
Scientific Document Summarization", arXiv:2410.12601): arXiv computer-science papers, each
summarized under four controls: length in 50-word bins (bin 0 = 0-50 words, bin 1 = 51-100, ...,
bin 4 = above 200 words, the top bin), keywords that must appear, readability (normal | high) and
empirical focus (low = conceptual, high = empirical).

The release (huggingface.co/datasets/dyxohjl666/CCSBench) is CSV files, one folder per subset,
one file per split; ``compositional/test.csv`` is the one file name confirmed, and the exact
columns are not public. So the loader reads the plausible variants of that layout, and refuses,
in one line naming the file and the column or row, whatever it cannot read unambiguously:

- Files: CSV (cells of any size: the csv module's field limit is raised), JSONL, JSON (a list of
  objects) and Parquet (with ``pyarrow``, or ``pandas`` with a Parquet engine; else refused with
  ``pip install pyarrow``). Subset folders are matched in any letter case (``Compositional/``,
  ``LENGTH/``); the other subsets are assumed to be named after their single attribute
  (``length``, ``keywords``, ``readability``, ``focus``). Split files are ``train``, ``test`` and
  ``validation`` / ``valid`` / ``val`` / ``dev``, in any case and with any of the four
  extensions (``Test.csv``, ``dev.parquet``); when two files could be the same split (``val.csv``
  and ``dev.csv``, or ``test.csv`` and ``test.jsonl``) both are named and neither is read.
- Columns: ``text`` (the paper), ``summary`` (the target summary), ``length``, ``keywords``,
  ``readability`` and ``focus`` (the names CCSBench's first author used in CocoSciSum's data code:
  WING-NUS/SciAssist, mup_scisumm_datamodule.py). ``--set ccsbench.fields=document=abstract,
  summary=target`` remaps them. An empty cell is an absent control.
- Length (``length_unit``, default ``auto``): the whole column of the file is looked at before
  any row is read. All values whole numbers 0-4: bins. All whole multiples of 50 (50, 100, ...):
  rounded word counts. All range strings: ranges, each the 50-word bin it names (``0-50``,
  ``51-100`` or ``50-100``, ..., ``201+``, ``>200``, ``over 200`` for the top bin; a trailing
  ``words`` is allowed). Anything else, or a mix (``1`` beside ``100``), is refused naming the
  file, the column and the values seen, because a value such as 100 could be a bin only by
  mistake. ``length_unit=bin|words|range`` forces one reading; values the forced reading cannot
  hold (100 as a bin, a range as words) are refused the same way, never read as bin 100. Forced
  ``words`` takes any whole number, not only multiples of 50. A cell no reading can hold (``1.5``,
  ``-1``, ``short``) is an error of its row (``skip_invalid`` leaves it out); a column with no
  readable cell at all is refused.
- Keywords: a list (JSONL/Parquet), a JSON list or a Python list literal written as a string, or
  one string whose separator is found per cell: ``;`` or ``|`` when the cell has one (a comma
  then stays inside its keyword, since keywords such as "Smith, J." or "1,000 GPUs" hold commas
  while hardly any holds a semicolon or a pipe), else ``,``. A cell holding both ``;`` and ``|``
  is refused: which one separates is a guess.
- ``focus`` is also read from ``conceptual`` (low) and ``empirical`` (high); readability and focus
  in any case.

A bin b (however it was written) becomes the ``length`` control 50b + 25 words, the middle of
the bin, so the ``length`` metric (which reads words by default) scores exactly the requested bin
in MAD and PCC, and prompts ask for "about 125 words" rather than "2"; ``meta["length_bin"]``
keeps the bin (and ``meta["length_words"]`` the word count when the column held words). Word
counts become bins by the ``length`` metric's rule, bin = max(0, ceil(words / 50) - 1), capped at
the top bin (250 and 300 words are both bin 4, "above 200"); ``length_top_bin = 4`` tells the
metric to cap generated bins the same way. (``word_mad`` then measures the distance to the middle
of the bin.) The subset of an example (``meta["subset"]``, and the attribute a single-attribute
subset requires) is the folder its file is in when that folder is named after a subset, else the
``subset`` option.

The release gives a paper several rows (one per combination of control values) and no paper id,
so an example's group (``group_field``; intervals resample a group as one) is
``meta["document_digest"]``: the first 16 hex digits of the SHA-256 of its document, Unicode NFC
with every run of white space one space and the ends stripped, so two rows of one paper share it
even when their copies differ in line breaks.

Without ``--data`` the Hub copy is read with the ``datasets`` library (``ctrlkit-datasets[hf]``).
``ctrlkit data stats -d ccsbench --data FOLDER`` counts the rows of every subset and split, to
check against the paper's Table 1.
"""

import ast
import csv
import hashlib
import json
import math
import re
import unicodedata
from pathlib import Path

from ctrlkit import Dataset, DatasetError, Example, Option, OptionError
from ctrlkit.plugin_api import read_json, read_jsonl, require_text
from ctrlkit.plugin_api import SKIP_INVALID

from .csvfiles import open_csv
from .hub import load_hub, parse_renames

HUB_NAME = "dyxohjl666/CCSBench"
BIN_WORDS = 50
TOP_BIN = 4
CONTROLS = ("length", "keywords", "readability", "focus")
SUBSETS = ("compositional", *CONTROLS)
FIELDS = {"document": "text", "summary": "summary", **{control: control for control in CONTROLS}}
SPLIT_FILES = {"train": ("train",), "validation": ("validation", "valid", "val", "dev"), "test": ("test",)}
SUFFIXES = (".csv", ".jsonl", ".json", ".parquet")
LENGTH_UNITS = ("auto", "bin", "words", "range")
READABILITY = {"normal": "normal", "high": "high"}
FOCUS = {"low": "low", "high": "high", "conceptual": "low", "empirical": "high"}
PARQUET_INSTALL = "pip install pyarrow (or 'ctrlkit-datasets[parquet]')"
DOCUMENT_DIGEST = "document_digest"
DIGEST_DIGITS = 16


class CCSBench(Dataset):
    """CCSBench CSV (or JSONL, JSON, Parquet) files: one example per row, controls length,
    keywords, readability and focus; the target summary is the reference."""

    splits = ("train", "validation", "test")
    controls = ()
    optional_controls = CONTROLS  # an empty cell is an absent control
    length_top_bin = TOP_BIN
    group_field = DOCUMENT_DIGEST  # one paper, several rows (control settings); the release has no paper id
    options = (
        Option("path", str, "", "a CCSBench file, a subset folder, or the release folder holding the "
                                "subset folders (--data); empty: the Hub copy"),
        Option("subset", str, "compositional", "subset folder, any case (compositional, or one attribute: "
                                               "length, keywords, readability, focus)"),
        Option("fields", str, "", "column names over the defaults, ROLE=COLUMN: document=text, summary=summary, "
                                  "length, keywords, readability, focus"),
        Option("length_unit", str, "auto", "what the length column holds: auto (detected from the whole "
                                           "column), bin (0-4), words (word counts) or range ('51-100')",
               choices=LENGTH_UNITS),
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
            return _split_of(path)
        return "test"

    def data_splits(self):
        return () if self.options["path"] and Path(self.options["path"]).is_file() else self.splits

    def load(self, split):
        if not self.options["path"]:
            self.check_split(split)
            name, subset = self.options["hub_name"], self.options["subset"]
            rows = self._hub_rows(split)
            return self._build(rows, f"{name}/{subset}[{split}]", subset.lower())
        path = Path(self.options["path"])
        if path.is_dir():
            self.check_split(split)
            path = self._split_file(path, split)
        elif not path.is_file():
            raise DatasetError(f"{path}: no such file or folder")
        elif split not in (None, self.default_split):
            raise DatasetError(f"--data is the file {path.name}; --split {split} does not apply to it")
        rows = _file_rows(path, [self.fields["document"], self.fields["summary"]])
        return self._build(rows, str(path), self._subset_of(path))

    def subsets(self) -> list[str]:
        """The subset folders (as named on disk) of the release folder given as ``path``: the
        folders under it holding a split file. Empty when ``path`` is a file, a folder of split
        files itself, or not given. ``ctrlkit data stats`` reads each."""
        root = Path(self.options["path"])
        if not self.options["path"] or not root.is_dir() or any(map(_split_of, _files(root))):
            return []
        return sorted((child.name for child in root.iterdir() if child.is_dir() and any(map(_split_of, _files(child)))),
                      key=str.lower)

    def _build(self, rows: list, label: str, subset: str):
        """Examples from ``(id, where, row)`` triples; ``where`` names the row in errors, ``label``
        the file. The length column is read as a whole first."""
        reading = self._length_reading(rows, label)
        return self.build_examples(rows, lambda triple: self._example(*triple, reading, subset))

    def _subset_of(self, file: Path) -> str:
        """The folder holding ``file`` when it is named after a subset (any case), else the option."""
        folder = file.parent.name.lower()
        return folder if folder in SUBSETS else self.options["subset"].lower()

    def _split_file(self, root: Path, split: str) -> Path:
        """The split's file in the subset folder under ``root`` (or in ``root`` itself)."""
        subset = self.options["subset"]
        folders = sorted(child for child in root.iterdir() if child.is_dir() and child.name.lower() == subset.lower())
        if len(folders) > 1:
            raise DatasetError(f"{root}: both {folders[0].name}/ and {folders[1].name}/ could be subset '{subset}'; "
                               "point --data at the one you mean")
        folder = folders[0] if folders else root
        candidates = [file for file in _files(folder) if _split_of(file) == split]
        if len(candidates) > 1:
            raise DatasetError(f"{folder}: both {candidates[0].name} and {candidates[1].name} could be the {split} "
                               "file; point --data at the one you mean")
        if candidates:
            return candidates[0]
        subsets = sorted(child.name for child in root.iterdir() if child.is_dir())
        if folder == root and subsets:
            raise DatasetError(f"{root}: no subset folder '{subset}' (has {', '.join(subsets)}); set ccsbench.subset")
        raise DatasetError(f"{folder}: no {split} file ({', '.join(n + '.csv' for n in SPLIT_FILES[split])}, "
                           f"or .jsonl, .json, .parquet)")

    def _hub_rows(self, split) -> list:
        name, subset = self.options["hub_name"], self.options["subset"]
        rows = load_hub(name, data_dir=subset, split=split)
        return [(f"{split}:{i}", f"{name}/{subset}[{split}] row {i}", row) for i, row in enumerate(rows, 1)]

    def _length_reading(self, rows: list, label: str) -> str:
        """How the length column is read (bin, words or range), from every value in it; a column
        that no single reading fits is refused here, before any row is built."""
        column = self.fields["length"]
        values = [row.get(column) for _, _, row in rows if isinstance(row, dict) and row.get(column) not in (None, "")]
        unit = self.options["length_unit"]
        fits = [(value, _length_fits(value)) for value in values]
        readable = [(value, kinds) for value, kinds in fits if kinds]
        force = f"; force a reading with --set ccsbench.length_unit={'|'.join(LENGTH_UNITS[1:])}"
        if values and not readable:
            raise DatasetError(f"{label}: column '{column}' holds no length that can be read (bins 0-{TOP_BIN}, "
                               f"word counts or ranges such as '51-100'); values seen: {_few(values)}")
        if unit != "auto":
            wrong = [value for value, kinds in readable if unit not in kinds]
            if wrong:
                what = {"bin": f"bins (0-{TOP_BIN})", "words": "word counts", "range": "ranges such as '51-100'"}[unit]
                raise DatasetError(f"{label}: column '{column}' holds values that are not {what}, as "
                                   f"length_unit={unit} says: {_few(wrong)}; set ccsbench.length_unit to "
                                   "the reading they need, or auto to detect it")
            return unit
        for kind, reading in (("bin", "bin"), ("rounded", "words"), ("range", "range")):
            if all(kind in kinds for _, kinds in readable):
                return reading
        raise DatasetError(f"{label}: column '{column}' holds neither only bins (0-{TOP_BIN}), only word counts in "
                           f"multiples of {BIN_WORDS}, nor only ranges such as '51-100'; values seen: "
                           f"{_few(value for value, _ in readable)}{force}")

    def _example(self, identifier, where, row, reading, subset) -> Example:
        if not isinstance(row, dict):
            raise DatasetError(f"{where}: expected an object, got {type(row).__name__}")
        field = self.fields
        controls, meta = {}, {"source": where, "subset": subset}
        value = row.get(field["length"])
        if value not in (None, ""):
            meta["length_bin"], words = _length(value, reading, f"{where}: field '{field['length']}'")
            controls["length"] = BIN_WORDS * meta["length_bin"] + BIN_WORDS // 2
            if words is not None:
                meta["length_words"] = words
        for control, parse in (("keywords", _keywords), ("readability", _choice(READABILITY)),
                               ("focus", _choice(FOCUS))):
            value = row.get(field[control])
            if value not in (None, "", []):
                controls[control] = parse(value, f"{where}: field '{field[control]}'")
        if subset in CONTROLS and subset not in controls:
            raise DatasetError(f"{where}: field '{field[subset]}' is missing (subset '{subset}')")
        if not controls:
            raise DatasetError(f"{where}: no control field ({', '.join(field[c] for c in CONTROLS)}) has a value")
        document = require_text(row, field["document"], where)
        meta[DOCUMENT_DIGEST] = document_digest(document)
        return Example(
            id=identifier,
            document=document,
            references=[require_text(row, field["summary"], where)],
            controls={key: controls[key] for key in CONTROLS if key in controls},
            meta=meta,
        )


def document_digest(document: str) -> str:
    """The group key of a paper: the first 16 hex digits of the SHA-256 of ``document`` in Unicode
    NFC with each run of white space one space and the ends stripped."""
    normal = " ".join(unicodedata.normalize("NFC", document).split())
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:DIGEST_DIGITS]


# --- files ---------------------------------------------------------------------------------------

def _files(folder: Path) -> list[Path]:
    return sorted(child for child in folder.iterdir() if child.is_file())


def _split_of(file: Path) -> str | None:
    """The split a file name names (``Test.csv``, ``dev.parquet``), or None."""
    if file.suffix.lower() not in SUFFIXES:
        return None
    return next((split for split, names in SPLIT_FILES.items() if file.stem.lower() in names), None)


def _file_rows(path: Path, columns: list[str]) -> list:
    """``(id, where, row)`` for each row of a CSV, JSONL, JSON or Parquet file: the id is the
    file's name and the row number (``test:3``), ``where`` its file and line (or row). A CSV or
    Parquet file must have ``columns``."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return [(f"{path.stem}:{i}", f"{path}:{number}", row) for i, (number, row) in enumerate(read_jsonl(path), 1)]
    if suffix == ".json":
        rows = read_json(path, list, DatasetError, "JSON")
        return [(f"{path.stem}:{i}", f"{path}: row {i}", row) for i, row in enumerate(rows, 1)]
    if suffix == ".parquet":
        header, rows = _parquet_rows(path)
        _check_columns(path, header, columns)
        return [(f"{path.stem}:{i}", f"{path}: row {i}", row) for i, row in enumerate(rows, 1)]
    try:
        with open_csv(path) as file:
            reader = csv.DictReader(file)
            rows = [(f"{path.stem}:{i}", f"{path}:{reader.line_num}", row) for i, row in enumerate(reader, 1)]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DatasetError(f"{path}: cannot read as CSV ({_one_line(exc)})") from None
    _check_columns(path, reader.fieldnames or [], columns)
    return rows


def _check_columns(path: Path, header, columns: list[str]) -> None:
    missing = [column for column in columns if column not in header]
    if missing:
        raise DatasetError(f"{path}: column '{missing[0]}' is missing (columns: {', '.join(map(str, header))}); "
                           "not a CCSBench file? --set ccsbench.fields=ROLE=COLUMN,... maps them "
                           "(roles: document, summary, length, keywords, readability, focus)")


def _parquet_rows(path: Path) -> tuple[list[str], list[dict]]:
    """The column names and rows of a Parquet file, read with pyarrow, else pandas."""
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        parquet = None
    try:
        if parquet is not None:
            table = parquet.read_table(path)
            return list(table.column_names), table.to_pylist()
        try:
            import pandas
            frame = pandas.read_parquet(path)
        except ImportError:  # no pandas, or pandas without a Parquet engine
            raise DatasetError(f"{path}: reading Parquet needs pyarrow: {PARQUET_INSTALL}") from None
        return [str(c) for c in frame.columns], [{str(k): _plain(v) for k, v in row.items()}
                                                 for row in frame.to_dict("records")]
    except (OSError, ValueError, TypeError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise DatasetError(f"{path}: cannot read as Parquet ({_one_line(exc)})") from None


def _plain(value):
    """A pandas cell as a plain Python value: numpy scalars and arrays converted, NaN as None."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    return None if isinstance(value, float) and math.isnan(value) else value


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


# --- length --------------------------------------------------------------------------------------

_CLOSED = re.compile(r"(\d+)\s*(?:-|–|—|to)\s*(\d+)")
_OPEN = re.compile(r"(\d+)\s*\+|(?:>=?|≥|over|above|more than)\s*(\d+)")
_MOST_DIGITS = 99
"""The longest number a length may spell: more digits is no length (and Python refuses to read
an integer of over 4,300 digits)."""


def _without_words(text: str) -> str:
    """``text`` without a trailing ``word`` or ``words`` and the spaces before it. Plain string
    steps, in time linear in the text: a pattern searched for it from every position scanned a
    run of spaces once from each of its spaces (quadratic)."""
    for unit in ("words", "word"):
        if text.endswith(unit):
            return text[: -len(unit)].rstrip()
    return text


def _whole(value) -> int | None:
    """A whole number >= 0 (an int, a float such as 2.0, or a string of one), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"\d+", text):
            return int(text) if len(text) <= _MOST_DIGITS else None
        try:
            value = float(text)
        except ValueError:
            return None
    if isinstance(value, float) and math.isfinite(value) and value >= 0 and value == int(value):
        return int(value)
    return None


def _range_bin(value) -> int | None:
    """The bin a range string names: ``0-50`` (or ``1-50``) is 0, ``51-100`` (or ``50-100``) 1, ...;
    ``201+``, ``200+``, ``>200``, ``over 200`` the top bin; else None."""
    if not isinstance(value, str):
        return None
    text = _without_words(value.strip().lower())
    closed, opened = _CLOSED.fullmatch(text), _OPEN.fullmatch(text)
    if any(len(number) > _MOST_DIGITS for match in (closed, opened) if match for number in match.groups("")):
        return None
    if closed:
        low, high = int(closed[1]), int(closed[2])
        top = high // BIN_WORDS - 1
        ok = high % BIN_WORDS == 0 and 0 <= top <= TOP_BIN and low in (BIN_WORDS * top, BIN_WORDS * top + 1)
        return top if ok else None
    if opened:
        low = int(opened[1] or opened[2])
        return TOP_BIN if low in (BIN_WORDS * TOP_BIN, BIN_WORDS * TOP_BIN + 1) else None
    return None


def _length_fits(value) -> set[str]:
    """The readings a length value fits: ``bin`` (0-4), ``words`` (any whole number), ``rounded``
    (a whole multiple of 50), ``range``; empty when none does."""
    number = _whole(value)
    if number is not None:
        fits = {"words"} | ({"bin"} if number <= TOP_BIN else set())
        return fits | ({"rounded"} if number % BIN_WORDS == 0 else set())
    return {"range"} if _range_bin(value) is not None else set()


def words_bin(words: int) -> int:
    """The ``length`` metric's bin of a word count, capped at the top bin: max(0, ceil(w/50) - 1)."""
    return min(TOP_BIN, max(0, -(-words // BIN_WORDS) - 1))


def _length(value, reading: str, where: str) -> tuple[int, int | None]:
    """``(bin, words or None)`` of one length value under ``reading``; the column check has
    already refused values the reading cannot hold, so what is left here is a broken cell."""
    if reading == "range":
        found = _range_bin(value)
        if found is None:
            raise DatasetError(f"{where} must be a 50-word range such as '51-100' or '>200', got {value!r}")
        return found, None
    number = _whole(value)
    if number is None or (reading == "bin" and number > TOP_BIN):
        raise DatasetError(f"{where} must be a whole number of {'bin' if reading == 'bin' else 'word'}s, got {value!r}")
    return (number, None) if reading == "bin" else (words_bin(number), number)


def _few(values, limit: int = 8) -> str:
    """Up to ``limit`` distinct values, numbers first in order, for an error line."""
    distinct = list(dict.fromkeys(v.strip() if isinstance(v, str) and _whole(v) is not None else
                                  repr(v) if isinstance(v, str) else str(v) for v in values))

    def order(text):
        number = _whole(text)
        return (0, number, "") if number is not None else (1, 0, text)

    shown = sorted(distinct, key=order)[:limit]
    more = f" ... ({len(distinct)} distinct)" if len(distinct) > limit else ""
    return ", ".join(" ".join(item.split())[:40] for item in shown) + more


# --- keywords and choices ------------------------------------------------------------------------

def _keywords(value, where) -> list[str]:
    """A list of strings; a JSON list or Python list literal written as a string; or one string
    separated by ``;`` or ``|`` when it holds one, else by ``,`` (both ``;`` and ``|``: refused)."""
    if isinstance(value, str) and value.strip().startswith("["):
        value = _list_literal(value.strip(), where)
    elif isinstance(value, str):
        separators = [separator for separator in ";|" if separator in value]
        if len(separators) > 1:
            raise DatasetError(f"{where} mixes ';' and '|', so which separates the keywords is a guess: {value!r}")
        value = value.split(separators[0] if separators else ",")
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise DatasetError(f"{where} must be a list of strings or a string of keywords separated by , ; or |")
    keywords = [item.strip() for item in value if item.strip()]
    if not keywords:
        raise DatasetError(f"{where} lists no keyword")
    return keywords


def _list_literal(text: str, where):
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise DatasetError(f"{where} is not a readable list: {text[:80]!r}") from None


def _choice(values: dict[str, str]):
    """A parser that accepts the keys of ``values`` (any case) and returns the mapped value."""

    def parse(value, where):
        key = str(value).strip().lower()
        if key not in values:
            raise DatasetError(f"{where} must be one of {', '.join(values)}; got {value!r}")
        return values[key]

    return parse
