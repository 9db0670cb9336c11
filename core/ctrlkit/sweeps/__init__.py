"""Sweeps: the grid of controllers x backbones x datasets, each cell a run, and the paper's table.

- :mod:`.sweep`: :func:`ctrlkit.sweep` itself, and :func:`.sweep.run_recipe`;
- :mod:`.plan`: a sweep's settings completed and checked, and its cells, each reused or to run;
- :mod:`.settings` and :mod:`.config`: a sweep's settings, checked, and the TOML or YAML file holding them;
- :mod:`.variants`: a component with other options, named as a row of its own;
- :mod:`.recipes`: a paper's protocol as a settings file shipped with ctrlkit;
- :mod:`.cells`: running one cell (an executor calls it: :mod:`ctrlkit.executors`), and whether a
  cell already done is reused;
- :mod:`.folder`: what a sweep folder holds, and when another sweep may resume it;
- :mod:`.compare`: each cell against its reference row (paired tests, Holm);
- :mod:`.table` and :mod:`.tex`: the table, as JSON, CSV, Markdown and LaTeX.
"""
