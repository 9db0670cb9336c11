"""``ctrlkit report``: a run, sweep or interference folder as one self-contained HTML page and a
Markdown file.

Reports get shared, and the predictions in them are model output, so nobody should have to
trust them: every text that comes from data is HTML-escaped, the page has no JavaScript (its
figures are inline SVG drawn by :mod:`.figures`, which also writes them as files with
``--figures``) and its Content-Security-Policy forbids scripts and loads from anywhere, in case
an escape is ever missed. Secrets in a folder's recorded
configuration (one written before they were masked) are masked again here.

A damaged folder (a file of another shape, a field of the wrong type, a cut-short file) is one
error line naming the file (and line) and the field, never a traceback or a silently wrong page.

- :mod:`.load`: a folder read into a :class:`.load.Report`, every field checked;
- :mod:`.render`: the HTML page and the Markdown file;
- :mod:`.figures` and :mod:`.drawn`: the charts (inline SVG, or files with ``--figures``), and
  which ones a report draws;
- :mod:`.write`: :func:`.write.write_report`, which does all three.
"""
