"""FM, the facet-aware metric (Chen et al.): an LLM judge compares a summary with the reference
facet by facet (background, method, result, conclusion) instead of by word overlap.

Step 1 asks the judge to split the reference and the summary into the four facets (each text
on its own, so a reference's extraction is cached once and reused for every system scored
against it). Step 2 rates the summary's facets against the reference's: background and
conclusion on 1-3, method and result on 1-4. The score, ``fm``, is ``fm_score``: the weighted
mean of rating / scale over the facets the reference has.

Step 2 by ``rating``:
- ``joint`` (the default, fewer calls): one call per example returns every facet's rating as one
  JSON object. The paper rated each facet in a call of its own; here the judge sees all facets
  together, which can change its ratings. A facet the summary lacks is shown as ``(absent)``
  and rated by the judge.
- ``per-facet``: one call per facet after extraction, as the paper and the authors' released
  code do, asking for the number alone; like that code, no call for a facet the summary lacks:
  it is rated 1, the lowest (listed in details as ``summary_lacks``), although the rubric's
  "not mentioned" is 2 (FD's stored GPT-4 ratings give such a facet 1 in 72 of 74 cases).

``mode=vanilla`` is the paper's meta-evaluation baseline: no facets, the judge gives one rating
of the whole generated abstract against the whole reference, from 1 (worst) to 4 (best), as the
paper's baseline asks; we record ``vanilla`` = rating / 4 (FD's stored GPT-4 baseline scores
take only the values 0.5, 0.75 and 1). Our vanilla prompt also says what each level means (our
wording). It is its own value, never ``fm``.

The prompts, their wording and how answers are read are in ``fm_prompts``.
"""

from __future__ import annotations

from typing import Mapping

from ctrlkit import ConfigurationError, Metric, MetricResult, Option

from .fm_prompts import (FACETS, SCALES, VANILLA_SCALE, extraction_prompt, facet_rating_parser, facet_rating_prompt,
                         parse_facets, parse_vanilla, rating_parser, rating_prompt, vanilla_prompt)
from .judge_templates import JudgePrompt, prompt_option
from .judging import RETRIES, Verdict, ask_parsed, report_failures, require_messages

WEIGHTS = {"background": 0.1, "method": 0.3, "result": 0.3, "conclusion": 0.3}


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


