"""MACSum's own control metrics (Zhang et al., "MACSum: Controllable Summarization with Mixed
Attributes", TACL 2023): the control error rate ``cer`` and the control correlation ``cc``.

Both read the same attribute measures of a summary, defined as in the authors' evaluation scripts
(github.com/psunlpgroup/MACSum, ``metric/*_only.py``) and written anew here:

- **length** L(s): the number of tokens of s.
- **extractiveness** E(s): the mean of the ROUGE-2 and ROUGE-3 precision of s against the source,
  counted as the ``rouge`` package the authors call counts: the text is cut at every full stop,
  the pieces split at whitespace (case and other punctuation kept), and each text's n-grams taken
  as a set; precision = |n-grams of s also in the source| / |n-grams of s| (0 when s has none).
- **topic** K(s): the share of the topic's alphabetic tokens found in s, each one looked for as a
  case-insensitive substring of s (as the authors do, so ``art`` is found in ``start``); 0 for a
  topic without an alphabetic token.
- **speaker** S(s) (MACSum-Dial): the source is cut at every colon, and a piece that follows one
  whose text contains a requested speaker's name (case-insensitive; names are the ``speaker``
  control split at ``,``, ``;`` and ``:``) is that speaker's turn. S(s) is the share of the content
  tokens of s (lowercased; NLTK's English stop words, ``disfmarker``, ``vocalsound`` and single
  punctuation marks left out) that occur among the content tokens of those turns.

**Tokenizer.** Tokens are those of NLTK's ``word_tokenize``, Treebank-style
(``nltk.tokenize.NLTKWordTokenizer``), applied to each sentence that pysbd finds
(``ctrlkit.text.sentences``): ``word_tokenize`` itself first splits sentences with Punkt, whose
model is an ``nltk.download`` and is not used here.

Departures from the authors' procedure (what needs a download, what fails in their code, and the
pairing ctrlkit asks for), so that numbers are close to, not identical with, theirs:

- **No specificity.** The authors' specificity score (0.1 x VBG + 0.2 x tokens + 0.3 x NN +
  0.4 x CD, over the non-stop-word tokens, per sentence) needs NLTK's averaged-perceptron POS
  tagger, a download; no offline package reproduces its tags, so neither metric reports
  specificity, and ``cc`` uses no pair that differs only in specificity.
- **Sentences by pysbd, not Punkt**, as above: a token count differs only where the two splitters
  disagree about a full stop (``ends.`` is one token inside a sentence, two at its end).
- **Stop words** are NLTK's English list as it stood then (179 words), written out below because
  the NLTK corpus is a download.
- **Speaker turns are tokenised one by one and before lowercasing** (the authors lowercase the
  text, then tokenise the turns glued together with no separator, which can fuse the last word of
  one turn with the first of the next; lowercasing first would also hide sentence starts from the
  splitter). A summary without a content token scores S = 0 (their code divides by zero).
- **An empty summary** scores E = 0 (their ROUGE raises an error). Whitespace-only pieces between
  full stops add no empty token here (their tokeniser adds one).
- **MACSum-Dial sources** are the utterances joined by newlines (ctrlkit's ``macsum`` dataset); the
  authors joined them with `` </s> ``. This changes only the n-grams that span two utterances.
- **cc pairs** are every pair of references of one source whose controls differ in exactly one
  attribute (the others held fixed), as ctrlkit's issue specifies; the authors' script paired each
  reference only with the one before it in the file (same source and topic, and speaker on Dial),
  and counted a pair for every attribute that differed, whether or not others differed too.
"""

from __future__ import annotations

import re
import string
from collections import defaultdict
from functools import lru_cache
from itertools import combinations
from statistics import fmean

from ctrlkit import Metric, MetricResult
from ctrlkit.plugin_api import weighted_mean
from ctrlkit.plugin_api import sentences

