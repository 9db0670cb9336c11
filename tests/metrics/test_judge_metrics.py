"""Judge metrics (fm, focus) end to end against a scripted chat-completions server on 127.0.0.1,
the focus classifier, the judge helpers and the on-disk cache."""

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import threading
from http.server import ThreadingHTTPServer

import click
import pytest
from click.testing import CliRunner
from sklearn.metrics import f1_score

import ctrlkit
from ctrlkit.cli import cli
from helpers.chat_server import JsonHandler
from ctrlkit import ConfigurationError, DatasetError
from ctrlkit.cache import Cache, cache_key
from ctrlkit_metrics import commands
from ctrlkit_metrics.focus import FocusClassifier
from ctrlkit_metrics.judging import UnparseableAnswer, integer, json_object, single_rating

KEY = "sk-test-0123456789secret"


class ScriptedJudge:
    """Answers each request by the rule whose marker occurs in its last message: a rule's answers
    are given in turn, the last one repeating. A request matching no rule, or several, is
    answered 400, so that the test fails with the prompt in the message. Keeps every request."""

    def __init__(self, rules: dict[str, list[str]]):
        self.rules = rules
        self.used = dict.fromkeys(rules, 0)
        self.requests: list[list[dict]] = []
        self.lock = threading.Lock()
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.http.judge = self
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def answer(self, messages) -> tuple[int, str]:
        with self.lock:
            self.requests.append(messages)
            prompt = messages[-1]["content"]
            found = [marker for marker in self.rules if marker in prompt]
            if len(found) != 1:
                return 400, f"markers {found} in prompt: {prompt[:300]}"
            answers = self.rules[found[0]]
            self.used[found[0]] += 1
            return 200, answers[min(self.used[found[0]], len(answers)) - 1]

    def asked(self, marker: str) -> int:
        return sum(marker in messages[-1]["content"] for messages in self.requests)


class _Handler(JsonHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        status, content = self.server.judge.answer(body["messages"])
        reply = {"choices": [{"message": {"role": "assistant", "content": content}}]} if status == 200 \
            else {"error": {"message": content}}
        self.reply(status, reply)


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "*")  # a proxy configured on the machine must not take 127.0.0.1


