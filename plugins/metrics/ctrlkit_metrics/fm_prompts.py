"""FM's judge prompts (Chen et al.): the wording ctrlkit asks with, what each rating level
means, and how each answer is read. ``fm`` asks them.

The rating levels mean what the paper's do (``RUBRICS``, the same in both rating modes; the
wording is ours): background and conclusion, judged leniently, 3 broadly consistent with the
reference facet, 2 not mentioned, 1 contradicting it or without relevant content; method and
result, 4 holding the facet's information apart from minor details, 3 leaving out important
information, 2 not mentioned, 1 contradicting it.

The wording of every prompt is ours. The authors released their prompts with their code
(github.com/iriscxy/ScholarSum, ``FM metric code``); we do not copy them, and ours differ:
- extraction: theirs asks for segments copied from the input; ours defines each facet and also
  allows close paraphrase;
- rating: theirs show worked examples, one prompt per scale; ours have none unless the user
  gives a file of them (``fm.rate_examples_file_3``, ``fm.rate_examples_file_4``), and the
  joint prompt asks for JSON;
- each of ours is a system message with the instructions and a user message with the texts;
  theirs are single user messages.
A user with the authors' (or any) wording supplies it as files: ``fm.extract_template_file``,
``fm.rate_template_file``, ``fm.vanilla_template_file`` for the user message and the matching
``..._system_file`` for the system message (``judge_templates``). In ``per-facet`` mode
``fm.rate_template_file_3`` and ``fm.rate_template_file_4`` give one template per scale, as the
paper has, and each scale's examples file fills ``$examples``.
"""

from __future__ import annotations

from typing import Mapping

from .judge_templates import JudgePrompt
from .judging import UnparseableAnswer, integer, json_object, single_rating

FACETS = ("background", "method", "result", "conclusion")
SCALES = {"background": 3, "method": 4, "result": 4, "conclusion": 3}
OURS = JudgePrompt()

EXTRACT_SYSTEM = """You split the abstract of a scientific paper into four facets:
- background: the problem, its context and the motivation of the work;
- method: what the authors did or proposed: approach, model, data, experimental setup;
- result: what they found: findings, measurements, comparisons, numbers;
- conclusion: what the findings mean: implications, claims, future work.
Copy or closely paraphrase the abstract's own words; put each sentence under the facet it mainly
serves. If the abstract says nothing for a facet, give an empty string for it; do not invent.
Answer with one JSON object and nothing else:
{"background": "...", "method": "...", "result": "...", "conclusion": "..."}"""

RUBRICS = {
    3: """3 = broadly in line with the reference facet (judge leniently: agreement in substance is enough);
2 = the generated abstract does not mention what the reference facet says;
1 = goes against the reference facet, or has nothing relevant to it.""",
    4: """4 = carries the reference facet's information, leaving out at most minor details;
3 = leaves out important information of the reference facet;
2 = the generated abstract does not mention what the reference facet says;
1 = goes against the reference facet.""",
}
"""What each rating means, by the top of the scale (the paper's levels, our words): one wording
for both rating modes."""

RATE_SYSTEM = f"""You compare a generated abstract with the reference abstract of the same paper,
facet by facet. Judge whether the generated facet conveys the same content as the reference
facet (meaning, not wording) and whether it adds claims the reference contradicts.

background and conclusion, from 1 to 3:
{RUBRICS[3]}

method and result, from 1 to 4:
{RUBRICS[4]}

Rate only the facets listed. Answer with one JSON object of integers and nothing else, e.g.
{{"background": 3, "method": 2}}"""

FACET_RATE_SYSTEM = """You compare one facet of a generated abstract, its {facet}, with the {facet} of the
reference abstract of the same paper. Judge whether the generated facet conveys the same content
as the reference facet (meaning, not wording) and whether it adds claims the reference contradicts.

Rate from 1 to {scale}:
{rubric}

Answer with the number alone."""

VANILLA_SCALE = 4
VANILLA_SYSTEM = """You compare a generated abstract with the reference abstract of the same paper, as a
whole. Judge how much of the reference's content (its problem, approach, findings and what they
mean) the generated abstract conveys (meaning, not wording) and whether it adds claims the
reference contradicts.

Rate from 1 to 4:
4 = conveys all key content of the reference, no errors;
3 = conveys most key content; minor omissions or imprecision;
2 = conveys some of it; important content missing or partly wrong;
1 = conveys little or none of it, or contradicts the reference.

Answer with one JSON object and nothing else: {"rating": N}, N an integer from 1 to 4."""


def extraction_prompt(text: str, prompt: JudgePrompt = OURS):
    """Step 1 for one text; a user's files get ``$text``, the abstract or summary to split."""
    return prompt.messages(EXTRACT_SYSTEM, f"Abstract:\n{text}", text=text)


def rating_prompt(reference: Mapping[str, str], summary: Mapping[str, str], prompt: JudgePrompt = OURS):
    """Step 2 in one call (``rating=joint``): only the facets the reference has are shown and
    asked for; a user's files get them as ``$facets`` (the same blocks) and ``$facet_names``
    (``background, method``)."""
    present = [facet for facet in FACETS if reference[facet]]
    blocks = "\n\n".join(f"[{facet}]\nReference: {reference[facet]}\nGenerated: {summary[facet] or '(absent)'}"
                         for facet in present)
    return prompt.messages(RATE_SYSTEM, "Facets to rate:\n\n" + blocks, facets=blocks, facet_names=", ".join(present))


def facet_rating_prompt(facet: str, reference: str, summary: str, prompt: JudgePrompt = OURS):
    """Step 2 for one facet (``rating=per-facet``), ``prompt`` its scale's; a user's files get
    ``$facet``, ``$scale`` (3 or 4), ``$reference_facet``, ``$summary_facet`` and, with an
    examples file, ``$examples``."""
    scale = SCALES[facet]
    system = FACET_RATE_SYSTEM.format(facet=facet, scale=scale, rubric=RUBRICS[scale])
    return prompt.messages(system, f"Reference {facet}:\n{reference}\n\nGenerated {facet}:\n{summary}",
                           facet=facet, scale=str(scale), reference_facet=reference, summary_facet=summary)


def vanilla_prompt(reference: str, summary: str, prompt: JudgePrompt = OURS):
    """The whole summary against the whole reference (``mode=vanilla``); a user's files get
    ``$reference`` and ``$summary``."""
    return prompt.messages(VANILLA_SYSTEM, f"Reference abstract:\n{reference}\n\nGenerated abstract:\n{summary}",
                           reference=reference, summary=summary)


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
    """A parser of the joint ratings of the facets ``reference`` has, each an integer within its scale."""

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


def facet_rating_parser(facet: str):
    """A parser of one facet's rating (``judging.single_rating``), an integer within the facet's scale."""
    return lambda answer: single_rating(answer, f"rating of facet '{facet}'", SCALES[facet])


def parse_vanilla(answer: str) -> int:
    return single_rating(answer, "rating", VANILLA_SCALE)
