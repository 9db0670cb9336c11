"""ROUGE F1 of (prediction, references) pairs: rouge-score's ``RougeScorer.score_multi`` numbers, faster.

The numbers are rouge-score's to the bit (tests/metrics/test_rouge_fast.py compares them); three things
differ from calling it plainly:

- tokens are rouge-score's (its own lowercasing, regular expressions and "stem words longer than
  3 characters" rule), but each word's Porter stem is computed once per process and remembered:
  stemming is most of rouge-score's time;
- each text of a pair is tokenized once, not once per reference and again per line;
- the longest common subsequence (rougeL, rougeLsum) is found with the bit-parallel algorithm of
  Allison and Dix (1986) in Hyyrö's form, a row of the dynamic-programming table per step as one
  integer, instead of a Python loop over every cell. The table's values are the same integers, so
  rougeLsum's backtrack (which of several longest subsequences it takes) is rouge-score's.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterator
from functools import lru_cache

from nltk.stem import porter
from rouge_score import scoring
from rouge_score import tokenize as rouge_tokenize

from ctrlkit.plugin_api import sentences

stem = lru_cache(maxsize=1 << 18)(porter.PorterStemmer().stem)


def tokens(text: str, use_stemmer: bool) -> list[str]:
    """``rouge_score.tokenize.tokenize(text, PorterStemmer() if use_stemmer else None)``."""
    words = rouge_tokenize.SPACES_RE.split(rouge_tokenize.NON_ALPHANUM_RE.sub(" ", text.lower()))
    if use_stemmer:
        words = [stem(word) if len(word) > 3 else word for word in words]
    return [word for word in words if rouge_tokenize.VALID_TOKEN_RE.match(word)]


def one_sentence_per_line(texts) -> list[str]:
    """Each text with its sentences (ctrlkit.text.sentences) one per line, as rougeLsum reads them."""
    return ["\n".join(sentences(text)) for text in texts]


def score_pairs(types, use_stemmer, predictions, references) -> dict[str, list]:
    """Per ROUGE type, each pair's F1: the maximum over its references, as ``score_multi`` picks it."""
    orders = sorted({int(name[5:]) for name in types if name[5:].isdigit()})
    by_line = "rougeLsum" in types
    out = {name: [] for name in types}
    for prediction, targets in zip(predictions, references):
        candidate = _Text(prediction, use_stemmer, orders, by_line)
        best = None
        for target in targets:
            scores = _score(types, _Text(target, use_stemmer, orders, by_line), candidate)
            # score_multi keeps the first reference with the highest F1 (numpy.argmax); max() does too
            best = scores if best is None else {name: max(best[name], scores[name]) for name in types}
        if best is None:
            raise ValueError("a prediction has no references")
        for name in types:
            out[name].append(best[name])
    return out


class _Text:
    """One text's tokens, n-gram counts, token positions and per-line tokens, computed once."""

    def __init__(self, text: str, use_stemmer: bool, orders, by_line: bool):
        self.tokens = tokens(text, use_stemmer)
        self.ngrams = {n: Counter(zip(*(self.tokens[i:] for i in range(n)))) for n in orders}
        self.positions = _positions(self.tokens)
        if by_line:  # rougeLsum: rouge-score reads one sentence per line
            self.lines = [tokens(line, use_stemmer) for line in text.split("\n") if line]
            self.line_positions = [_positions(line) for line in self.lines]


def _score(types, target: _Text, prediction: _Text) -> dict:
    """``RougeScorer.score(target, prediction)``, F1 only, with rouge-score's formulas and zeros."""
    out = {}
    for name in types:
        if name == "rougeL":
            if not target.tokens or not prediction.tokens:
                out[name] = 0  # rouge-score's Score(0, 0, 0): an int
                continue
            lcs = _lcs_length(target.tokens, prediction.positions, len(prediction.tokens))
            out[name] = scoring.fmeasure(lcs / len(prediction.tokens), lcs / len(target.tokens))
        elif name == "rougeLsum":
            out[name] = _summary_level_lcs(target.lines, prediction.lines, prediction.line_positions)
        else:
            n = int(name[5:])
            target_grams, prediction_grams = target.ngrams[n], prediction.ngrams[n]
            overlap = sum(min(count, prediction_grams[gram]) for gram, count in target_grams.items())
            precision = overlap / max(sum(prediction_grams.values()), 1)
            recall = overlap / max(sum(target_grams.values()), 1)
            out[name] = scoring.fmeasure(precision, recall)
    return out


def _summary_level_lcs(reference, candidate, candidate_positions):
    """rouge_scorer._summary_level_lcs: union LCS of each reference line with the candidate's lines."""
    if not reference or not candidate:
        return 0
    m = sum(map(len, reference))
    n = sum(map(len, candidate))
    if not n or not m:
        return 0
    reference_counts = Counter(token for line in reference for token in line)
    candidate_counts = Counter(token for line in candidate for token in line)
    hits = 0
    for line in reference:
        union = set()
        for other, positions in zip(candidate, candidate_positions):
            union.update(lcs_indices(line, other, positions))
        for token in (line[i] for i in sorted(union)):
            if candidate_counts[token] > 0 and reference_counts[token] > 0:  # no double counting
                hits += 1
                candidate_counts[token] -= 1
                reference_counts[token] -= 1
    return scoring.fmeasure(hits / n, hits / m)


def _positions(sequence) -> dict:
    """Token -> bit mask of the positions where it occurs."""
    masks = {}
    for j, token in enumerate(sequence):
        masks[token] = masks.get(token, 0) | (1 << j)
    return masks


def _lcs_rows(ref, positions, width: int) -> Iterator[int]:
    """Rows 0..len(ref) of the LCS table of ``ref`` against a sequence of ``width`` tokens.

    Row i is an integer whose low ``width`` bits say where the table does not step up:
    table[i][j] = j - popcount(row_i & (2**j - 1))."""
    full = (1 << width) - 1
    row = full
    yield row
    for token in ref:
        matches = row & positions.get(token, 0)
        row = ((row + matches) | (row - matches)) & full
        yield row


def _lcs_length(ref, positions, width: int) -> int:
    last = deque(_lcs_rows(ref, positions, width), maxlen=1)[0]  # only the last row, not the table
    return width - last.bit_count()


def lcs_indices(ref, can, positions=None) -> list[int]:
    """rouge_scorer.lcs_ind: positions in ``ref`` of the longest common subsequence that
    rouge-score's backtrack reads out of the table, with the same tie-breaking."""
    rows = list(_lcs_rows(ref, _positions(can) if positions is None else positions, len(can)))
    i, j = len(ref), len(can)
    found = []
    while i > 0 and j > 0:
        if ref[i - 1] == can[j - 1]:
            found.append(i - 1)
            i -= 1
            j -= 1
        # table[i][j - 1] > table[i - 1][j]
        elif (j - 1) - (rows[i] & ((1 << (j - 1)) - 1)).bit_count() > j - (rows[i - 1] & ((1 << j) - 1)).bit_count():
            j -= 1
        else:
            i -= 1
    found.reverse()
    return found