@pytest.fixture
def serve():
    servers = []

    def start(rules):
        judge = ScriptedJudge(rules)
        threading.Thread(target=judge.http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        servers.append(judge)
        return judge

    yield start
    for judge in servers:
        judge.http.shutdown()
        judge.http.server_close()


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def run_judged(path, judge, metrics, tmp_path, run_name="run", **openai):
    """ctrlkit.run on a JSONL dataset with the extractive summarizer (a one-sentence document is
    its own summary) and the scripted server as the judge."""
    return ctrlkit.run(dataset="jsonl", data=path, backbone="extractive", metrics=metrics, baseline=None,
                       judge="openai:judge-model", out=str(tmp_path / run_name),
                       options={"openai": {"base_url": judge.url, "backoff": 0.01, **openai}})


def facets(background="", method="", result="", conclusion=""):
    return json.dumps({"background": background, "method": method, "result": result, "conclusion": conclusion})


# Four papers. The extraction of a reference (marker refX) or of a summary (sumX) is scripted;
# the reference's facets carry rateX, which marks the rating prompt of that paper.
FM_ROWS = [{"id": x, "document": f"The summary sum{x} of paper {x}.", "references": f"The reference ref{x}."}
           for x in "ABCD"]
FM_RULES = {
    # A: clean; the reference has no conclusion, so the judge's conclusion rating is ignored
    "refA": [facets("bg rateA", "ref method", "ref result")],
    "sumA": [facets("sum bg", "sum method", "", "sum conclusion")],
    "rateA": ['{"background": 2, "method": 3, "result": 1, "conclusion": 3}'],
    # B: prose instead of JSON, then a fenced block amid text; a rating out of range, then a good one
    "refB": ["Sure, here are the facets: background is about X.",
             f"Here you go:\n```json\n{facets('bg rateB', 'm', 'r', 'c')}\n```\nHope this helps."],
    "sumB": [facets("b", "m", "r", "c")],
    "rateB": ['{"background": 3, "method": 5, "result": 4, "conclusion": 2}',
              '{"background": 3, "method": 4, "result": 4, "conclusion": 2}'],
    # C: the rating always lacks a facet the reference has
    "refC": [facets("bg rateC", "m", "r", "c")],
    "sumC": [facets("b", "m", "r", "c")],
    "rateC": ['{"background": 3, "method": 4, "conclusion": 2}'],
    # D: the summary's extraction never parses
    "refD": [facets("bg rateD", "m", "r", "c")],
    "sumD": ["I cannot split this text."],
    "rateD": ['{"background": 3, "method": 4, "result": 4, "conclusion": 3}'],
}
FM_A = (0.1 * 2 / 3 + 0.3 * 3 / 4 + 0.3 * 1 / 4) / 0.7
FM_B = 0.1 * 3 / 3 + 0.3 * 4 / 4 + 0.3 * 4 / 4 + 0.3 * 2 / 3


def test_fm_end_to_end_retries_records_failures_and_caches(serve, tmp_path):
    judge = serve(FM_RULES)
    path = write_jsonl(tmp_path / "papers.jsonl", FM_ROWS)
    result = run_judged(path, judge, ["fm"], tmp_path)

    values = [sample["scores"]["fm"]["fm"] for sample in result.samples]
    assert values[:2] == [pytest.approx(FM_A), pytest.approx(FM_B)] and values[2:] == [None, None]
    assert result.metrics["fm"] == {"fm": pytest.approx((FM_A + FM_B) / 2), "failed": 2}
    # each unparseable answer was asked again, twice at most: 1 + 2 attempts
    assert {marker: judge.asked(marker) for marker in FM_RULES} == {
        "refA": 1, "sumA": 1, "rateA": 1, "refB": 2, "sumB": 1, "rateB": 2,
        "refC": 1, "sumC": 1, "rateC": 3, "refD": 1, "sumD": 3, "rateD": 0}
    assert len(judge.requests) == 17
    assert judge.requests[0][0]["role"] == "system"

    details = [json.loads(line)["details"]["fm"] for line in (tmp_path / "run" / "samples.jsonl").open()]
    assert details[0]["ratings"] == {"background": 2, "method": 3, "result": 1}
    assert details[0]["reference_facets"] == json.loads(facets("bg rateA", "ref method", "ref result"))
    assert details[0]["summary_facets"]["conclusion"] == "sum conclusion" and "failed" not in details[0]
    assert details[1]["ratings"] == {"background": 3, "method": 4, "result": 4, "conclusion": 2}
    assert details[2]["failed"] == {"step": "rating", "reason": "rating of facet 'result' is missing",
                                    "answer": FM_RULES["rateC"][0], "attempts": 3}
    assert details[3]["failed"] == {"step": "summary extraction", "reason": "no JSON object in the answer",
                                    "answer": "I cannot split this text.", "attempts": 3}
    assert "ratings" not in details[3]

    # the same run again (a key and more concurrency do not change the answers, so they do not
    # change the cache key): only the failed items are asked again
    again = run_judged(path, judge, ["fm"], tmp_path, "again", api_key=KEY, concurrency=8)
    assert [sample["scores"]["fm"]["fm"] for sample in again.samples] == values
    assert len(judge.requests) == 17 + 6 and judge.asked("rateC") == 6 and judge.asked("sumD") == 6
    cached = b"".join(path.read_bytes() for path in (tmp_path / "cache").iterdir())
    assert KEY.encode() not in cached

    # another judge model is another judge: nothing is reused
    ctrlkit.run(dataset="jsonl", data=path, metrics=["fm"], baseline=None, judge="openai:other-model",
                options={"openai": {"base_url": judge.url}, "fm": {"retries": 0}})
    assert len(judge.requests) == 23 + 8 + 3  # 8 texts, then ratings of A, B and C (no retries)


def test_an_extraction_is_asked_once_however_many_examples_share_the_text(serve, tmp_path):
    judge = serve({"refA": [facets("bg rateA", "m", "r", "c")], "sumA": [facets("b", "m", "r", "c")],
                   "rateA": ['{"background": 3, "method": 4, "result": 4, "conclusion": 3}']})
    rows = [{**FM_ROWS[0], "id": str(i)} for i in range(3)]
    result = run_judged(write_jsonl(tmp_path / "same.jsonl", rows), judge, ["fm"], tmp_path)
    assert result.metrics["fm"] == {"fm": 1.0, "failed": 0}
    assert len(judge.requests) == 3  # reference, summary, rating: once each


def test_a_reference_without_facets_is_a_failure_not_a_score(serve, tmp_path):
    judge = serve({"refA": [facets()], "sumA": [facets("b", "m", "r", "c")]})
    result = run_judged(write_jsonl(tmp_path / "empty.jsonl", FM_ROWS[:1]), judge, ["fm"], tmp_path)
    assert result.metrics["fm"] == {"fm": None, "failed": 1}
    assert result.samples[0]["details"]["fm"]["failed"] == {
        "step": "reference extraction", "reason": "the reference has none of the facets", "answer": facets(),
        "attempts": 1}
    assert len(judge.requests) == 2  # nothing to rate


def write_path(tmp_path, name, text):
    path = tmp_path / f"{name}.txt"
    path.write_text(text, encoding="utf-8")
    return str(path)


def run_fm(path, judge, tmp_path, run_name="run", metric="fm", **options):
    """run_judged with options for the metric (``metric``), the scripted server as the judge."""
    return ctrlkit.run(dataset="jsonl", data=path, backbone="extractive", metrics=[metric], baseline=None,
                       judge="openai:judge-model", out=str(tmp_path / run_name),
                       options={"openai": {"base_url": judge.url, "backoff": 0.01}, metric: options})


def rating_requests(judge):
    """The per-facet rating requests (our user message starts "Reference FACET:"), as (facet,
    system message, user message)."""
    found = []
    for messages in judge.requests:
        user = messages[-1]["content"]
        if user.startswith("Reference ") and ":\n" in user:
            found.append((user[len("Reference "):user.index(":")], messages[0]["content"], user))
    return found


# Per-facet rating: the reference's facets carry pfXf, which marks the rating call of that facet.
PF_ROWS = FM_ROWS[:3]
PF_RULES = {
    # A: no conclusion in the reference (dropped); no result in the summary (rated 1, not asked)
    "refA": [facets("bg pfAbg", "method pfAme", "result pfAre")],
    "sumA": [facets("sum bg", "sum method", "", "sum conclusion")],
    "pfAbg": ["Rating: 2"], "pfAme": ['{"rating": 3}'],
    # B: all four; method first out of its scale, then in a fenced block
    "refB": [facets("bg pfBbg", "m pfBme", "r pfBre", "c pfBco")],
    "sumB": [facets("b", "m", "r", "c")],
    "pfBbg": ["3"], "pfBme": ['{"rating": 5}', 'Here:\n```json\n{"rating": 4}\n```'], "pfBre": ['{"rating": 2}'],
    "pfBco": ["2."],
    # C: the method's rating never parses
    "refC": [facets("bg pfCbg", "m pfCme")],
    "sumC": [facets("b", "m", "r", "c")],
    "pfCbg": ['{"rating": 3}'], "pfCme": ["It is good."],
}
# by hand from the answers above: rating / scale, weights 0.1 (background) and 0.3, over the
# facets the reference has
PF_A = (0.1 * 2 / 3 + 0.3 * 3 / 4 + 0.3 * 1 / 4) / (0.1 + 0.3 + 0.3)
PF_B = 0.1 * 3 / 3 + 0.3 * 4 / 4 + 0.3 * 2 / 4 + 0.3 * 2 / 3


def test_fm_per_facet_asks_each_facet_once_on_its_scale(serve, tmp_path, caplog):
    judge = serve(PF_RULES)
    path = write_jsonl(tmp_path / "papers.jsonl", PF_ROWS)
    with caplog.at_level("WARNING", logger="ctrlkit"):
        result = run_fm(path, judge, tmp_path, rating="per-facet")
    assert [r.getMessage() for r in caplog.records if "judge failed" in r.getMessage()] == [
        "ctrlkit: metric 'fm': the judge failed on 1 of 3 examples (first: no rating of facet 'method' in the "
        'answer: expected {"rating": N} or the number alone, answer "It is good."); they are left out of the value '
        "and counted in 'fm.failed'"]

    values = [sample["scores"]["fm"]["fm"] for sample in result.samples]
    assert values == [pytest.approx(PF_A), pytest.approx(PF_B), None]
    assert result.metrics["fm"] == {"fm": pytest.approx((PF_A + PF_B) / 2), "failed": 1}
    # one call per facet the reference and the summary both have, plus the retries of B's method
    # and C's method; nothing for A's result (the summary lacks it) or A's conclusion
    assert {marker: judge.asked(marker) for marker in PF_RULES} == {
        "refA": 1, "sumA": 1, "pfAbg": 1, "pfAme": 1, "refB": 1, "sumB": 1, "pfBbg": 1, "pfBme": 2, "pfBre": 1,
        "pfBco": 1, "refC": 1, "sumC": 1, "pfCbg": 1, "pfCme": 3}
    asked = rating_requests(judge)
    assert len(asked) == len(judge.requests) - 6 == 11
    scale = {"background": 3, "method": 4, "result": 4, "conclusion": 3}
    for facet, system, user in asked:
        assert f"from 1 to {scale[facet]}" in system and f"from 1 to {7 - scale[facet]}" not in system
        assert f"its {facet}" in system and user.count("\n\nGenerated ") == 1
        assert all(other not in user for other in scale if other != facet)
    assert sorted(facet for facet, _, user in asked if "pfA" in user) == ["background", "method"]

    details = [sample["details"]["fm"] for sample in result.samples]
    assert details[0]["ratings"] == {"background": 2, "method": 3, "result": 1}
    assert details[0]["summary_lacks"] == ["result"]
    assert details[1]["ratings"] == {"background": 3, "method": 4, "result": 2, "conclusion": 2}
    assert details[1]["summary_lacks"] == []
    assert details[2]["failed"] == {"step": "rating", "facet": "method", "answer": "It is good.", "attempts": 3,
                                    "reason": "no rating of facet 'method' in the answer: expected "
                                              '{"rating": N} or the number alone'}
    assert "ratings" not in details[2]

    # each facet's answer is cached on its own: a rerun asks only the rating that failed
    again = run_fm(path, judge, tmp_path, "again", rating="per-facet")
    assert [sample["scores"]["fm"]["fm"] for sample in again.samples] == values
    assert len(judge.requests) == 17 + 3 and judge.asked("pfCme") == 6


def test_fm_per_facet_asks_a_facet_shared_by_examples_once(serve, tmp_path):
    judge = serve({marker: answers for marker, answers in PF_RULES.items() if "A" in marker})
    rows = [{**PF_ROWS[0], "id": str(i)} for i in range(3)]
    result = run_fm(write_jsonl(tmp_path / "same.jsonl", rows), judge, tmp_path, rating="per-facet")
    assert result.metrics["fm"] == {"fm": pytest.approx(PF_A), "failed": 0}
    assert len(judge.requests) == 4  # the reference, the summary, the background, the method


def test_fm_vanilla_rates_the_whole_summary_on_one_to_four(serve, tmp_path, caplog):
    judge = serve({"sumA": ['{"rating": 3}'], "sumB": ["2"], "sumC": ["no idea"]})
    with caplog.at_level("WARNING", logger="ctrlkit"):
        result = run_fm(write_jsonl(tmp_path / "papers.jsonl", FM_ROWS[:3]), judge, tmp_path, mode="vanilla")
    assert sum("the judge failed on 1 of 3 examples" in r.getMessage() for r in caplog.records) == 1
    assert [sample["scores"]["fm"] for sample in result.samples] == [{"vanilla": 0.75}, {"vanilla": 0.5},
                                                                      {"vanilla": None}]
    assert result.metrics["fm"] == {"vanilla": pytest.approx((0.75 + 0.5) / 2), "failed": 1}  # never "fm"
    assert [sample["details"]["fm"] for sample in result.samples[:2]] == [{"rating": 3}, {"rating": 2}]
    assert result.samples[2]["details"]["fm"]["failed"]["step"] == "rating"
    assert len(judge.requests) == 1 + 1 + 3  # no extraction; C asked again twice
    for messages in judge.requests:  # each shows one example's whole reference and whole summary
        assert [message["role"] for message in messages] == ["system", "user"]
        assert "from 1 to 4" in messages[0]["content"]
        [row] = [row for row in FM_ROWS if row["document"] in messages[1]["content"]]
        assert row["references"] in messages[1]["content"]


def test_user_files_replace_the_messages_the_server_receives(serve, tmp_path):
    """Per-facet rating with a system file and a template, extraction with only a system file
    (our user message stays), vanilla with only a template (one user message), focus with only a
    system file; each file's digest is recorded in results.json."""
    judge = serve({**{marker: answers for marker, answers in PF_RULES.items() if "A" in marker},
                   "fone": ['{"label": "empirical"}']})
    files = {
        "rate_system_file": "Rate the $facet from 1 to $scale; answer {\"rating\": N}.",
        "rate_template_file": "Reference: $reference_facet\nCandidate: $summary_facet",
        "extract_system_file": "Split into four facets; JSON with keys background, method, result, conclusion.",
    }
    paths = {option: write_path(tmp_path, option, text) for option, text in files.items()}
    path = write_jsonl(tmp_path / "a.jsonl", PF_ROWS[:1])
    result = run_fm(path, judge, tmp_path, rating="per-facet", **paths)
    assert result.metrics["fm"] == {"fm": pytest.approx(PF_A), "failed": 0}
    extract_system = {"role": "system", "content": files["extract_system_file"]}
    assert sorted(judge.requests, key=str) == sorted([
        [extract_system, {"role": "user", "content": "Abstract:\nThe reference refA."}],
        [extract_system, {"role": "user", "content": "Abstract:\nThe summary sumA of paper A."}],
        [{"role": "system", "content": 'Rate the background from 1 to 3; answer {"rating": N}.'},
         {"role": "user", "content": "Reference: bg pfAbg\nCandidate: sum bg"}],
        [{"role": "system", "content": 'Rate the method from 1 to 4; answer {"rating": N}.'},
         {"role": "user", "content": "Reference: method pfAme\nCandidate: sum method"}],
    ], key=str)
    recorded = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))["config"]["options"]["fm"]
    for option, text in files.items():
        assert recorded[option] == paths[option]
        assert recorded[f"{option}_digest"] == "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    gold = serve({"Gold:": ["3"]})
    vanilla = write_path(tmp_path, "vanilla", "Gold: $reference\nSystem: $summary\nScore 1-4, the number only.")
    result = run_fm(path, gold, tmp_path, "vanilla", mode="vanilla", vanilla_template_file=vanilla)
    assert gold.requests == [[{"role": "user", "content": "Gold: The reference refA.\nSystem: The summary sumA of "
                                                          "paper A.\nScore 1-4, the number only."}]]
    assert result.metrics["fm"] == {"vanilla": 0.75, "failed": 0}

    judge.requests.clear()
    focus_system = write_path(tmp_path, "focus", 'Empirical or conceptual? {"label": ...}')
    rows = write_jsonl(tmp_path / "focus.jsonl", FOCUS_ROWS[:1])
    result = run_fm(rows, judge, tmp_path, "focus", metric="focus", system_file=focus_system)
    assert judge.requests == [[{"role": "system", "content": 'Empirical or conceptual? {"label": ...}'},
                               {"role": "user", "content": "Summary:\nSummary fone."}]]
    assert result.metrics["focus"]["accuracy"] == 1.0
    recorded = json.loads((tmp_path / "focus" / "results.json").read_text(encoding="utf-8"))["config"]["options"]
    assert recorded["focus"]["system_file_digest"] == "sha256:" + hashlib.sha256(
        b'Empirical or conceptual? {"label": ...}').hexdigest()


