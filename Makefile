# Two commands set up a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PACKAGES := -e . -e plugins/controllers -e plugins/metrics -e plugins/datasets
export HF_HUB_OFFLINE := 1

.PHONY: install demo test clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml plugins/*/pyproject.toml constraints.txt requirements-test.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt torch
	$(BIN)/pip install -q -c constraints.txt $(PACKAGES) ".[embedding]" -r requirements-test.txt
	touch $@

demo: install
	$(BIN)/ctrlkit run --controller tag --metric stas --out runs/demo

test: install
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) runs
