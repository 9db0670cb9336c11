"""Named entities as the EntSUM controls use them: the names a mention may take, and whether a
text mentions an entity. The guidance controller and the entity metric share this one rule.

**Aliases.** An entity is always found by its full name, as whole words, in any case, with any
whitespace between its words. Beyond it:

- An explicit ``aliases`` control on the example wins: the names it gives, and the full name,
  are then all there is; no alias is derived. It is a list of strings, or one string of names
  separated by ``|`` (not ``,``: a name may hold a comma, "Martin Luther King, Jr."). An empty
  list or string is explicit too: the full name only (say, for "Goldman Sachs").
- Otherwise a *person-like* name also matches by its surname (``surname``); any other name has
  no alias: "Bank of America" never matches "America", nor "United Nations" "nations".

A surname alias matches only where its first letter is written as in the name (so "Cook" and
"COOK" but not "cook the books" for Tim Cook); the full name and explicit aliases ignore case.

**Person-like**, decided offline without a named-entity model (``person_like``): after dropping
leading honorifics and titles (Mr., Mrs., Dr., President, Sen., Sir, Prince, Pope, ...) and a
trailing generational suffix (Jr., Sr., II, III, IV, with or without a comma before it), what is
left is 2 to 4 capitalised name words (1 to 4 when an honorific was dropped: "Mr. Smith"), where

- a name word starts with a capital letter and has a lowercase one ("McCain", "O'Brien",
  "Oxlade-Chamberlain", "al-Assad" with its Arabic article); all-capitals words ("NASA",
  "IBM") are acronyms, not names; an initial ("F.", "F", "J.K.") may stand anywhere but last;
- lowercase words may only be name particles between the first and the last word ("van",
  "de", "bin", ...): any other ("of", "for", "the", "and", "&") makes it not a person;
- no word is an organisation or place word (``ORGANISATION_WORDS``: Bank, Nations, United,
  Inc, Corp, Company, Group, University, Party, Department, Council, Republic, Kingdom, States,
  League, City, Street, ...) and the first is not a place prefix (``PLACE_FIRST_WORDS``: New,
  Los, San, Saudi, Hong, ...); "The" is never part of a person's name.

The surname is the last name word ("Barack Obama" -> "Obama", "Martin Luther King Jr." ->
"King", "Ludwig van Beethoven" -> "Beethoven"); an Arabic article prefix also gives the bare
name ("Bashar al-Assad" -> "al-Assad" and "Assad").

Limits, by design of a word-list rule: an organisation or place named by two capitalised words
outside the lists ("Goldman Sachs", "Morgan Stanley", "Al Qaeda") reads as a person and gets a
surname alias; a person whose name holds a listed word ("Margaret Court", "Michael Bay") gets none;
so does a title phrase with a connector ("Secretary of State John Kerry") and a name written
in lowercase or all capitals. Give the ``aliases`` control for those, or let spaCy's recogniser
correct the rule (``mentions=spacy``, ``ctrlkit.entity_mentions``).
"""

from __future__ import annotations

import re
from functools import lru_cache

from .errors import ConfigurationError

ALIAS_SEPARATOR = "|"

HONORIFICS = frozenset("""
mr mrs ms miss mx dr prof professor sir dame lord lady madam mme mlle m
president minister premier chancellor secretary senator sen rep representative
congressman congresswoman gov governor mayor judge justice ambassador commissioner chairman
chairwoman chair speaker leader gen lt col capt cmdr adm maj sgt cpl pvt colonel captain major
lieutenant sergeant admiral commander marshal officer detective inspector constable
rev reverend father fr sister rabbi imam sheikh cardinal bishop archbishop pope
king queen prince princess duke duchess earl baron count countess emperor empress coach
""".split())
"""Leading words dropped before the person test (compared lowercased, without a final ".")."""

TITLE_PREFIXES = frozenset({"vice", "prime", "deputy", "acting", "former", "first", "chief"})
"""Dropped only before an honorific: "Vice President", "Prime Minister", "First Lady"."""

SUFFIXES = frozenset({"jr", "sr", "ii", "iii", "iv", "v"})
"""Trailing generational suffixes (compared lowercased, without a final "." or a comma)."""