@pytest.mark.parametrize("metric, options, error", [
    ("fm", {"rating": "per-facet", "rate_template_file": "Rate $facet_names:\n$facets"},
     "fm.rate_template_file file '.*' uses unknown placeholder \\$facet_names; known: \\$facet, \\$scale, "
     "\\$reference_facet, \\$summary_facet, \\$examples$"),
    ("fm", {"rating": "per-facet", "rate_template_file": "$facet: $reference_facet"},
     "fm.rate_template_file file '.*' lacks placeholder \\$summary_facet, which the judge needs$"),
    ("fm", {"rating": "per-facet", "rate_system_file": "Rate $facet of $text."},
     "fm.rate_system_file file '.*' uses unknown placeholder \\$text; known: "),
    ("fm", {"extract_system_file": "Split it.\nIt costs $5."},
     "fm.extract_system_file file '.*', line 2: a '\\$' that starts no placeholder"),
    ("fm", {"mode": "vanilla", "vanilla_template_file": "Rate $summary."},
     "fm.vanilla_template_file file '.*' lacks placeholder \\$reference"),
    ("fm", {"mode": "vanilla", "rate_template_file": "$facets"},
     "metric 'fm': fm.rate_template_file is not used with fm.mode=vanilla$"),
    ("fm", {"vanilla_system_file": "Rate $summary."}, "metric 'fm': fm.vanilla_system_file is not used with "
                                                      "fm.mode=facets$"),
    ("fm", {"mode": "vanilla", "rating": "per-facet"}, "fm.mode=vanilla rates no facets$"),
    ("focus", {"system_file": "Label $summary.", "labeller": "classifier", "classifier": "c.json"},
     "focus.system_file is the judge's prompt; it is not used with focus.labeller=classifier$"),
])
def test_bad_prompt_files_are_refused_before_any_judge_call(metric, options, error, serve, tmp_path):
    judge = serve(PF_RULES)
    given = {name: write_path(tmp_path, name, value) if name.endswith("_file") and value else value
             for name, value in options.items()}
    rows = PF_ROWS[:1] if metric == "fm" else FOCUS_ROWS[:1]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    with pytest.raises((ctrlkit.OptionError, ConfigurationError), match=error) as raised:
        run_fm(path, judge, tmp_path, metric=metric, **given)
    assert "\n" not in str(raised.value)
    assert judge.requests == []


