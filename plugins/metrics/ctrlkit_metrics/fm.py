"""FM, the facet-aware metric (Chen et al.): an LLM judge compares a summary with the reference
facet by facet (background, method, result, conclusion) instead of by word overlap.

Step 1 asks the judge to split the reference and the summary into the four facets (each text
on its own, so a reference's extraction is cached once and reused for every system scored
against it). Step 2 rates the summary's facets against the reference's: background and
conclusion on 1-3, method and result on 1-4. The score is ``fm_score``.

Where this departs from the paper: step 2 is one call that returns every facet's rating as one
JSON object, where the paper rated each facet in a call of its own; the judge then sees all
facets together, which can change its ratings. One call per facet is not offered yet.

The prompts below are ours: we do not have the paper's exact wording, so they are written to
follow its published procedure (facet extraction, then per-facet comparison on those scales),
not to quote it. A user with the paper's wording supplies it as template files
(``fm.extract_template_file``, ``fm.rate_template_file``: ``judge_templates``).
"""

from __future__ import annotations

from typing import Mapping

from ctrlkit import ConfigurationError, Metric, MetricResult, Option

from .judging import (RETRIES, UnparseableAnswer, Verdict, ask_parsed, integer, json_object, messages, report_failures,
                      require_messages)
from .judge_templates import JudgeTemplate, template_option

FACETS = ("background", "method", "result", "conclusion")
SCALES = {"background": 3, "method": 4, "result": 4, "conclusion": 3}
WEIGHTS = {"background": 0.1, "method": 0.3, "result": 0.3, "conclusion": 0.3}

EXTRACT_SYSTEM = """You split the abstract of a scientific paper into four facets:
- background: the problem, its context and the motivation of the work;
- method: what the authors did or proposed: approach, model, data, experimental setup;
- result: what they found: findings, measurements, comparisons, numbers;
- conclusion: what the findings mean: implications, claims, future work.
Copy or closely paraphrase the abstract's own words; put each sentence under the facet it mainly
serves. If the abstract says nothing for a facet, give an empty string for it; do not invent.
Answer with one JSON object and nothing else:
{"background": "...", "method": "...", "result": "...", "conclusion": "..."}"""

RATE_SYSTEM = """You compare a generated abstract with the reference abstract of the same paper,
facet by facet. Judge whether the generated facet conveys the same content as the reference
facet (meaning, not wording) and whether it adds claims the reference contradicts.

background and conclusion, from 1 to 3:
3 = conveys the reference facet's content, no contradiction;
2 = partly conveys it: some content missing, vague or slightly wrong;
1 = missing, unrelated, or contradicts the reference.

method and result, from 1 to 4:
4 = conveys all key content of the reference facet, no errors;
3 = conveys most key content; minor omissions or imprecision;
2 = conveys some of it; important content missing or partly wrong;
1 = missing, unrelated, or contradicts the reference.

Rate only the facets listed. Answer with one JSON object of integers and nothing else, e.g.
{"background": 3, "method": 2}"""


def fm_score(ratings: Mapping[str, int | None], reference_has: Mapping[str, bool]) -> float | None:
    """Weighted mean of rating/scale over the facets the reference has, weights (0.1, 0.3, 0.3,
    0.3) renormalised over those facets; None when the reference has none of them.

    A facet the reference has must carry an integer rating within its scale (ValueError
    otherwise); the rating of a facet the reference lacks is ignored.
    """
    present = [facet for facet in FACETS if reference_has.get(facet)]
    if not present:
        return None
    for facet in present:
        rating = ratings.get(facet)
        if isinstance(rating, bool) or not isinstance(rating, int) or not 1 <= rating <= SCALES[facet]:
            raise ValueError(f"rating of facet '{facet}' must be an integer from 1 to {SCALES[facet]}, got {rating!r}")
    total = sum(WEIGHTS[facet] for facet in present)
    return sum(WEIGHTS[facet] * ratings[facet] / SCALES[facet] for facet in present) / total


def extraction_prompt(text: str, template: JudgeTemplate | None = None):
    """Ours, or ``template`` with ``$text`` (the abstract or summary to split) filled."""
    if template is not None:
        return template.render(text=text)
    return messages(EXTRACT_SYSTEM, f"Abstract:\n{text}")


def rating_prompt(reference: Mapping[str, str], summary: Mapping[str, str], template: JudgeTemplate | None = None):
    """Only the facets the reference has are shown and asked for; a ``template`` gets them as
    ``$facets`` (the same blocks) and ``$facet_names`` (``background, method``)."""
    present = [facet for facet in FACETS if reference[facet]]
    blocks = [f"[{facet}]\nReference: {reference[facet]}\nGenerated: {summary[facet] or '(absent)'}"
              for facet in present]
    if template is not None:
        return template.render(facets="\n\n".join(blocks), facet_names=", ".join(present))
    return messages(RATE_SYSTEM, "Facets to rate:\n\n" + "\n\n".join(blocks))


