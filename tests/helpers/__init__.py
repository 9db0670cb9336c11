"""What the tests share besides fixtures (those are in the conftest.py files): import it as
``from helpers import shared_file, invoke_ctrlkit`` or ``from helpers.chat_server import serving``.
pytest puts tests/ on sys.path (``pythonpath`` in pyproject.toml), so ``helpers`` is found from any
folder of tests/. A test module never imports another test module: what two of them share lives here.

- ``paths``: ``ROOT``, ``SHARED_DATA``, ``NEWTS_CSV`` and ``shared_file`` (skips without the shared data)
- ``commands``: ``run_ctrlkit`` (a fresh process) and ``invoke_ctrlkit`` (this process)
- ``tiny_models``: tiny transformers models built offline (BART, T5, PEGASUS, GPT-2)
- ``local_ray``: a Ray cluster of one machine, loopback only, token required
- ``chat_server``, ``recording_chat``, ``faulty_chat``: loopback chat-completions servers
- ``slow_backbone``: a backbone slow enough to interrupt
- ``ccs_release``: a small CCSBench release written for a test
- ``fd_pubmed``: a PubMed-shaped FD file derived from the shared arXiv one
- ``prompt_cuts``: checks of how the transformers backbones fit long prompts
- ``p_values``: a p-value as ctrlkit prints it
- ``record_schemas``: the JSON Schemas of results.json, sweep.json and table.json, as validators
- ``browser``: headless chromium for the report's pages
- ``english_ner``: spaCy's small English pipeline loaded apart from ctrlkit (skips without it), news articles
- ``prompt_judge``: a judge backbone that records every prompt a metric sends, and a writer of template files
- ``memory``: ``peak_bytes``, the peak memory of a call (tracemalloc)
"""

from helpers.commands import invoke_ctrlkit, run_ctrlkit
from helpers.paths import NEWTS_CSV, ROOT, SHARED_DATA, shared_file

__all__ = ["NEWTS_CSV", "ROOT", "SHARED_DATA", "invoke_ctrlkit", "run_ctrlkit", "shared_file"]