LEVELS = {
    "length": {"short": 0, "normal": 1, "long": 2},
    "extractiveness": {"normal": 0, "high": 1, "fully": 2},
}
"""The ordinal value of each level of the attributes that ``cc`` measures (the authors' numbering)."""

NLTK_ENGLISH_STOP_WORDS = frozenset("""
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves
he him his himself she she's her hers herself it it's its itself they them their theirs themselves
what which who whom this that that'll these those am is are was were be been being have has had
having do does did doing a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on off over
under again further then once here there when where why how all any both each few more most other
some such no nor not only own same so than too very s t can will just don don't should should've
now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn
hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn
shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
""".split())

_NOT_CONTENT = NLTK_ENGLISH_STOP_WORDS | {"disfmarker", "vocalsound"} | set(string.punctuation)
_NAME_SEPARATORS = re.compile(r"[,;:]")


class _Measures:
    """The attribute measures of one ``compute`` call, with what they reuse across summaries of
    one source (its n-grams, a speaker's turns) kept for the length of that call."""

    def __init__(self):
        from nltk.tokenize import NLTKWordTokenizer  # nltk imports slowly: not at `ctrlkit list`

        word_tokenize = NLTKWordTokenizer().tokenize
        # one cache per call: a source's turns serve many speaker requests, a summary several measures
        self.tokens = lru_cache(maxsize=None)(
            lambda text: tuple(token for sentence in sentences(text) for token in word_tokenize(sentence)))
        self._source_ngrams: dict[str, tuple[set, set]] = {}
        self._turn_words: dict[tuple[str, tuple[str, ...]], frozenset[str]] = {}

    def length(self, text: str) -> float:
        return float(len(self.tokens(text)))

    def extractiveness(self, text: str, source: str) -> float:
        if source not in self._source_ngrams:
            words = _stop_split_words(source)
            self._source_ngrams[source] = (_ngram_set(words, 2), _ngram_set(words, 3))
        words = _stop_split_words(text)
        return fmean(_precision(_ngram_set(words, n), in_source)
                     for n, in_source in zip((2, 3), self._source_ngrams[source]))

    def topic(self, text: str, topic: str) -> float:
        words = [token.lower() for token in self.tokens(topic) if token.isalpha()]
        if not words:
            return 0.0
        text = text.lower()
        return sum(word in text for word in words) / len(words)

    def speaker(self, text: str, source: str, names: tuple[str, ...]) -> float:
        turns = self._speaker_turn_words(source, names)
        words = self._content_words(text)
        return sum(word in turns for word in words) / len(words) if words else 0.0

    def _speaker_turn_words(self, source, names) -> frozenset[str]:
        key = (source, names)
        if key not in self._turn_words:
            pieces = source.split(":")
            words = set()
            for before, after in zip(pieces, pieces[1:]):
                if any(name in before.lower() for name in names):
                    words.update(self._content_words(after))
            self._turn_words[key] = frozenset(words)
        return self._turn_words[key]

    def _content_words(self, text: str) -> list[str]:
        return [word for word in (token.lower() for token in self.tokens(text)) if word not in _NOT_CONTENT]


def _stop_split_words(text: str) -> list[str]:
    """Words as the ``rouge`` package splits them: the text cut at full stops, then at whitespace."""
    return [word for piece in text.split(".") for word in piece.split()]


