"""Reading CSV files the way released datasets write them: a byte-order mark before the header
(spreadsheets write one; left in, it becomes part of the first column's name, and an ``id``
column silently goes unread) and cells longer than the csv module's default limit of 131,072
characters (a whole paper in one cell)."""

import csv
import sys
from contextlib import contextmanager
from pathlib import Path


def raise_csv_field_limit() -> None:
    """Let the csv module read cells of any size: sys.maxsize, or the largest value the
    platform's C long holds."""
    limit = sys.maxsize
    while True:
        try:
            csv.field_size_limit(limit)
            return
        except OverflowError:
            limit //= 2


@contextmanager
def open_csv(path: Path | str):
    """The file opened for ``csv`` reading: UTF-8 with or without a byte-order mark, any cell size."""
    raise_csv_field_limit()
    with open(path, newline="", encoding="utf-8-sig") as file:
        yield file
