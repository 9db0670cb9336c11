"""CTRLsum's line-aligned files (He et al.): ``{split}.source``, ``{split}.target`` and a
keyword file, line i of each belonging to example i.

CTRLsum releases two keyword files. ``.oraclewordns`` holds the full oracle keywords, the ones
CTRLsum's own test script evaluates with; ``.oracleword`` holds them after the training-time
keyword dropout (a random subset, what the model saw in training). The ``keywords`` option picks:
``full`` reads ``.oraclewordns``, ``dropout`` reads ``.oracleword``, and ``auto`` (the default)
reads ``.oraclewordns`` when the split has it, else ``.oracleword`` with a warning. The resolved
choice is what results.json records.

A keyword line holds the keywords of each summary sentence, groups separated by ``|`` and words
by spaces. ``keywords`` is every keyword word in order (duplicates removed), what the ``sr``
metric checks; ``keyword_groups`` keeps the groups as lists. Symbol-only keywords ("$", "£")
are kept as released; ``sr`` leaves them out and counts them.
"""

import logging
from pathlib import Path

from ctrlkit import Dataset, DatasetError, Example, Option
from ctrlkit.plugin_api import SKIP_INVALID

KEYWORD_FILES = {"full": "oraclewordns", "dropout": "oracleword"}
logger = logging.getLogger("ctrlkit")


class CtrlSum(Dataset):
    """CTRLsum source/target/oracleword files: keywords as controls."""

    splits = ("train", "val", "test")
    default_split = "test"
    controls = ("keywords", "keyword_groups")
    options = (
        Option("path", str, "", "folder holding {split}.source, .target and .oraclewordns or .oracleword (--data)"),
        Option("keywords", str, "auto", "keyword file: full (.oraclewordns, what CTRLsum's test script evaluates), "
                                        "dropout (.oracleword, after training-time dropout), or auto: full when "
                                        "present", choices=("auto", *KEYWORD_FILES)),
        SKIP_INVALID,
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.requested_keywords = self.options["keywords"]

    def load(self, split):
        self.check_split(split)
        if not self.options["path"]:
            raise DatasetError("dataset 'ctrlsum' needs the folder of its files: --data PATH")
        folder = Path(self.options["path"])
        if folder.is_file():
            raise DatasetError(f"{folder}: a file; dataset 'ctrlsum' reads the folder that holds "
                               f"{{split}}.source, .target and the keyword files: --data {folder.parent}")
        keywords = self._keyword_file(folder, split)
        columns = {kind: self._lines(folder / f"{split}.{kind}") for kind in ("source", "target", keywords)}
        counts = {kind: len(lines) for kind, lines in columns.items()}
        if len(set(counts.values())) != 1:
            raise DatasetError(f"{folder}: {split} files are not aligned (lines: " +
                               ", ".join(f"{kind} {n}" for kind, n in counts.items()) + ")")
        rows = zip(range(1, counts["source"] + 1), *columns.values())
        return self.build_examples(rows, lambda row: self._example(folder, split, *row, keywords))

    def _keyword_file(self, folder: Path, split: str) -> str:
        """The keyword file's suffix; ``auto`` resolves per split, and the options record the choice."""
        choice = self.requested_keywords
        if choice == "auto":
            choice = "full" if (folder / f"{split}.oraclewordns").is_file() else "dropout"
            if choice == "dropout":
                logger.warning("ctrlkit: dataset 'ctrlsum': %s has no %s.oraclewordns (the full oracle keywords); "
                               "reading %s.oracleword, the keywords after training-time dropout", folder, split, split)
            self.options["keywords"] = choice
        return KEYWORD_FILES[choice]

    @staticmethod
    def _lines(path: Path) -> list[str]:
        try:
            text = path.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            raise DatasetError(f"{path}: no such file") from None
        except IsADirectoryError:
            raise DatasetError(f"{path}: a folder, not a file") from None
        except UnicodeDecodeError:
            raise DatasetError(f"{path}: not valid UTF-8") from None
        # lines end at "\n" only: str.splitlines would also cut at \x85, \u2028, \x0c ... inside a
        # line and shift every later line out of alignment with the other files
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        return lines  # read_text has already turned \r\n and \r into \n

    @staticmethod
    def _example(folder, split, line, source, target, oracleword, keyword_file) -> Example:
        for kind, text in (("source", source), ("target", target)):
            if not text.strip():
                raise DatasetError(f"{folder / f'{split}.{kind}'}:{line}: the line is empty")
        groups = [group.split() for group in oracleword.split("|") if group.split()]
        keywords = list(dict.fromkeys(word for group in groups for word in group))
        return Example(id=f"{split}-{line}", document=source.strip(), references=[target.strip()],
                       controls={"keywords": keywords, "keyword_groups": groups},
                       meta={"line": line, "keyword_file": f"{split}.{keyword_file}"})
