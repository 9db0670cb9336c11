"""What a plugin may import from ctrlkit beside the package's own names (``ctrlkit.Metric``,
``ctrlkit.Option``, ...): the helpers the bundled plugins use, each in one place, so that the
core's modules can move without breaking a plugin. ``from ctrlkit.plugin_api import sentences``.

Every name loads on first use, from the module that holds it, as the package's names do: a
plugin importing one helper pays for that helper's module only.
"""

from typing import TYPE_CHECKING

from . import lazy_names

_HOMES = {
    "cache": ("Cache", "cache_key"),
    "component_options": ("RunOptions", "split_key"),
    "components": ("weighted_mean",),
    "controls": ("carries", "given"),
    "correlations": ("weighted_pearson",),
    "entities": ("aliases", "given_aliases", "mentions"),
    "entity_mentions": ("MENTION_FINDERS", "MentionFinder"),
    "files": ("atomic_write_json", "atomic_write_jsonl", "missing_field", "read_json", "read_jsonl", "require_text"),
    "hub": ("hub_unreachable", "is_local", "offline_setting"),
    "intake": ("Intake",),
    "options": ("SKIP_INVALID", "parse_assignments"),
    "outputs": ("refuse_writing_over_inputs",),
    "quiet": ("quiet_new_imports",),
    "secrets": ("scrub_text",),
    "sweeps.cells": ("run_cell",),
    "text": ("WORD", "lemma", "sentences", "word_count"),
}
"""The module each name lives in."""

__all__ = [
    "Cache", "Intake", "MENTION_FINDERS", "MentionFinder", "RunOptions", "SKIP_INVALID", "WORD", "aliases",
    "atomic_write_json", "atomic_write_jsonl", "cache_key", "carries", "given", "given_aliases", "hub_unreachable", "is_local",
    "lemma", "mentions", "missing_field", "offline_setting", "parse_assignments", "quiet_new_imports",
    "read_json", "read_jsonl", "refuse_writing_over_inputs", "require_text", "run_cell", "scrub_text", "sentences", "split_key",
    "weighted_mean", "weighted_pearson", "word_count"
]

if TYPE_CHECKING:  # what editors and type checkers read; at run time, __getattr__ below
    from .cache import Cache, cache_key
    from .component_options import RunOptions, split_key
    from .components import weighted_mean
    from .controls import carries, given
    from .correlations import weighted_pearson
    from .entities import aliases, given_aliases, mentions
    from .entity_mentions import MENTION_FINDERS, MentionFinder
    from .files import atomic_write_json, atomic_write_jsonl, missing_field, read_json, read_jsonl, require_text
    from .hub import hub_unreachable, is_local, offline_setting
    from .intake import Intake
    from .options import SKIP_INVALID, parse_assignments
    from .outputs import refuse_writing_over_inputs
    from .quiet import quiet_new_imports
    from .secrets import scrub_text
    from .sweeps.cells import run_cell
    from .text import WORD, lemma, sentences, word_count


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