FOCUS_ROWS = [
    {"id": "f1", "document": "Summary fone.", "controls": {"focus": "high"}},
    {"id": "f2", "document": "Summary ftwo.", "controls": {"focus": "high"}},
    {"id": "f3", "document": "Summary fthree.", "controls": {"focus": "low"}},
    {"id": "f4", "document": "Summary ffour.", "controls": {"focus": "low"}},
    {"id": "f5", "document": "Summary ffive.", "controls": {"focus": "high"}},
    {"id": "f6", "document": "Summary fsix.", "controls": {"focus": "low"}},
]
FOCUS_RULES = {
    "fone": ['{"label": "empirical"}'],
    "ftwo": ['{"label": "conceptual"}'],
    "fthree": ['{"label": "conceptual"}'],
    "ffour": ['The focus:\n```json\n{"label": "Empirical"}\n```'],
    "ffive": ['{"label": "mixed"}'],
    "fsix": ["conceptual, I think", '{"label": "conceptual"}'],
}


def test_focus_with_the_judge(serve, tmp_path):
    judge = serve(FOCUS_RULES)
    result = run_judged(write_jsonl(tmp_path / "focus.jsonl", FOCUS_ROWS), judge, ["focus"], tmp_path)
    assert [sample["scores"]["focus"]["correct"] for sample in result.samples] == [1, 0, 1, 0, None, 1]
    assert [sample["details"]["focus"]["label"] for sample in result.samples] == [
        "empirical", "conceptual", "conceptual", "empirical", None, "conceptual"]
    assert result.samples[4]["details"]["focus"]["failed"] == {
        "reason": '"label" must be "empirical" or "conceptual", got "mixed"', "answer": '{"label": "mixed"}',
        "attempts": 3}
    # by hand: empirical tp 1, fp 1, fn 1 -> 0.5; conceptual tp 2, fp 1, fn 1 -> 2/3
    corpus = result.metrics["focus"]
    assert corpus == {"f1_macro": pytest.approx((0.5 + 2 / 3) / 2), "f1_empirical": pytest.approx(0.5),
                      "f1_conceptual": pytest.approx(2 / 3), "accuracy": pytest.approx(0.6), "failed": 1}
    wanted, got = ["E", "E", "C", "C", "C"], ["E", "C", "C", "E", "C"]
    assert corpus["f1_macro"] == pytest.approx(f1_score(wanted, got, average="macro"))
    assert judge.asked("ffive") == 3 and judge.asked("fsix") == 2 and len(judge.requests) == 9


