"""The ``llamacpp`` backbone on the real SmolLM2-135M-Instruct GGUF (``smollm2_gguf``; skipped with the
command that installs it where it is absent), and its refusals, which need no model.

What each test compares with is computed apart from the backbone: the chat template rendered by
jinja2 from the file as the gguf package reads it; llama.cpp's own chat endpoint on a server the
test starts itself; transformers' tokenizer read from the same file.
"""

import json
import os

import pytest

import ctrlkit
from helpers import NEWTS_CSV, run_ctrlkit, shared_file
from ctrlkit import ModelInput
from ctrlkit.errors import ConfigurationError
from ctrlkit.testing import check_backbone

pytest.importorskip("xllamacpp", reason="the llamacpp backbone needs xllamacpp (pip install 'ctrlkit[llamacpp]')")

THREADS = 2  # explicit, so that every test's backbone reads the same arithmetic (the count changes the last bits)
SHORT = ("The city council voted on Tuesday to build a new park near the river, after years of debate about "
         "its cost. Work starts in May and should end next year.")
LOG_MARKS = ("llama_", "load_model", "srv ", "slot ", "print_info", "ggml_")


def chat(document: str, instruction: str = "Summarize the document in one sentence.") -> ModelInput:
    return ModelInput(source=document, messages=({"role": "system", "content": "You write short summaries."},
                                                  {"role": "user", "content": f"{instruction}\n\n{document}"}))


@pytest.fixture(scope="module")
def smollm2(smollm2_gguf):
    return ctrlkit.get_backbone(f"llamacpp:{smollm2_gguf}", max_new_tokens=24, threads=THREADS)


@pytest.fixture(scope="module")
def newts_articles():
    import csv

    with shared_file("newts/NEWTS_test_600.csv").open(encoding="utf-8", newline="") as handle:
        return [row["article"] for row, _ in zip(csv.DictReader(handle), range(4))]


def fed_requests(backbone, monkeypatch) -> list:
    """Record the completion requests the backbone sends (the fitted token ids among them)."""
    sent = []
    original = backbone.request
    monkeypatch.setattr(backbone, "request", lambda ids: sent.append(original(ids)) or sent[-1])
    return sent


def test_the_same_greedy_outputs_twice_and_from_a_second_backbone(smollm2, smollm2_gguf):
    inputs = [chat(SHORT), ModelInput(source=SHORT)]
    first = smollm2.generate(inputs)
    assert first == smollm2.generate(inputs)
    again = ctrlkit.get_backbone(f"llamacpp:{smollm2_gguf}", max_new_tokens=24, threads=THREADS)
    assert again.generate(inputs) == first
    assert all(text.strip() for text in first)
    assert "park" in first[0].lower()  # a real model summarizes: the document's subject is there


def test_a_seeded_sample_repeats_and_another_seed_differs(smollm2_gguf):
    def sampled(seed):
        return ctrlkit.get_backbone(f"llamacpp:{smollm2_gguf}", max_new_tokens=16, threads=THREADS, temperature=1.2,
                                    top_k=0, top_p=1.0, seed=seed).generate([chat(SHORT)])[0]

    assert sampled(3) == sampled(3)
    assert len({sampled(seed) for seed in (1, 2, 3, 4)}) > 1


def test_the_prompt_is_the_files_own_chat_template_rendered_independently(smollm2, smollm2_gguf):
    gguf = pytest.importorskip("gguf")
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    template = gguf.GGUFReader(str(smollm2_gguf)).fields["tokenizer.chat_template"].contents()
    model_input = chat(SHORT)
    rendered = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(template).render(
        messages=list(model_input.messages), add_generation_prompt=True, bos_token="<|im_start|>",
        eos_token="<|im_end|>")
    assert smollm2.prompt(model_input) == rendered
    assert smollm2.has_chat_template and not smollm2.flattens_messages


