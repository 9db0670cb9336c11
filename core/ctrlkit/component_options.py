"""Which component of a run each given option is for.

Options are keyed by component name (``{"tag": {"top_n": 50}}``, ``--set tag.top_n=50``). Two
components of different kinds may share a name (the ``hf`` dataset and the ``hf`` backbone, the
``length`` controller and the ``length`` metric); a key may then name the kind too:
``dataset:hf``, ``backbone:hf`` (``--set dataset:hf.path=DIR``). A plain name still works when it
is unambiguous: only one component of the run has that name, or only one of those that do takes
the option. Otherwise it is refused, naming the qualified forms.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .errors import OptionError
from .plugins import KINDS, get_registry

Component = tuple[str, str]
"""``(kind, name)``: kind as the registries name it (``"datasets"``), name as registered."""

NOUNS = {noun: kind for kind, (_, noun) in KINDS.items()}
"""``"dataset"`` -> ``"datasets"``: the singular a qualified key uses."""


def kind_of(word: str) -> str | None:
    """The registry kind that ``word`` (singular or plural: ``dataset``, ``datasets``) names, or None."""
    word = word.strip().lower()
    return word if word in KINDS else NOUNS.get(word)


def qualified(component: Component) -> str:
    """``("datasets", "hf")`` -> ``"dataset:hf"``."""
    kind, name = component
    return f"{KINDS[kind][1]}:{name}"


def split_key(key: str) -> tuple[str | None, str]:
    """``"dataset:hf"`` -> ``("datasets", "hf")``; ``"hf"`` -> ``(None, "hf")``."""
    word, colon, name = key.partition(":")
    if not colon:
        return None, key
    kind = kind_of(word)
    if kind is None or not name:
        raise OptionError(f"--set {key}.*: expected KIND:NAME with KIND one of {', '.join(NOUNS)} "
                          f"(e.g. dataset:hf), or a plain component name")
    return kind, name


def _declared(component: Component) -> list[str]:
    kind, name = component
    registry = get_registry(kind)
    return [option.name for option in getattr(registry.entry(name).load(registry.kind), "options", ())]


class RunOptions:
    """The options given for a run, routed to its components.

    ``components`` are the run's components known before any is created; :meth:`add` adds one
    found later (a topic vectorizer a controller or metric asks for). With ``strict`` (a run), an
    option no component of the run takes is refused; without it (a sweep's cell, which gets the
    options of every cell, checked once by the sweep), an option goes only to a component that
    takes it.
    """

    def __init__(self, options: Mapping[str, Mapping[str, Any]] | None, components: Iterable[Component],
                 strict: bool = True):
        self.given = {key.strip(): dict(values) for key, values in (options or {}).items()}
        self.strict = strict
        self.components: list[Component] = []
        self._routed: dict[Component, dict[str, Any]] = {}
        self.add(*components)

    def add(self, *components: Component) -> None:
        self.components = list(dict.fromkeys([*self.components, *components]))
        self._routed = self._route()

    def of(self, kind: str, name: str) -> dict[str, Any]:
        """The options given for component ``name`` of ``kind`` (adding it when it is new)."""
        if (kind, name) not in self._routed:
            self.add((kind, name))
        return dict(self._routed[(kind, name)])

    def names(self, kind: str) -> dict[str, dict[str, Any]]:
        """``{name: options}`` of the run's components of ``kind`` (a controller chain's links)."""
        return {name: dict(values) for (k, name), values in self._routed.items() if k == kind}

    def key(self, component: Component) -> str:
        """How results.json names ``component``: its name, or ``kind:name`` when another component
        of the run has the same name."""
        clash = sum(1 for _, name in self.components if name == component[1]) > 1
        return qualified(component) if clash else component[1]

    def check_unused(self) -> None:
        """Refuse a key that names no component of the run (strict runs only)."""
        if not self.strict:
            return
        for key in self.given:
            kind, name = split_key(key)
            if not self._candidates(kind, name):
                noun = KINDS[kind][1] if kind else "component"
                shown = ", ".join(self.key(component) for component in self.components)
                raise OptionError(f"--set {key}.*: no {noun} named '{name}' in this run (components: {shown})")

    def _candidates(self, kind: str | None, name: str) -> list[Component]:
        return [c for c in self.components if c[1] == name and kind in (None, c[0])]

    def _route(self) -> dict[Component, dict[str, Any]]:
        routed: dict[Component, dict[str, Any]] = {component: {} for component in self.components}
        for key in sorted(self.given, key=lambda k: ":" in k):  # qualified keys after plain ones
            kind, name = split_key(key)
            candidates = self._candidates(kind, name)
            for option, value in self.given[key].items():
                target = self._target(key, option, candidates)
                if target is None:
                    continue
                if option in routed[target] and routed[target][option] != value:
                    raise OptionError(f"option '{self.key(target)}.{option}' is given twice, as "
                                      f"{routed[target][option]!r} and {value!r}; give it once")
                routed[target][option] = value
        return routed

    def _target(self, key: str, option: str, candidates: list[Component]) -> Component | None:
        """The component that ``key`` means for ``option``: among the run's components that ``key``
        may name, the one that takes the option."""
        takers = [c for c in candidates if option in _declared(c)]
        if len(takers) == 1:
            return takers[0]
        if len(takers) > 1:
            forms = " or ".join(f"--set {qualified(c)}.{option}=..." for c in takers)
            raise OptionError(f"--set {key}.{option} is ambiguous: {' and '.join(qualified(c) for c in takers)} "
                              f"both take it; write {forms}")
        if not self.strict or not candidates:
            return None
        if len(candidates) == 1:
            raise OptionError(f"Unknown option '{key}.{option}'. Valid options of {key}: "
                              f"{', '.join(_declared(candidates[0])) or 'none'}")
        raise OptionError(f"Unknown option '{key}.{option}': none of {', '.join(map(qualified, candidates))} "
                          f"takes it")