def _ngram_set(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def _precision(ngrams: set, in_source: set) -> float:
    return len(ngrams & in_source) / len(ngrams) if ngrams else 0.0


def _speaker_names(value) -> tuple[str, ...]:
    return tuple(name.strip().lower() for name in _NAME_SEPARATORS.split(str(value or "")) if name.strip())


def _present(value) -> bool:
    """The pipeline's rule: a control is absent when missing, None, an empty string or list."""
    return value is not None and value != "" and value != []


def _is_dialogue(examples) -> bool:
    """MACSum-Dial: its sources are QMSum meetings, and only its references request speakers."""
    return any(example.meta.get("dataset") == "qmsum" or _present(example.controls.get("speaker"))
               for example in examples)


class ControlErrorRate(Metric):
    """MACSum's control error rate (CER; Zhang et al., TACL 2023): for each attribute, how far the
    summary's measured value lies from that of the reference written for the same controls.

    Per example, with s the summary, r its reference (the first; MACSum has one per example) and
    the measures L, E, K, S of ``ctrlkit_metrics.macsum_control``, normalised as the authors do:

    - ``length`` = |L(s) - L(r)| / L(r)
    - ``extractiveness`` = |E(s) - E(r)| / (E(r) + 0.1)
    - ``topic`` = |K(s) - K(r)| / K(r), or / 0.1 when K(r) = 0; None without a ``topic`` control
    - ``speaker`` (MACSum-Dial only) = |S(s) - S(r)| / (S(r) + 0.1); None without a ``speaker``

    Corpus: each attribute's mean over the examples where it is defined, that count as
    ``n_length``, ``n_extractiveness``, ``n_topic`` (and ``n_speaker``), and ``average``, the mean of
    the attribute means that are defined (a ctrlkit summary; the authors' checkpoint selection
    averages the same error rates together with 1 - ROUGE). 0 is perfect; lower is better. The
    ``speaker`` values appear when the examples are dialogues (a ``qmsum`` source or a ``speaker``
    control). Specificity is not measured: see the module's departures. Tokens: NLTK's Treebank
    tokenizer on pysbd sentences. The attribute means and ``average`` are recomputed for a subset
    (:meth:`aggregate`); the counts are not.
    """

    needs_references = True
    higher_is_better = False

    def compute(self, predictions, examples):
        measure = _Measures()
        attributes = ["length", "extractiveness", "topic"] + (["speaker"] if _is_dialogue(examples) else [])
        errors = {attribute: [] for attribute in attributes}
        for prediction, example in zip(predictions, examples):
            for attribute in attributes:
                errors[attribute].append(_error(measure, attribute, prediction, example))
        corpus = {}
        for attribute in attributes:
            defined = [error for error in errors[attribute] if error is not None]
            corpus[attribute] = fmean(defined) if defined else None
            corpus[f"n_{attribute}"] = len(defined)
        means = [corpus[attribute] for attribute in attributes if corpus[attribute] is not None]
        corpus["average"] = fmean(means) if means else None
        return MetricResult(per_example=errors, corpus=corpus)

    def aggregate(self, parts, weights):
        import numpy as np

        found = {attribute: weighted_mean(errors, weights) for attribute, errors in parts.items()}
        means = np.stack(list(found.values()))
        defined = ~np.isnan(means)
        count = defined.sum(axis=0)
        found["average"] = np.where(count > 0, np.where(defined, means, 0.0).sum(axis=0) / np.maximum(count, 1), np.nan)
        return found


def _error(measure: _Measures, attribute: str, prediction: str, example) -> float | None:
    """One example's control error for one attribute, or None where it is undefined."""
    if not example.references:
        return None
    reference = example.references[0]
    if attribute == "length":
        gold = measure.length(reference)
        return abs(measure.length(prediction) - gold) / gold if gold else None
    if attribute == "extractiveness":
        gold = measure.extractiveness(reference, example.document)
        return abs(measure.extractiveness(prediction, example.document) - gold) / (gold + 0.1)
    if attribute == "topic":
        topic = example.controls.get("topic")
        if not _present(topic):
            return None
        topic = topic if isinstance(topic, str) else " ".join(map(str, topic))
        gold = measure.topic(reference, topic)
        return abs(measure.topic(prediction, topic) - gold) / (gold or 0.1)
    names = _speaker_names(example.controls.get("speaker"))
    if not names:
        return None
    gold = measure.speaker(reference, example.document, names)
    return abs(measure.speaker(prediction, example.document, names) - gold) / (gold + 0.1)


class ControlCorrelation(Metric):
    """MACSum's control correlation (CC; Zhang et al., TACL 2023): how far a summary's measured
    attribute moves, per level, when only that attribute of the request changes.

    Pairs: two examples of one source (same ``meta["source_index"]``) whose controls differ in
    exactly one attribute (a control absent from one counts as a difference), that attribute being
    ``length`` (short 0, normal 1, long 2) or ``extractiveness`` (normal 0, high 1, fully 2). For
    such a pair (i, j), with the measures L and E of ``ctrlkit_metrics.macsum_control`` on the two
    summaries: (L(s_i) - L(s_j)) / (v_i - v_j) for length, in tokens per level, and likewise
    E for extractiveness, in precision per level. It works on whatever examples it is given: pairs
    are formed among them only.

    Corpus: ``length`` and ``extractiveness``, each the mean over its pairs (None without one), and
    ``n_length_pairs``, ``n_extractiveness_pairs``. MACSum reads CC against the references: the
    closer to the references' own CC, the better (a summarizer that ignores the control scores 0).
    So the same pairs are measured on the examples' first references too: ``gold_length`` and
    ``gold_extractiveness``, and ``length_gap`` and ``extractiveness_gap`` = |CC - gold CC|, lower
    is better (None where an example of a pair has no reference). Per example: the measured
    ``tokens`` and ``extractive_precision`` (E) of the summary. Topic and speaker have no order, so
    no CC; specificity is not measured (see the module's departures).

    Every value but the pair counts is recomputed for a weighted subset (:meth:`aggregate`), a
    pair weighing the smaller of its two examples' weights. A bootstrap resample that draws a
    source k times holds k copies of it, and each copy holds the pair once: k pairs, not the k x k
    that pairing every copy of one example with every copy of the other would give (``macsum``
    groups examples by source, so both examples of a pair weigh k). Examples weighed apart (a
    source's examples in different groups) are put in copies of their source in turn, so that two
    weighing a and b share min(a, b) copies. Parts, per example and attribute: the measures of
    the summary and of the reference (the latter None when it is in no pair or has no
    reference), the level requested (None when not one of MACSum's), and ``ATTRIBUTE_pairing``, a
    number shared by the examples of one source whose other controls are the same (None without a
    source), so that two examples pair when that number is the same and the levels differ.
    """

    higher_is_better = None  # a CC is read against the gold CC, so only its ..._gap values (lower) are ranked

    def compute(self, predictions, examples):
        measure = _Measures()
        values = {
            "length": [measure.length(prediction) for prediction in predictions],
            "extractiveness": [measure.extractiveness(prediction, example.document)
                               for prediction, example in zip(predictions, examples)],
        }
        by_source = defaultdict(list)
        for i, example in enumerate(examples):
            if example.meta.get("source_index") is not None:
                by_source[example.meta["source_index"]].append(i)
        pairs = {attribute: [] for attribute in LEVELS}
        for members in by_source.values():
            for i, j in combinations(members, 2):
                attribute = _sole_difference(examples[i].controls, examples[j].controls)
                vi, vj = _level(examples[i], attribute), _level(examples[j], attribute)
                if vi is not None and vj is not None and vi != vj:
                    pairs[attribute].append((i, j, vi - vj))
        corpus, parts = {}, {}
        for attribute, found in pairs.items():
            slopes = [(values[attribute][i] - values[attribute][j]) / step for i, j, step in found]
            corpus[attribute] = fmean(slopes) if slopes else None
            corpus[f"n_{attribute}_pairs"] = len(found)
            golds = self._gold_values(measure, attribute, examples, found)
            gold = None if not found or None in golds.values() else fmean(
                (golds[i] - golds[j]) / step for i, j, step in found)
            corpus[f"gold_{attribute}"] = gold
            corpus[f"{attribute}_gap"] = None if gold is None or not slopes else abs(corpus[attribute] - gold)
            parts[attribute] = values[attribute]
            parts[f"gold_{attribute}"] = [golds.get(k) for k in range(len(examples))]
            parts[f"{attribute}_level"] = [_level(example, attribute) for example in examples]
            parts[f"{attribute}_pairing"] = _pairings(examples, attribute)
        return MetricResult(per_example={"tokens": values["length"], "extractive_precision": values["extractiveness"]},
                            corpus=corpus, parts=parts)

    @staticmethod
    def _gold_values(measure, attribute, examples, pairs) -> dict[int, float | None]:
        """The measure of the first reference of each example in ``pairs`` (None without one):
        the references' own CC, what a summarizer's CC is read against, is made of them."""
        found = {}
        for k in sorted({k for i, j, _ in pairs for k in (i, j)}):
            if not examples[k].references:
                found[k] = None
                continue
            reference = examples[k].references[0]
            found[k] = (measure.length(reference) if attribute == "length"
                        else measure.extractiveness(reference, examples[k].document))
        return found

    def aggregate(self, parts, weights):
        import numpy as np

        found = {}
        for attribute in LEVELS:
            level, pairing = parts[f"{attribute}_level"], parts[f"{attribute}_pairing"]
            first, second = _pairs(pairing, level)
            step = level[first] - level[second]
            pair_weights = np.minimum(weights[:, first], weights[:, second])
            found[attribute] = weighted_mean((parts[attribute][first] - parts[attribute][second]) / step, pair_weights)
            gold = parts[f"gold_{attribute}"]
            gold_slopes = (gold[first] - gold[second]) / step
            # a pair weighed without a gold measure leaves the gold CC undefined, not smaller
            missing = pair_weights @ np.isnan(gold_slopes).astype(float) > 0
            found[f"gold_{attribute}"] = np.where(missing, np.nan, weighted_mean(gold_slopes, pair_weights))
            found[f"{attribute}_gap"] = np.abs(found[attribute] - found[f"gold_{attribute}"])
        return found


def _pairings(examples, attribute) -> list[float | None]:
    """For each example, the index of the first example of the same source whose other controls
    (present ones, all but ``attribute``) are the same; None without a source."""
    first = {}
    found = []
    for k, example in enumerate(examples):
        source = example.meta.get("source_index")
        if source is None:
            found.append(None)
            continue
        others = sorted((name, repr(value)) for name, value in example.controls.items()
                        if name != attribute and _present(value))
        found.append(float(first.setdefault((repr(source), tuple(others)), k)))
    return found


def _pairs(pairing, level):
    """The index arrays (first, second) of the pairs: two examples with the same pairing number
    and different levels."""
    import numpy as np

    usable = np.flatnonzero(~np.isnan(pairing) & ~np.isnan(level))
    first, second = [], []
    for number in np.unique(pairing[usable]):
        members = usable[pairing[usable] == number]
        for a, i in enumerate(members):
            for j in members[a + 1:]:
                if level[i] != level[j]:
                    first.append(i)
                    second.append(j)
    return np.array(first, dtype=int), np.array(second, dtype=int)


def _level(example, attribute) -> int | None:
    """The ordinal value of the example's requested level of ``attribute``, or None (another
    attribute, or a value that is not one of MACSum's levels)."""
    value = example.controls.get(attribute)
    return LEVELS[attribute].get(value) if attribute in LEVELS and isinstance(value, str) else None


def _sole_difference(first: dict, second: dict) -> str | None:
    """The one control on which two requests differ, or None when they differ on none or several."""
    first = {name: value for name, value in first.items() if _present(value)}
    second = {name: value for name, value in second.items() if _present(value)}
    differing = [name for name in first.keys() | second.keys() if first.get(name) != second.get(name)]
    return differing[0] if len(differing) == 1 else None