class FacetMetric(Metric):
    """FM (Chen et al.): judge-rated agreement of a summary with the first reference, in [0, 1].

    ``mode=facets`` (FM): per example ``fm`` (None when the judge failed); details: both
    extractions and the ratings, or the failed step's raw answer and reason. Corpus: ``fm``, the
    mean over the examples scored, and ``failed``, how many were not. ``mode=vanilla`` (the
    paper's baseline): the same under the name ``vanilla`` (rating / 4), details the rating.
    """

    scores_each_example_alone = True

    name = "fm"
    needs_judge = True
    needs_references = True
    options = (
        RETRIES,
        Option("mode", str, "facets", "facets: FM, facet by facet, value fm; vanilla: the paper's baseline, the "
               "whole summary against the whole reference from 1 (worst) to 4 (best), value vanilla "
               "(docs/judge-templates.md)",
               choices=("facets", "vanilla")),
        Option("rating", str, "joint", "how step 2 asks (mode=facets): joint: one call rates every facet the "
               "reference has (fewer calls); per-facet: one call per facet asking for the number alone, as the "
               "paper did",
               choices=("joint", "per-facet")),
        Option("extract_template_file", str, "", "a UTF-8 template for the facet extraction prompt (the user message; "
               "alone, the whole prompt); placeholder $text (docs/judge-templates.md)"),
        Option("extract_system_file", str, "", "a UTF-8 file replacing the facet extraction system message; "
               "placeholder $text"),
        Option("rate_template_file", str, "", "a UTF-8 template for the facet rating prompt (the user message; alone, "
               "the whole prompt); placeholders $facets, $facet_names (rating=joint) or $facet, $scale, "
               "$reference_facet, $summary_facet, $examples (rating=per-facet, every facet)"),
        Option("rate_system_file", str, "", "a UTF-8 file replacing the facet rating system message; "
               "placeholders as rate_template_file's"),
        Option("rate_template_file_3", str, "", "rating=per-facet: a UTF-8 template rating background and "
               "conclusion (1-3), with rate_template_file_4 in place of rate_template_file; placeholders $facet, "
               "$scale, $reference_facet, $summary_facet, $examples"),
        Option("rate_template_file_4", str, "", "rating=per-facet: a UTF-8 template rating method and result "
               "(1-4), with rate_template_file_3; placeholders as rate_template_file_3's"),
        Option("rate_examples_file_3", str, "", "rating=per-facet: a UTF-8 file of worked examples for rating "
               "background and conclusion (1-3): at $examples in your files, else after our instructions"),
        Option("rate_examples_file_4", str, "", "rating=per-facet: a UTF-8 file of worked examples for rating "
               "method and result (1-4), as rate_examples_file_3"),
        Option("vanilla_template_file", str, "", "a UTF-8 template for the vanilla rating prompt (the user "
               "message; alone, the whole prompt); placeholders $reference, $summary"),
        Option("vanilla_system_file", str, "", "a UTF-8 file replacing the vanilla rating system message; "
               "placeholders $reference, $summary"),
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.judge = None
        facets = self.options["mode"] == "facets"
        unused = [name for name in (FACET_FILES if not facets else VANILLA_FILES) if self.options[name]]
        if unused:
            raise ConfigurationError(f"metric 'fm': fm.{unused[0]} is not used with fm.mode={self.options['mode']}")
        if not facets and self.options["rating"] != "joint":
            raise ConfigurationError("metric 'fm': fm.rating chooses how facets are rated; "
                                     "fm.mode=vanilla rates no facets")
        self.extract_wording = prompt_option(self, "extract_system_file", "extract_template_file", ("text",), ("text",))
        if self.options["rating"] == "joint":
            per_scale = [name for name in PER_SCALE_FILES if self.options[name]]
            if per_scale:
                raise ConfigurationError(f"metric 'fm': fm.{per_scale[0]} is used only with fm.rating=per-facet")
            self.rate_wording = prompt_option(self, "rate_system_file", "rate_template_file",
                                             ("facets", "facet_names"), ("facets",))
        else:
            self.scale_wording = self._scale_wording()
        self.vanilla_wording = prompt_option(self, "vanilla_system_file", "vanilla_template_file",
                                            ("reference", "summary"), ("reference", "summary"))

    def _scale_wording(self) -> dict[int, JudgePrompt]:
        """Per-facet rating's prompt for each scale: the scale's own template, else the one
        template for every facet, else ours; the system file and the scale's examples file."""
        own = [self.options[f"rate_template_file_{scale}"] for scale in (3, 4)]
        if any(own) and not all(own):
            raise ConfigurationError("metric 'fm': fm.rate_template_file_3 and fm.rate_template_file_4 go together "
                                     "(one prompt per scale); set both, or fm.rate_template_file for every facet")
        if all(own) and self.options["rate_template_file"]:
            raise ConfigurationError("metric 'fm': fm.rate_template_file serves every facet; set it or "
                                     "fm.rate_template_file_3 and fm.rate_template_file_4, not both")
        return {scale: prompt_option(self, "rate_system_file",
                                     f"rate_template_file_{scale}" if all(own) else "rate_template_file",
                                     ("facet", "scale", "reference_facet", "summary_facet"),
                                     ("reference_facet", "summary_facet"), examples=f"rate_examples_file_{scale}")
                for scale in (3, 4)}

    def use_judge(self, judge):
        self.judge = require_messages(self.name, judge)

    def compute(self, predictions, examples):
        if self.judge is None:
            raise ConfigurationError("metric 'fm' has no judge: call use_judge() first")
        references = [example.references[0] for example in examples]
        if self.options["mode"] == "vanilla":
            return self._vanilla(references, list(predictions))
        return self._facets(references, list(predictions))

    def _facets(self, references: list[str], predictions: list[str]) -> MetricResult:
        retries = self.options["retries"]
        texts = list(dict.fromkeys([*references, *predictions]))
        prompts = [extraction_prompt(text, self.extract_wording) for text in texts]
        extracted = dict(zip(texts, ask_parsed(self.judge, prompts, [parse_facets] * len(texts), retries)))
        details = [_extracted(extracted[reference], extracted[prediction])
                   for reference, prediction in zip(references, predictions)]
        to_rate = [detail for detail in details if "failed" not in detail]
        rate = self._rate_jointly if self.options["rating"] == "joint" else self._rate_per_facet
        rate(to_rate)
        values = [None if "failed" in detail else
                  fm_score(detail["ratings"], {facet: bool(text) for facet, text in detail["reference_facets"].items()})
                  for detail in details]
        return _result(self.name, "fm", values, details)

    def _rate_jointly(self, details: list[dict]) -> None:
        """One call per example rates all its facets; sets each detail's ``ratings`` or ``failed``."""
        prompts = [rating_prompt(detail["reference_facets"], detail["summary_facets"], self.rate_wording)
                   for detail in details]
        parsers = [rating_parser(detail["reference_facets"]) for detail in details]
        for detail, verdict in zip(details, ask_parsed(self.judge, prompts, parsers, self.options["retries"])):
            if verdict.failed:
                detail["failed"] = {"step": "rating", **verdict.failure()}
            else:
                detail["ratings"] = verdict.value

    def _rate_per_facet(self, details: list[dict]) -> None:
        """One call per facet the reference and the summary both have; a facet only the reference
        has is rated 1 without a call (as the authors' code does), listed in ``summary_lacks``.
        Sets each detail's ``ratings``, or ``failed`` naming the first facet whose rating failed."""
        asked = [(i, facet) for i, detail in enumerate(details) for facet in FACETS
                 if detail["reference_facets"][facet] and detail["summary_facets"][facet]]
        prompts = [facet_rating_prompt(facet, details[i]["reference_facets"][facet],
                                       details[i]["summary_facets"][facet], self.scale_wording[SCALES[facet]])
                   for i, facet in asked]
        parsers = [facet_rating_parser(facet) for _, facet in asked]
        verdicts = dict(zip(asked, ask_parsed(self.judge, prompts, parsers, self.options["retries"])))
        for i, detail in enumerate(details):
            present = [facet for facet in FACETS if detail["reference_facets"][facet]]
            detail["summary_lacks"] = [facet for facet in present if (i, facet) not in verdicts]
            failed = [facet for facet in present if (i, facet) in verdicts and verdicts[i, facet].failed]
            if failed:
                detail["failed"] = {"step": "rating", "facet": failed[0], **verdicts[i, failed[0]].failure()}
            else:
                detail["ratings"] = {facet: verdicts[i, facet].value if (i, facet) in verdicts else 1
                                     for facet in present}

    def _vanilla(self, references: list[str], predictions: list[str]) -> MetricResult:
        prompts = [vanilla_prompt(reference, prediction, self.vanilla_wording)
                   for reference, prediction in zip(references, predictions)]
        verdicts = ask_parsed(self.judge, prompts, [parse_vanilla] * len(prompts), self.options["retries"])
        details = [{"failed": {"step": "rating", **verdict.failure()}} if verdict.failed else {"rating": verdict.value}
                   for verdict in verdicts]
        values = [None if verdict.failed else verdict.value / VANILLA_SCALE for verdict in verdicts]
        return _result(self.name, "vanilla", values, details)


PER_SCALE_FILES = ("rate_template_file_3", "rate_template_file_4", "rate_examples_file_3", "rate_examples_file_4")
FACET_FILES = ("extract_template_file", "extract_system_file", "rate_template_file", "rate_system_file",
               *PER_SCALE_FILES)
VANILLA_FILES = ("vanilla_template_file", "vanilla_system_file")


def _result(metric: str, value: str, values: list[float | None], details: list[dict]) -> MetricResult:
    """``value`` per example and its mean over the examples scored, with ``failed`` counted and
    reported."""
    scored = [v for v in values if v is not None]
    report_failures(metric, [detail["failed"] for detail in details if "failed" in detail], len(values))
    return MetricResult(
        per_example={value: values},
        corpus={value: sum(scored) / len(scored) if scored else None, "failed": len(values) - len(scored)},
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