def test_focus_f1_counts_a_class_never_produced_as_zero(serve, tmp_path):
    judge = serve({marker: ['{"label": "empirical"}'] for marker in FOCUS_RULES})
    corpus = run_judged(write_jsonl(tmp_path / "focus.jsonl", FOCUS_ROWS), judge, ["focus"], tmp_path).metrics["focus"]
    assert corpus["f1_conceptual"] == 0.0 and corpus["f1_empirical"] == pytest.approx(2 * 3 / (2 * 3 + 3))
    assert corpus["accuracy"] == 0.5 and corpus["failed"] == 0


EMPIRICAL = [
    "We evaluate on three benchmark datasets and report accuracy and F1; results improve by 4 points.",
    "Experiments on 10,000 images show the model reaches 92% accuracy, beating the baseline.",
    "We measure latency and throughput across datasets; the results show a 2x speedup.",
    "On the test set the metric correlates with human scores (0.61), and experiments confirm it.",
    "The data show error rates fall by 30% in our experiments with larger training sets.",
    "We report precision, recall and accuracy on five datasets; results are consistent.",
]
CONCEPTUAL = [
    "We argue that the theory of attention explains why the method generalises, with implications for design.",
    "Motivated by limits of prior theory, we propose a framework that unifies two views of learning.",
    "The paper develops a conceptual model of causality and discusses its implications for policy.",
    "We motivate a new method from first principles and discuss the theory behind it.",
    "This essay revisits the theory of meaning and its implications for the motivation of models.",
    "We propose a method grounded in theory and discuss the broader implications of the framework.",
]