PARTICLES = frozenset("van von der den de da di del della du dos das le la bin ibn ben al el y ter ten".split())
"""Lowercase name particles allowed between a person's first and last words."""

ARABIC_ARTICLE = re.compile(r"^(?:al|el|as|ash|ad|an|ar|at|az)-(?=[^\W\d_])")

ORGANISATION_WORDS = frozenset("""
bank banks bancorp nations united inc incorporated corp corporation co company companies group
holdings ltd llc llp plc lp ag sa nv gmbh limited partners partnership trust fund funds capital
securities financial insurance investments investment management exchange reserve
university college school academy institute institution laboratory laboratories labs
party parties department dept association council ministry agency agencies republic kingdom
states state union federation confederation commonwealth committee commission court courts club
foundation society organization organisation bureau office authority board administration
service services senate congress parliament assembly house cabinet government police army navy
force forces guard corps military airlines airline airways air motors motor systems technologies
technology industries international national federal royal global worldwide times post news
journal press daily tribune herald gazette magazine media network networks communications
broadcasting studios records entertainment pictures sports league cup championship championships
olympics games tournament team church cathedral temple mosque museum hospital clinic center
centre palace stadium arena airport station bridge tower castle street avenue road square river
mountain mountains island islands city county province region district territory town village
peninsula coast valley bay gulf sea ocean lake desert forest north south east west northern
southern eastern western central america american europe european africa african asia asian
brothers sons energy oil petroleum gas steel electric electronics pharmaceuticals software
telecom foods stores markets movement front alliance coalition brigade brigades
war act treaty accord summit conference festival prize award awards day marathon hill hills
public schools globe rangers wanderers rovers athletic albion hotspur
""".split())
"""Words that make a capitalised name an organisation or a place (compared lowercased)."""

PLACE_FIRST_WORDS = frozenset("""
new los las san santa sao são el la le rio puerto costa hong sri saudi tel buenos kuala addis
cape mount fort port saint st sainte great greater middle latin wall sierra real atletico bayern inter
""".split())
"""First words of multi-word places and clubs whose other words are not listed ("Los Angeles",
"Saudi Arabia", "Real Madrid")."""

_NAME_WORD = re.compile(r"(?:(?:al|el|as|ash|ad|an|ar|at|az)-)?[^\W\d_][\w'’.-]*")
_INITIALS = re.compile(r"[^\W\d_]\.?|(?:[^\W\d_]\.){2,3}")


def _bare(word: str) -> str:
    return word.rstrip(".,").lower()


def _is_initial(word: str) -> bool:
    """"F", "F." or "J.K.": capital letters, each followed by a period when there are several."""
    return bool(_INITIALS.fullmatch(word)) and word.replace(".", "").isupper()


def _is_name_word(word: str) -> bool:
    """Capitalised (after an optional Arabic article), with a lowercase letter: not an acronym."""
    if not _NAME_WORD.fullmatch(word):
        return False
    core = ARABIC_ARTICLE.sub("", word)
    return core[:1].isupper() and any(ch.islower() for ch in core) and not any(ch.isdigit() for ch in core)


def _person_words(entity: str) -> list[str] | None:
    """The name words of a person-like ``entity`` (honorifics, suffixes, particles dropped), or None."""
    words = entity.split()
    honorific = False
    while len(words) > 1 and (_bare(words[0]) in HONORIFICS or (
            _bare(words[0]) in TITLE_PREFIXES and _bare(words[1]) in HONORIFICS)):
        words, honorific = words[1:], True
    while words and _bare(words[-1]) in SUFFIXES and len(words) > 1:
        words = words[:-1]
    if words and words[-1].endswith(","):  # "Martin Luther King, Jr."
        words[-1] = words[-1][:-1]
    if not words or _bare(words[0]) in PLACE_FIRST_WORDS:
        return None
    names = []
    for position, word in enumerate(words):
        bare = _bare(word)
        if bare in ORGANISATION_WORDS or bare == "the":
            return None
        if word in PARTICLES and 0 < position < len(words) - 1:
            continue
        if _is_initial(word) and position < len(words) - 1:
            names.append(word)
            continue
        if not _is_name_word(word.rstrip(".")):
            return None
        names.append(word)
    if not (1 if honorific else 2) <= len(names) <= 4:
        return None
    if all(_bare(name) in HONORIFICS | TITLE_PREFIXES for name in names):  # "Prime Minister"
        return None
    return names


