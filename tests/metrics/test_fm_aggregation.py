"""FM's aggregation (fm_score) against the FD benchmark's stored totals (../shared/data/fd/arxiv.json).

What the data says, checked over the 50 papers x 4 systems (gpt35, llama2_70b, bartlarge,
factsum; bartbase has no scores):
- ``<sys>_human_list`` is [background, method, result, conclusion], already divided by the
  scale (background and conclusion in thirds, method and result in quarters);
- 0.0, which no rating on a 1-based scale gives, marks a facet left out of the pair's total
  (the reference lacks it), and the weights of the others are renormalised; it is marked per
  pair, not per paper: on papers 3 and 44 three systems have 0.0 for method, llama2_70b a rating;
- with that rule all 200 ``<sys>_human`` totals are reproduced to 1e-6, and so are all 200
  ``<sys>_gpt4_fm`` and ``<sys>_gpt35_fm`` totals when their facets are dropped where the
  human list has 0.0;
- the emptiness of facets in ``human_aspect`` (the reference's facet extraction) is not the
  rule: counting exactly its non-empty facets reproduces 158 of the 200 human totals (paper 32
  has a human 0.0 on a conclusion its extraction found; the other 38 misses are rated by the
  humans on a facet the extraction left empty).
"""

import json

import pytest

from ctrlkit_metrics.fm import FACETS, SCALES, fm_score

from helpers import shared_file

SYSTEMS = ("gpt35", "llama2_70b", "bartlarge", "factsum", "bartbase")


@pytest.fixture(scope="module")
def rows():
    path = shared_file("fd/arxiv.json")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def scored_pairs(rows, kind):
    """(row, system, normalised facet list, stored total) for each pair that has ``kind`` scores."""
    return [(row, system, row[f"{system}_{kind}_list"], row[f"{system}_{kind}"])
            for row in rows for system in SYSTEMS if f"{system}_{kind}_list" in row]


def ratings_of(normalised):
    """Normalised scores back to integer ratings; 0.0 (no rating) becomes None."""
    return {facet: round(value * SCALES[facet]) or None for facet, value in zip(FACETS, normalised)}


def matches(pairs, reference_has):
    """How many stored totals fm_score reproduces to 1e-6 when ``reference_has(row, system)``
    says which facets count (a counted facet without a rating is a miss)."""
    count = 0
    for row, system, normalised, total in pairs:
        try:
            count += abs(fm_score(ratings_of(normalised), reference_has(row, system)) - total) < 1e-6
        except ValueError:
            pass
    return count


def rated_in_human_list(row, system):
    return {facet: value != 0 for facet, value in zip(FACETS, row[f"{system}_human_list"])}


def test_human_lists_are_ratings_divided_by_the_scale_with_zero_for_absent(rows):
    pairs = scored_pairs(rows, "human")
    assert len(pairs) == 200  # bartbase has no human scores
    for _, _, normalised, _ in pairs:
        for facet, value in zip(FACETS, normalised):
            assert value == 0 or (1 <= round(value * SCALES[facet]) <= SCALES[facet]
                                  and abs(value * SCALES[facet] - round(value * SCALES[facet])) < 1e-9)


def test_the_human_totals_follow_fm_score_with_zero_marking_a_dropped_facet(rows):
    assert matches(scored_pairs(rows, "human"), rated_in_human_list) == 200


@pytest.mark.parametrize("kind", ["gpt4_fm", "gpt35_fm"])
def test_the_judge_totals_drop_the_facets_the_human_list_marks_absent(rows, kind):
    assert matches(scored_pairs(rows, kind), rated_in_human_list) == 200


def test_the_reference_extraction_alone_does_not_explain_the_totals(rows):
    def extracted(row, system):
        aspect = json.loads(row["human_aspect"])
        return {facet: bool(aspect[facet].strip()) for facet in FACETS}

    assert matches(scored_pairs(rows, "human"), extracted) == 158


def test_the_stored_gpt4_baseline_is_a_rating_out_of_four(rows):
    """What fm's docs say of the vanilla scale: FD's stored GPT-4 baseline (``<sys>_gpt4``, the
    authors' "GPT-4" beside "FM (GPT-4)") takes only values a 1-4 rating divided by 4 gives."""
    stored = [row[f"{system}_gpt4"] for row in rows for system in SYSTEMS if f"{system}_gpt4" in row]
    assert len(stored) == 200
    assert {round(value * 4, 9) for value in stored} == {2.0, 3.0, 4.0}


def test_fm_score_by_hand():
    assert fm_score({"background": 3, "method": 4, "result": 4, "conclusion": 3}, dict.fromkeys(FACETS, True)) == 1.0
    # 0.1*2/3 + 0.3*3/4 + 0.3*1/4 + 0.3*1/3 = 0.4666...
    assert fm_score({"background": 2, "method": 3, "result": 1, "conclusion": 1},
                    dict.fromkeys(FACETS, True)) == pytest.approx(0.1 * 2 / 3 + 0.3 * 0.75 + 0.3 * 0.25 + 0.1)
    # no conclusion in the reference: its rating is ignored and the others' weights sum to 0.7
    assert fm_score({"background": 3, "method": 2, "result": 4, "conclusion": None},
                    {"background": True, "method": True, "result": True, "conclusion": False}) == pytest.approx(
        (0.1 + 0.3 * 0.5 + 0.3) / 0.7)
    assert fm_score({}, dict.fromkeys(FACETS, False)) is None


@pytest.mark.parametrize("rating", [0, 4, None, 2.5, True])
def test_fm_score_refuses_a_rating_outside_the_scale(rating):
    with pytest.raises(ValueError, match="background"):
        fm_score({"background": rating, "method": 1, "result": 1, "conclusion": 1}, dict.fromkeys(FACETS, True))