def train_classifier(tmp_path):
    rows = [{"summary": s, "label": "empirical"} for s in EMPIRICAL] + \
           [{"summary": s, "label": "conceptual"} for s in CONCEPTUAL]
    data = write_jsonl(tmp_path / "labelled.jsonl", rows)
    group = click.Group()
    commands.register_commands(cli=group)
    out = tmp_path / "focus-classifier.json"
    ran = CliRunner().invoke(group, ["train-focus-classifier", data, str(out)])
    assert ran.exit_code == 0, ran.output
    assert ran.output.startswith("trained on 6 empirical and 6 conceptual summaries")
    return out


def test_focus_with_a_classifier_trained_here_needs_no_judge(tmp_path):
    out = train_classifier(tmp_path)
    saved = json.loads(out.read_text())  # JSON, not a pickle
    assert set(saved) == {"format", "classes", "vocabulary", "idf", "coefficients", "intercept", "params"}
    assert saved["classes"] == ["conceptual", "empirical"] and len(saved["idf"]) == len(saved["vocabulary"])

    rows = [{"id": "e", "document": "Experiments on two datasets show accuracy results improve.",
             "controls": {"focus": "high"}},
            {"id": "c", "document": "We discuss the theory and the implications of the framework.",
             "controls": {"focus": "low"}},
            {"id": "x", "document": "We discuss the theory and the implications of the framework.",
             "controls": {"focus": "high"}}]
    result = ctrlkit.run(dataset="jsonl", data=write_jsonl(tmp_path / "run.jsonl", rows), metrics=["focus"],
                         baseline=None, options={"focus": {"labeller": "classifier", "classifier": str(out)}})
    assert [sample["details"]["focus"]["label"] for sample in result.samples] == ["empirical", "conceptual",
                                                                                "conceptual"]
    assert [sample["scores"]["focus"]["correct"] for sample in result.samples] == [1, 1, 0]
    assert result.metrics["focus"]["f1_empirical"] == pytest.approx(2 / 3)
    assert result.metrics["focus"]["failed"] == 0


def test_the_saved_classifier_decides_as_the_scikit_learn_model_it_was_trained_as(tmp_path):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    restored = FocusClassifier.load(train_classifier(tmp_path))
    vectorizer = TfidfVectorizer(lowercase=True, ngram_range=(1, 2), sublinear_tf=True, min_df=1)
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000).fit(
        vectorizer.fit_transform(EMPIRICAL + CONCEPTUAL), ["empirical"] * 6 + ["conceptual"] * 6)
    texts = ["accuracy of the theory", "results on datasets", "implications", "nothing known here", ""]
    assert restored.predict(texts) == list(model.predict(vectorizer.transform(texts)))
    assert (restored.vectorizer.transform(texts) @ restored.coefficients + restored.intercept) == pytest.approx(
        model.decision_function(vectorizer.transform(texts)))


