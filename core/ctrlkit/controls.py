"""Partial controls: the one rule for an example that lacks a control a component reads.

Mixed-attribute datasets give a control on some examples only (a MACSum reference has a topic
or not). A controller leaves such an example uncontrolled: its input passes through unchanged.
A metric that reads a control scores only the examples that carry it, and the run records how
many. A run is refused before any work only when no example carries a control a component
reads, or, with ``strict``, when any example lacks one.
"""

from __future__ import annotations

from typing import Sequence

from .errors import ConfigurationError
from .types import Example, ModelInput


def given(value) -> bool:
    """Whether a control value is given: not None, not a blank string, not an empty list."""
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, (list, tuple)):
        return bool(value)
    return value is not None


def carries(example: Example, attribute: str) -> bool:
    """True when ``example`` has a value for control ``attribute``."""
    return given(example.controls.get(attribute))


def carries_all(component, example: Example) -> bool:
    """True when ``example`` carries every control ``component`` reads."""
    return all(carries(example, attribute) for attribute in component.reads)


def carries_needed(component, example: Example) -> bool:
    """True when ``example`` carries the controls ``component`` needs: every one it reads, or with
    ``reads_any`` one of them."""
    if getattr(component, "reads_any", False):
        return any(carries(example, attribute) for attribute in component.reads)
    return carries_all(component, example)


def applies_to(controller, example: Example) -> bool:
    """True when ``controller`` changes ``example``'s input: it carries the controls the controller
    needs (:func:`carries_needed`), or the controller renders whichever it has (``partial_controls``)."""
    return getattr(controller, "partial_controls", False) or carries_needed(controller, example)


def apply_control(controller, example: Example, model_input: ModelInput) -> ModelInput:
    """``controller.apply``, or ``model_input`` unchanged where the example lacks its controls.
    A chain decides for each of its controllers."""
    if hasattr(controller, "controllers") or applies_to(controller, example):
        return controller.apply(example, model_input)
    return model_input


def uncontrolled(controller, examples: Sequence[Example]) -> dict[str, int]:
    """For each controller (each link of a chain) that reads a control, how many of ``examples``
    it leaves as they are. A ``partial_controls`` controller (prompt) renders whichever controls
    an example has, so it leaves none."""
    links = getattr(controller, "controllers", [controller])
    return {link.name: sum(not applies_to(link, example) for example in examples)
            for link in links if link.reads}


def scored_indices(metric, examples: Sequence[Example]) -> list[int]:
    """The positions of the examples ``metric`` scores: those carrying every control it reads."""
    return [i for i, example in enumerate(examples) if carries_all(metric, example)]


def check_controls(component, examples: Sequence[Example], dataset: str, strict: bool = False) -> None:
    """Refuse, before any work, a control that no example carries, or with ``strict`` one that
    any example lacks (for a ``reads_any`` component: all of its controls at once)."""
    tally = ControlTally(component)
    tally.add(examples)
    tally.refuse(dataset, strict)


class ControlTally:
    """What :func:`check_controls` checks, counted over examples given a chunk at a time (``add``),
    so that a large evaluation checks them without holding them; ``refuse`` raises as it does."""

    def __init__(self, component):
        self.component = component
        if getattr(component, "reads_any", False) and component.reads:  # one requirement: any of them
            self.needs = [(f"one of the controls {', '.join(component.reads)}", "any",
                           lambda example: carries_needed(component, example))]
        else:
            self.needs = [(f"control '{attribute}'", "it",
                           lambda example, attribute=attribute: carries(example, attribute))
                          for attribute in component.reads]
        self.examples = 0
        self.lacking = [0] * len(self.needs)
        self.first_lacking: list[str | None] = [None] * len(self.needs)

    def add(self, examples: Sequence[Example]) -> None:
        self.examples += len(examples)
        for need, (_, _, carried) in enumerate(self.needs):
            for example in examples:
                if not carried(example):
                    self.lacking[need] += 1
                    if self.first_lacking[need] is None:
                        self.first_lacking[need] = example.id

    def refuse(self, dataset: str, strict: bool = False) -> None:
        kind = "metric" if hasattr(self.component, "compute") else "controller"
        for (what, found, _), lacking, first in zip(self.needs, self.lacking, self.first_lacking):
            if lacking and lacking == self.examples:
                raise ConfigurationError(f"{kind} '{self.component.name}' reads {what}, but no example of dataset "
                                         f"'{dataset}' has {found}")
            if lacking and strict:
                more = f" (and {lacking - 1} more)" if lacking > 1 else ""
                raise ConfigurationError(f"{kind} '{self.component.name}' reads {what}, but example "
                                         f"'{first}'{more} of dataset '{dataset}' has none (strict controls)")