def test_what_it_generates_is_what_llama_cpps_own_chat_endpoint_answers(smollm2, smollm2_gguf, monkeypatch):
    """A bare server the test starts itself, asked through its chat endpoint (its template, its
    tokenizer), answers what the backbone generates from its fitted token ids."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(smollm2_gguf)
    params.n_ctx = smollm2.context_size()
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = THREADS
    params.verbosity = -1
    params.api_keys = ["test-only-key"]
    server = xllamacpp.Server(params)
    inputs = [chat(SHORT), chat("Rain is expected all week in the north, with floods likely near rivers.")]
    sent = fed_requests(smollm2, monkeypatch)
    ours = smollm2.generate(inputs)
    theirs = [server.handle_chat_completions({"messages": list(model_input.messages), "max_tokens": 24,
                                              "temperature": 0, "cache_prompt": False})
              ["choices"][0]["message"]["content"].strip() for model_input in inputs]
    assert ours == theirs
    assert all(isinstance(request["prompt"], list) for request in sent)  # the counted ids are what is fed


def test_its_token_counts_are_transformers_counts_of_the_same_file(smollm2, smollm2_gguf, newts_articles):
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(smollm2_gguf.parent, gguf_file=smollm2_gguf.name)
    texts = [smollm2.prompt(chat(article)) for article in newts_articles]
    assert smollm2.token_ids(texts, [False] * len(texts)) == [
        tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]


def test_a_long_newts_article_loses_its_end_and_keeps_its_instruction_and_cue(smollm2, smollm2_gguf,
                                                                               newts_articles):
    backbone = ctrlkit.get_backbone(f"llamacpp:{smollm2_gguf}", max_new_tokens=24, threads=THREADS,
                                    max_input_tokens=200)
    article = max(newts_articles, key=len)
    model_input = chat(article, "Summarize the document in one sentence about the weather.")
    [ids] = backbone.fitted_ids([model_input], backbone.input_limit())
    whole = backbone.token_ids([backbone.prompt(model_input)], [False])[0]
    assert len(whole) > 600 and len(ids) <= 200
    head = backbone.token_ids([backbone.prompt(chat("", "Summarize the document in one sentence about the "
                                                        "weather."))], [False])[0]
    cue = backbone.tokenize("<|im_end|>\n<|im_start|>assistant\n", False)
    assert ids[-len(cue):] == cue  # the assistant's turn is still asked for
    instruction = backbone.tokenize(" about the weather.", False)
    assert any(ids[at:at + len(instruction)] == instruction for at in range(len(ids)))
    assert ids[:5] == head[:5]  # the system turn stays at the head
    assert (backbone.truncated, backbone.truncated_head, backbone.truncated_to) == (1, 0, 200)
    [summary] = backbone.generate([model_input])
    assert summary.strip()


def test_a_prompt_over_the_limit_without_its_document_keeps_its_last_tokens_and_is_counted(smollm2_gguf):
    backbone = ctrlkit.get_backbone(f"llamacpp:{smollm2_gguf}", max_new_tokens=24, threads=THREADS,
                                    max_input_tokens=40)
    rewritten = ModelInput(source="not in the prompt", messages=(
        {"role": "user", "content": "Summarize: " + "the river rose and the town flooded. " * 30},))
    [ids] = backbone.fitted_ids([rewritten], 40)
    assert len(ids) == 40 and ids[-3:] == backbone.tokenize("<|im_start|>assistant\n", False)[-3:]
    assert (backbone.truncated, backbone.truncated_head) == (1, 1)


def test_a_base_model_without_a_template_gets_the_plain_prompts(smollm2_gguf, tmp_path):
    """The same weights with the template's key renamed in the header: a base model to ctrlkit and
    to llama.cpp alike."""
    data = smollm2_gguf.read_bytes()
    key = b"tokenizer.chat_template"
    assert data.count(key) == 1
    base = tmp_path / "base.gguf"
    base.write_bytes(data.replace(key, b"tokenizer.chat_templatX"))
    backbone = ctrlkit.get_backbone(f"llamacpp:{base}", max_new_tokens=12, threads=THREADS)
    assert not backbone.has_chat_template and backbone.flattens_messages
    assert backbone.prompt(ModelInput(source=SHORT)) == f"{SHORT}\nTL;DR:"
    assert backbone.prompt(chat(SHORT)).startswith("System: You write short summaries.")
    assert backbone.generate([ModelInput(source=SHORT)])[0].strip()


def test_stop_strings_end_a_summary(smollm2_gguf, smollm2):
    [whole] = smollm2.generate([chat(SHORT)])
    word = whole.split()[2]
    stopped = ctrlkit.get_backbone(f"llamacpp:{smollm2_gguf}", max_new_tokens=24, threads=THREADS,
                                   stop=f"{word}|\\n\\n").generate([chat(SHORT)])[0]
    assert whole.startswith(stopped) and word not in stopped.split()


def test_identity_holds_the_files_digest_runtime_and_options_not_its_path(smollm2, smollm2_gguf, tmp_path):
    import hashlib
    from importlib import metadata

    identity = smollm2.identity()
    assert identity["gguf_sha256"] == "sha256:" + hashlib.sha256(smollm2_gguf.read_bytes()).hexdigest()
    assert identity["runtime"] == f"xllamacpp {metadata.version('xllamacpp')}"
    assert "model" not in identity["options"] and identity["options"]["threads"] == THREADS
    assert identity["options"]["max_new_tokens"] == 24 and "verbose" not in identity["options"]
    copy = tmp_path / "same.gguf"
    copy.write_bytes(smollm2_gguf.read_bytes())
    assert ctrlkit.get_backbone(f"llamacpp:{copy}", max_new_tokens=24, threads=THREADS).identity() == identity
    assert ctrlkit.get_backbone(f"llamacpp:{copy}", max_new_tokens=25, threads=THREADS).identity() != identity
    recorded = smollm2.recorded_options()
    assert recorded["model_digest"] == identity["gguf_sha256"] and recorded["threads_used"] == THREADS


def test_it_conforms(smollm2):
    check_backbone(smollm2, [chat(SHORT), ModelInput(source=SHORT)])


@pytest.mark.parametrize("argument, options, message", [
    ("/nowhere/model.gguf", [], "no GGUF file at /nowhere/model.gguf"),
    ("TEXT", [], "is not a GGUF file"),
    ("SMOL", ["--set", "llamacpp.context=100"], "a context of 100 tokens leaves 0 for the prompt"),
    ("CUT", ["--limit", "1"], "cannot load"),  # a GGUF header whose tensors were cut off: llama.cpp refuses it
    ("SMOL", ["--set", "llamacpp.max_input_tokens=8000", "--set", "llamacpp.context=4096"],
     "max_input_tokens 8000 and max_new_tokens 128 do not fit a context of 4096"),
])
def test_a_wrong_file_or_context_is_one_line_before_any_work(tmp_path, smollm2_gguf, argument, options, message):
    text = tmp_path / "notes.gguf"
    text.write_text("hello")
    cut = tmp_path / "cut.gguf"
    with smollm2_gguf.open("rb") as whole:
        cut.write_bytes(whole.read(20_000_000))
    path = {"TEXT": str(text), "SMOL": str(smollm2_gguf), "CUT": str(cut)}.get(argument, argument)
    result = run_ctrlkit("run", "-b", f"llamacpp:{path}", "-c", "prompt", "-o", tmp_path / "out", *options)
    assert result.returncode != 0
    assert message in result.stderr and result.stderr.strip().count("\n") == 0, result.stderr
    assert not (tmp_path / "out").exists()


def test_a_run_on_real_newts_data_records_the_model_and_keeps_llama_cpps_log_off(smollm2_gguf, tmp_path):
    shared_file("newts/NEWTS_test_600.csv")
    args = ["run", "-d", "newts", "--data", NEWTS_CSV, "-c", "prompt", "-b", f"llamacpp:{smollm2_gguf}",
            "-m", "rouge", "-m", "stas", "--limit", "2", "--bootstrap", "0", "--set", "llamacpp.max_new_tokens=24",
            "--set", f"llamacpp.threads={THREADS}", "--set", "llamacpp.max_input_tokens=300"]
    result = run_ctrlkit(*args, "-o", tmp_path / "run")
    assert result.returncode == 0, result.stderr
    assert not [line for line in result.stderr.splitlines() if any(mark in line for mark in LOG_MARKS)], \
        result.stderr
    assert "inputs truncated to 300 tokens" in result.stderr  # NEWTS articles are longer: the run's line says so
    record = json.loads((tmp_path / "run" / "results.json").read_text())
    assert record["config"]["options"]["llamacpp"]["model_digest"].startswith("sha256:b179c952")
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 2 and all(sample["prediction"].strip() for sample in samples)

    again = run_ctrlkit(*args, "-o", tmp_path / "again")  # from the cache: the same summaries
    assert again.returncode == 0
    assert [json.loads(line)["prediction"] for line in (tmp_path / "again" / "samples.jsonl").read_text()
            .splitlines()] == [sample["prediction"] for sample in samples]
    assert json.loads((tmp_path / "again" / "results.json").read_text())["cache"]["hits"] >= 4  # both arms

    # llama.cpp's log, when asked for: by the option, or by ctrlkit's --verbose for every library
    for asked, folder in ((["--set", "llamacpp.verbose=true"], "option"), ([], "flag")):
        shown = run_ctrlkit(*(["--verbose"] if not asked else []), *args, *asked, "--no-cache", "--no-baseline",
                            "--limit", "1", "-o", tmp_path / folder)
        assert shown.returncode == 0 and "load_model" in shown.stderr, (folder, shown.stderr[-2000:])


def test_the_judge_path_on_fd_rows_rates_or_counts_each_failure(smollm2_gguf, tmp_path):
    fd = shared_file("fd/arxiv.json")
    result = run_ctrlkit("evaluate", "-d", "fd", "--data", fd, "-m", "fm", "--judge", f"llamacpp:{smollm2_gguf}",
                         "--limit", "2", "--bootstrap", "0", "--set", "llamacpp.max_new_tokens=96",
                         "--set", f"llamacpp.threads={THREADS}", "-o", tmp_path / "fd")
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "fd" / "results.json").read_text())
    assert record["config"]["judge_options"]["model_digest"].startswith("sha256:b179c952")
    samples = [json.loads(line) for line in (tmp_path / "fd" / "samples.jsonl").read_text().splitlines()]
    rated = [sample["scores"]["fm"]["fm"] for sample in samples if sample["scores"]["fm"]["fm"] is not None]
    assert all(0 <= value <= 1 for value in rated)
    assert len(rated) + record["metrics"]["fm"].get("failed", 0) == 2, (record["metrics"], result.stderr)


def test_it_generates_on_ray_workers_what_it_generates_here(smollm2_gguf, ray_address, tmp_path):
    shared_file("newts/NEWTS_test_600.csv")
    args = ["run", "-d", "newts", "--data", NEWTS_CSV, "-c", "prompt", "-b", f"llamacpp:{smollm2_gguf}",
            "-m", "rouge", "--limit", "3", "--bootstrap", "0", "--no-baseline", "--no-cache",
            "--set", "llamacpp.max_new_tokens=16", "--set", "llamacpp.threads=1",
            "--set", "llamacpp.max_input_tokens=256"]
    local = run_ctrlkit(*args, "-o", tmp_path / "local")
    remote = run_ctrlkit(*args, "--executor", "ray", "--workers", "2", "--address", ray_address,
                         "-o", tmp_path / "ray", env={"RAY_ADDRESS": ray_address})
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr

    def predictions(folder):
        return [json.loads(line)["prediction"] for line in (folder / "samples.jsonl").read_text().splitlines()]

    assert predictions(tmp_path / "ray") == predictions(tmp_path / "local")


def test_the_runtime_missing_is_one_line_naming_the_extra(smollm2_gguf, monkeypatch):
    import ctrlkit.backbones.llamacpp as module

    backbone = ctrlkit.get_backbone(f"llamacpp:{smollm2_gguf}", threads=THREADS)
    monkeypatch.setattr(module, "find_spec", lambda name: None)
    with pytest.raises(ConfigurationError, match=r"needs xllamacpp: pip install 'ctrlkit\[llamacpp\]'"):
        backbone.generate([chat(SHORT)])


def test_the_loopback_endpoint_refuses_a_request_without_the_processes_key(smollm2):
    import urllib.error
    import urllib.request

    address = smollm2.listening_address
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(address + "/completion", data=b'{"prompt": "hi", "max_tokens": 1}',
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        opener.open(request, timeout=10)
    assert refused.value.code == 401
    assert os.environ.get("LLAMA_API_KEY") is None  # the key is in no variable a child process inherits