def test_training_refuses_bad_labels_and_a_single_class(tmp_path):
    group = click.Group()
    commands.register_commands(cli=group)
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"summary": "x", "label": "empirical"},
                                               {"summary": "y", "label": "both"}])
    ran = CliRunner().invoke(group, ["train-focus-classifier", bad, str(tmp_path / "out.json")])
    assert isinstance(ran.exception, DatasetError) and "bad.jsonl:2: field 'label'" in str(ran.exception)
    one = write_jsonl(tmp_path / "one.jsonl", [{"summary": "x", "label": "empirical"}])
    ran = CliRunner().invoke(group, ["train-focus-classifier", one, str(tmp_path / "out.json")])
    assert "needs summaries of both labels" in str(ran.exception)
    assert not (tmp_path / "out.json").exists()


def test_misconfigurations_are_refused_before_any_work(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [{**FM_ROWS[0], "controls": {"focus": "high"}}])
    for metric in ("fm", "focus"):
        with pytest.raises(ConfigurationError, match=f"metric '{metric}' needs a judge that takes chat messages; "
                                                     "backbone 'extractive' lacks capability messages"):
            ctrlkit.run(dataset="jsonl", data=path, metrics=[metric], baseline=None, judge="extractive")
        with pytest.raises(ConfigurationError, match=f"metric '{metric}' needs a judge"):
            ctrlkit.run(dataset="jsonl", data=path, metrics=[metric], baseline=None)
    with pytest.raises(ConfigurationError, match="focus.labeller=classifier and focus.classifier=PATH"):
        ctrlkit.get_metric("focus", labeller="classifier")
    assert ctrlkit.get_metric("focus").needs_judge
    assert not ctrlkit.get_metric("focus", labeller="classifier", classifier="c.json").needs_judge


def test_an_unknown_focus_value_is_named(serve, tmp_path):
    judge = serve(FOCUS_RULES)
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": "q", "document": "Summary fone.",
                                               "controls": {"focus": "medium"}}])
    with pytest.raises(ctrlkit.CtrlkitError, match="example 'q' requests focus 'medium'"):
        run_judged(path, judge, ["focus"], tmp_path)
    assert not judge.requests


@pytest.mark.parametrize("answer, expected", [
    ('{"a": 1}', {"a": 1}),
    ('```json\n{"a": {"b": [1, 2]}}\n```', {"a": {"b": [1, 2]}}),
    ('Here: ```\n{"a": 2}\n``` done', {"a": 2}),
    ('I rate it {"a": 3, "note": "x}"} overall.', {"a": 3, "note": "x}"}),
    ('a set {1, 2} then {"a": 4}', {"a": 4}),
])
def test_json_object_finds_the_object_amid_fences_and_prose(answer, expected):
    assert json_object(answer) == expected


@pytest.mark.parametrize("answer", ["", "no json", "[1, 2]", '{"a": 1', "```json\n[1]\n```"])
def test_json_object_refuses_answers_without_an_object(answer):
    with pytest.raises(UnparseableAnswer, match="no JSON object"):
        json_object(answer)


def test_integer_accepts_digits_and_refuses_the_rest():
    assert integer(3, "x", 1, 3) == 3 and integer(" 2 ", "x", 1, 3) == 2
    for value in (0, 4, 2.0, True, "two", None):
        with pytest.raises(UnparseableAnswer, match="x must be an integer from 1 to 3"):
            integer(value, "x", 1, 3)


@pytest.mark.parametrize("answer, expected", [
    ("3", 3), (" 4\n", 4), ("2.", 2), ("Rating: 1", 1), ("Number: 3", 3), ('{"rating": 2}', 2),
    ('I would say:\n```json\n{"rating": "4", "why": "all there"}\n```', 4),
])
def test_single_rating_reads_the_number_alone_or_a_json_rating(answer, expected):
    assert single_rating(answer, "rating", 4) == expected


@pytest.mark.parametrize("answer, reason", [
    ("5", "rating must be an integer from 1 to 4, got 5"),
    ('{"rating": 0}', "rating must be an integer from 1 to 4, got 0"),
    ("3 or 4", 'no rating in the answer: expected {"rating": N} or the number alone'),
    ("I rate it 3 of 4.", 'no rating in the answer'),
    ('{"score": 3}', 'rating is missing: expected {"rating": N}'),
    ("", "no rating in the answer"),
])
def test_single_rating_refuses_what_is_not_one_rating(answer, reason):
    with pytest.raises(UnparseableAnswer) as raised:
        single_rating(answer, "rating", 4)
    assert str(raised.value).startswith(reason)


