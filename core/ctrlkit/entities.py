"""Named entities as the EntSUM controls use them: the names a mention may take, and whether a
text mentions an entity. The guidance controller and the entity metric share this rule."""

from __future__ import annotations

import re
from functools import lru_cache


def aliases(entity: str) -> list[str]:
    """The full name, and its last word when it has several ("Barack Obama" -> also "Obama")."""
    words = entity.split()
    return [entity.strip()] + ([words[-1]] if len(words) > 1 else [])


@lru_cache(maxsize=4096)
def _pattern(entity: str) -> re.Pattern:
    # any whitespace between the words of a name; not inside a longer word ("Obamacare")
    names = (r"\s+".join(map(re.escape, alias.split())) for alias in aliases(entity))
    return re.compile(r"(?<!\w)(?:" + "|".join(names) + r")(?!\w)", re.IGNORECASE)


def mentions(text: str, entity: str) -> bool:
    """True when ``text`` contains ``entity`` or one of its aliases as whole words, in any case."""
    return _pattern(entity).search(text) is not None
