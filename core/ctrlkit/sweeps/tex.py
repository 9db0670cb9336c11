"""A sweep's table.tex: the table as a paper prints it (booktabs).

One block of rows per dataset and backbone, the best value of each block in bold (the way each
value is better, :mod:`ctrlkit.metric_values`), beside each value of a row that is not its
block's reference the difference to the reference, marked with a dagger where it is significant
after Holm's correction, and a last line saying the test. Needs ``\\usepackage{booktabs}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..files import atomic_write_text
from ..metric_values import is_count
from ..results import value_text
from .compare import reference_phrase

SIGNIFICANCE = 0.05
_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
            "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def escape_latex(text: str) -> str:
    """``text`` as LaTeX prints it literally: its special characters escaped."""
    return "".join(_SPECIAL.get(character, character) for character in str(text))


def write_tex(out_dir: Path, rows: Sequence[dict], cols: Sequence[tuple[str, str]], labels: Sequence[str],
              ways: Sequence, bests: Sequence[dict], comparisons: dict | None) -> None:
    """table.tex of the sweep's ``rows`` (``bests``: :func:`ctrlkit.sweeps.table.best_values`;
    ``comparisons``: what table.json says of the tests, None when none were made)."""
    width = 1 + len(cols)
    header = ["controller", *(escape_latex(name) + (r" $\downarrow$" if way == "lower" else "")
                              for name, way in zip(labels, ways))]
    lines = [r"\begin{tabular}{l" + "r" * len(cols) + "}", r"\toprule", " & ".join(header) + r" \\"]
    group_best = {(group["dataset"], group["backbone"]): group["values"] for group in bests}
    block = None
    for row in rows:
        if (row["dataset"], row["backbone"]) != block:
            block = row["dataset"], row["backbone"]
            lines += [r"\midrule", rf"\multicolumn{{{width}}}{{l}}{{\emph{{{escape_latex(row['dataset'])}}}, "
                                   rf"{escape_latex(row['backbone'])}}} \\"]
        cells = [escape_latex(row["controller"])]
        for column, name in zip(cols, labels):
            value = row["metrics"].get(column[0], {}).get(column[1])
            cells.append(_cell(value, column, value is not None and value == group_best[block][name],
                               ((row.get("paired") or {}).get(column[0]) or {}).get(column[1])))
        lines.append(" & ".join(cells) + r" \\")
    lines.append(r"\bottomrule")
    if comparisons and comparisons.get("tests"):
        lines.append(rf"\multicolumn{{{width}}}{{l}}{{\footnotesize {_note(comparisons)}}} \\")
    lines.append(r"\end{tabular}")
    atomic_write_text(out_dir / "table.tex", "\n".join(lines) + "\n")


def _cell(value: float | None, column: tuple[str, str], bold: bool, test: dict | None) -> str:
    if value is None:
        return "--"
    text = value_text(value, is_count(column[1]))
    text = rf"\textbf{{{text}}}" if bold else text
    if test and test.get("difference") is not None:
        mark = r"$^\dagger$" if test.get("p_holm") is not None and test["p_holm"] < SIGNIFICANCE else ""
        text += rf" ({test['difference']:+.4f}{mark})"
    return text


def _note(comparisons: dict) -> str:
    reference = escape_latex(reference_phrase(comparisons))
    return (rf"Bold: the best of each block. In parentheses: the difference to the reference row "
            rf"({reference}); $^\dagger$: significant at {SIGNIFICANCE:g} after Holm's correction "
            rf"across the table's {comparisons['tests']} comparisons (paired permutation test, "
            rf"{comparisons['resamples']} permutations, each swapping the two rows' outputs on whole groups of "
            rf"examples: those that share a document).")