def test_cache_roundtrip_namespaces_and_canonical_keys(tmp_path):
    cache = Cache("judge")
    assert cache.get({"a": 1, "b": [1, 2]}) is None
    cache.put({"a": 1, "b": [1, 2]}, {"answer": "ünïcode", "n": 3})
    assert Cache("judge").get({"b": [1, 2], "a": 1}) == {"answer": "ünïcode", "n": 3}
    assert Cache("generations").get({"a": 1, "b": [1, 2]}) is None
    cache.put({"a": 1, "b": [1, 2]}, "replaced")
    assert cache.get({"a": 1, "b": [1, 2]}) == "replaced"
    assert cache_key({"x": 1, "y": 2}) == cache_key({"y": 2, "x": 1}) != cache_key({"x": 1})
    assert cache.path == tmp_path / "cache" / "cache.sqlite3" and cache.path.exists()
    with pytest.raises(ValueError, match="identifier"):
        Cache("judge; DROP TABLE judge")


def test_cache_is_safe_for_several_processes_at_once(tmp_path):
    script = textwrap.dedent("""
        import sys
        from ctrlkit.cache import Cache
        worker = int(sys.argv[1])
        for i in range(100):
            Cache("shared").put(["item", worker, i], {"worker": worker, "i": i})
            assert Cache("shared").get(["item", worker, i]) == {"worker": worker, "i": i}
    """)
    workers = [subprocess.Popen([sys.executable, "-c", script, str(worker)], env=dict(os.environ))
               for worker in range(4)]
    assert [worker.wait(timeout=120) for worker in workers] == [0] * 4
    cache = Cache("shared")
    assert all(cache.get(["item", w, i]) == {"worker": w, "i": i} for w in range(4) for i in range(100))
    mode = subprocess.run([sys.executable, "-c", "import sqlite3, sys; print(sqlite3.connect(sys.argv[1])"
                           ".execute('PRAGMA journal_mode').fetchone()[0])", str(cache.path)],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert mode == "wal"


@pytest.mark.parametrize("metric", ["fm", "focus"])
def test_a_judge_that_always_answers_garbage_warns_loudly_and_counts_failures(metric, tmp_path, throwaway_plugins,
                                                                             caplog):
    """Every answer fails to parse: the run still finishes (what it computed is kept), one loud
    line says the metric is undefined, and results.json records ``failed`` as a whole number."""

    class Garbage(ctrlkit.Backbone):
        capabilities = frozenset({"text", "messages"})

        def generate(self, inputs):
            return ["I'd rather not say." for _ in inputs]

    class Plugin:
        @ctrlkit.hookimpl
        def register_backbones(self, register):
            register("garbage", Garbage)

    throwaway_plugins(Plugin(), "garbage-judge")
    rows = FM_ROWS if metric == "fm" else FOCUS_ROWS
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    out = tmp_path / "out"
    with caplog.at_level("WARNING", logger="ctrlkit"):
        result = CliRunner().invoke(cli, ["run", "--dataset", "jsonl", "--data", path, "-m", metric,
                                          "--judge", "garbage", "--no-baseline", "-o", str(out)])
    assert result.exit_code == 0, result.output
    recorded = (out / "results.json").read_text(encoding="utf-8")
    assert f'"failed": {len(rows)}' in recorded  # an int in the file, not 4.0
    values = json.loads(recorded)["metrics"][metric]
    assert values["failed"] == len(rows) and isinstance(values["failed"], int)
    assert all(value is None for name, value in values.items() if name != "failed")
    warning = (f"ctrlkit: WARNING: metric '{metric}': the judge failed on every one of the {len(rows)} examples "
               f"(first: no JSON object in the answer, answer \"I'd rather not say.\"); the metric is undefined.")
    assert [r.getMessage() for r in caplog.records if "judge failed" in r.getMessage()] == [
        warning + " Check the judge (--judge) and the answers under details in samples.jsonl"]


def test_a_judge_failing_on_some_examples_says_how_many(serve, tmp_path, caplog):
    judge = serve({"fone": ['{"label": "empirical"}'], "ftwo": ["no idea"]})
    with caplog.at_level("WARNING", logger="ctrlkit"):
        result = ctrlkit.run(dataset="jsonl", data=write_jsonl(tmp_path / "two.jsonl", FOCUS_ROWS[:2]),
                             backbone="extractive", metrics=["focus"], baseline=None, judge="openai:judge-model",
                             options={"openai": {"base_url": judge.url}, "focus": {"retries": 0}})
    assert result.metrics["focus"]["failed"] == 1
    lines = [r.getMessage() for r in caplog.records if "judge failed" in r.getMessage()]
    assert lines == ["ctrlkit: metric 'focus': the judge failed on 1 of 2 examples (first: no JSON object in the "
                     "answer, answer \"no idea\"); they are left out of the value and counted in 'focus.failed'"]
