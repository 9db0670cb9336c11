"""``ctrlkit report DIR``: the page, the Markdown file and, when asked, each figure as a file."""

from __future__ import annotations

from pathlib import Path

from ..errors import CtrlkitError
from ..files import atomic_write_text
from .drawn import draw_figures
from .figures import FORMATS, save
from .load import load
from .render import render_html, render_markdown

DEFAULT_EXAMPLES = 5


def write_report(directory, out=None, examples: int = DEFAULT_EXAMPLES, figures: str | None = None) -> tuple[Path, ...]:
    """Write the HTML report (``out``, default DIR/report.html) and the Markdown one beside it;
    with ``figures`` (pdf, png or svg), each figure too, as a file in a ``figures`` folder beside
    them. Returns the paths written: the HTML, the Markdown, then the figures."""
    if figures is not None and figures not in FORMATS:
        raise CtrlkitError(f"--figures {figures}: choose one of {', '.join(FORMATS)}")
    report = load(directory)
    html_path = Path(out) if out else Path(directory) / "report.html"
    markdown_path = html_path.with_suffix(".md")
    if markdown_path == html_path:
        raise CtrlkitError(f"--out {out}: name the HTML file; the Markdown report is written beside it")
    drawn = list(draw_figures(report))
    atomic_write_text(html_path, render_html(report, examples, drawn))
    atomic_write_text(markdown_path, render_markdown(report, examples))
    written = []
    if figures:
        folder = html_path.parent / "figures"
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise CtrlkitError(f"{folder} is a link or a file, not a folder of figures; remove it or pass another --out")
        for figure in drawn:
            written.append(folder / f"{figure.name}.{figures}")
            save(figure.figure, written[-1], figures)
    return (html_path, markdown_path, *written)