def parse_facets(answer: str) -> dict[str, str]:
    """The four facets as stripped strings; a missing facet or a non-string makes it unparseable."""
    found = json_object(answer)
    facets = {}
    for facet in FACETS:
        if facet not in found:
            raise UnparseableAnswer(f"facet '{facet}' is missing")
        value = "" if found[facet] is None else found[facet]
        if not isinstance(value, str):
            raise UnparseableAnswer(f"facet '{facet}' must be a string, got {type(value).__name__}")
        facets[facet] = value.strip()
    return facets


def rating_parser(reference: Mapping[str, str]):
    """A parser of the ratings of the facets ``reference`` has, each an integer within its scale."""

    def parse(answer: str) -> dict[str, int]:
        found = json_object(answer)
        ratings = {}
        for facet in FACETS:
            if reference[facet]:
                if facet not in found:
                    raise UnparseableAnswer(f"rating of facet '{facet}' is missing")
                ratings[facet] = integer(found[facet], f"rating of facet '{facet}'", 1, SCALES[facet])
        return ratings

    return parse


class FacetMetric(Metric):
    """FM (Chen et al.): judge-rated facet agreement with the first reference, in [0, 1].

    Per example: ``fm`` (None when the judge failed); details: both extractions and the
    ratings, or the failed step's raw answer and reason. Corpus: ``fm``, the mean over the
    examples scored, and ``failed``, how many were not.
    """

    name = "fm"
    needs_judge = True
    needs_references = True
    options = (
        RETRIES,
        Option("extract_template_file", str, "", "a UTF-8 template replacing the facet extraction prompt; "
               "placeholder $text (docs/judge-templates.md)"),
        Option("rate_template_file", str, "", "a UTF-8 template replacing the facet rating prompt; "
               "placeholders $facets, $facet_names (docs/judge-templates.md)"),
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.judge = None
        self.extract_template = template_option(self, "extract_template_file", ("text",), ("text",))
        self.rate_template = template_option(self, "rate_template_file", ("facets", "facet_names"), ("facets",))

    def use_judge(self, judge):
        self.judge = require_messages(self.name, judge)

    def compute(self, predictions, examples):
        if self.judge is None:
            raise ConfigurationError("metric 'fm' has no judge: call use_judge() first")
        retries = self.options["retries"]
        references = [example.references[0] for example in examples]
        texts = list(dict.fromkeys([*references, *predictions]))
        prompts = [extraction_prompt(text, self.extract_template) for text in texts]
        extracted = dict(zip(texts, ask_parsed(self.judge, prompts, [parse_facets] * len(texts), retries)))
        details = [_extracted(extracted[reference], extracted[prediction])
                   for reference, prediction in zip(references, predictions)]
        to_rate = [i for i, detail in enumerate(details) if "failed" not in detail]

        prompts = [rating_prompt(details[i]["reference_facets"], details[i]["summary_facets"], self.rate_template)
                   for i in to_rate]
        parsers = [rating_parser(details[i]["reference_facets"]) for i in to_rate]
        verdicts = ask_parsed(self.judge, prompts, parsers, retries)
        values: list[float | None] = [None] * len(examples)
        for i, verdict in zip(to_rate, verdicts):
            if verdict.failed:
                details[i]["failed"] = {"step": "rating", **verdict.failure()}
                continue
            details[i]["ratings"] = verdict.value
            has = {facet: bool(text) for facet, text in details[i]["reference_facets"].items()}
            values[i] = fm_score(verdict.value, has)
        scored = [value for value in values if value is not None]
        report_failures(self.name, [detail["failed"] for detail in details if "failed" in detail], len(examples))
        return MetricResult(
            per_example={"fm": values},
            corpus={"fm": sum(scored) / len(scored) if scored else None, "failed": len(examples) - len(scored)},
            details=details,
        )


def _extracted(reference: Verdict, summary: Verdict) -> dict:
    """An example's details after step 1: both extractions, and the first failure if any."""
    detail = {"reference_facets": reference.value, "summary_facets": summary.value}
    if reference.failed:
        detail["failed"] = {"step": "reference extraction", **reference.failure()}
    elif summary.failed:
        detail["failed"] = {"step": "summary extraction", **summary.failure()}
    elif not any(reference.value.values()):
        detail["failed"] = {"step": "reference extraction", "reason": "the reference has none of the facets",
                            "answer": reference.answer, "attempts": reference.attempts}
    return detail