def person_like(entity: str) -> bool:
    """True when ``entity`` reads as a person's name by the rule of this module's docstring."""
    return _person_words(entity.strip()) is not None


def surname(entity: str) -> str | None:
    """The last name word of a person-like ``entity`` ("Martin Luther King Jr." -> "King"), else None."""
    names = _person_words(entity.strip())
    return names[-1].rstrip(".") if names else None


MAX_ALIASES = 100
MAX_ALIAS_CHARS = 200
"""The most names an ``aliases`` control may give, and the longest: the names are searched for
together in each sentence, so the time is the text's length times their number; these bounds
keep it linear in the text (an entity has a few names, not thousands)."""


def given_aliases(value) -> tuple[str, ...] | None:
    """An ``aliases`` control as a tuple of names: None when the control is absent (None);
    a list of strings, or one string separated by ``|``; blanks dropped. More than
    ``MAX_ALIASES`` names, or one over ``MAX_ALIAS_CHARS`` characters, is refused in one line."""
    if value is None:
        return None
    if isinstance(value, str):
        value = value.split(ALIAS_SEPARATOR)
    if not isinstance(value, (list, tuple)) or not all(isinstance(name, str) for name in value):
        raise ConfigurationError(f"control 'aliases' must be a list of names or "
                                 f"one string of names separated by '{ALIAS_SEPARATOR}', got {type(value).__name__}")
    names = tuple(" ".join(name.split()) for name in value if name.strip())
    if len(names) > MAX_ALIASES or any(len(name) > MAX_ALIAS_CHARS for name in names):
        raise ConfigurationError(f"control 'aliases' gives {len(names)} names, the longest of "
                                 f"{max(map(len, names))} characters; at most {MAX_ALIASES} names of up to "
                                 f"{MAX_ALIAS_CHARS} characters are searched for")
    return names


def aliases(entity: str, given=None) -> list[str]:
    """The names that mention ``entity``: its full name first, then either the explicit aliases
    ``given`` (an ``aliases`` control: a list, or a string separated by ``|``), or, with none
    given, the surname of a person-like name ("Barack Obama" -> also "Obama")."""
    return [alias for alias, _ in _aliases(entity.strip(), given_aliases(given))]


def _aliases(entity: str, given: tuple[str, ...] | None) -> list[tuple[str, bool]]:
    """``(alias, case-sensitive first letter)`` pairs, the full name first, without repeats."""
    found = [(entity, False)]
    if given is not None:
        found += [(name, False) for name in given]
    else:
        last = surname(entity)
        if last:
            found.append((last, True))
            bare = ARABIC_ARTICLE.sub("", last)
            if bare != last:
                found.append((bare, True))
    seen, unique = set(), []
    for alias, cased in found:
        if alias.lower() not in seen and alias:
            seen.add(alias.lower())
            unique.append((alias, cased))
    return unique


@lru_cache(maxsize=4096)
def _pattern(entity: str, given: tuple[str, ...] | None) -> re.Pattern:
    # any whitespace between the words of a name; not inside a longer word ("Obamacare")
    names = []
    for alias, cased in _aliases(entity, given):
        words = alias.split()
        name = r"\s+".join(map(re.escape, words))
        if cased:  # a surname (one word) counts only where it is capitalised as in the name
            name = f"(?-i:{re.escape(alias[0])})" + re.escape(alias[1:])
        names.append(name)
    if not names:
        return re.compile(r"(?!)")  # a blank name mentions nothing
    return re.compile(r"(?<!\w)(?:" + "|".join(names) + r")(?!\w)", re.IGNORECASE)


def mentions(text: str, entity: str, given=None) -> bool:
    """True when ``text`` contains ``entity`` or one of its ``aliases(entity, given)`` as whole words."""
    return _pattern(entity.strip(), given_aliases(given)).search(text) is not None
