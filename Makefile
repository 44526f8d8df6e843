# Every target creates the virtual environment in .venv/ when it is missing.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
# The install is strict editable (a link tree under build/, see docs/architecture.md): it is
# redone when pyproject.toml or the list of package files changes (a module added or moved).
LAYOUT := $(shell find dprisk models inference validation \( -name '*.py' -o -name '*.json' \) \
	-not -path '*/__pycache__/*' 2>/dev/null | LC_ALL=C sort | cksum | cut -d' ' -f1)
STAMP := $(VENV)/.installed-$(LAYOUT)
REPORT_DIR ?= report

# PyMC 6 / PyTensor 3 / ArviZ 1 need Python >= 3.12: take the first interpreter that is.
PYTHON ?= $(shell for c in python3.12 python3.13 python3 python \
	$$HOME/.pyenv/versions/3.12*/bin/python3.12; do \
	command -v $$c >/dev/null 2>&1 && $$c -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null \
	&& { command -v $$c; break; }; done)

.PHONY: setup test report bench lint clean clean-report screenshot docs

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "error: no Python >= 3.12 found (PyMC 6 needs it)" >&2; exit 1; }
	@# The venv gets no pip of its own (ensurepip costs 5 s). uv comes straight from its index's
	@# wheel (tools/install_uv.py: 1.5 s, pip's choice of wheel, its sha256 checked); where that
	@# fails, the interpreter's pip installs it (pip --python, pip >= 22.3: 4.5 s), else
	@# ensurepip and the venv's own pip.
	@test -x $(PY) || $(PYTHON) -m venv --without-pip $(VENV)
	@rm -f $(VENV)/.installed*
	@$(PYTHON) tools/install_uv.py $(PY) \
		|| $(PYTHON) -m pip --python $(PY) install --quiet --disable-pip-version-check uv 2>/dev/null \
		|| { $(PY) -m ensurepip --upgrade >/dev/null \
			&& $(PY) -m pip install --quiet --disable-pip-version-check uv; }
	@# uv installs the same versions as pip, several times faster (parallel downloads); pip is the
	@# fallback.
	$(VENV)/bin/uv pip install --quiet --python $(PY) --config-settings editable_mode=strict \
			-e '.[dev]' \
		|| { $(PY) -m ensurepip --upgrade >/dev/null && $(PY) -m pip install --quiet \
			--disable-pip-version-check --config-settings editable_mode=strict -e '.[dev]'; }
	@# Byte-compile the libraries once, on every core, so that no process compiles them again (an
	@# environment with PYTHONDONTWRITEBYTECODE would otherwise compile them in every process);
	@# the package's own modules too, through the link tree console scripts import them from
	@# and in the source tree `python -m pytest` imports them from, and the tests' helper
	@# modules. Left out: the libraries' own test suites and the modules no process of
	@# `make test` or `make report` reads (tools/compile_skip.txt), compiled on first import.
	@# Each compilation is kept below dprisk's cache directory by its source's SHA-256, so the
	@# next set-up (a fresh clone) links or copies it instead of compiling again (18 s -> 2 s).
	$(PY) tools/compile_libraries.py \
		$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))') \
		build dprisk models inference validation tests
	@# jsonschema's optional IRI-format checker (rfc3987-syntax, pulled in through
	@# jupyter-events' jsonschema[format-nongpl]) builds Lark grammars when it is imported: 3 s of
	@# CPU in every process that imports nbformat (jupytext, papermill, nbclient, the notebook
	@# tests). Nothing here validates IRIs, and jsonschema leaves that format unchecked without it.
	$(VENV)/bin/uv pip uninstall --quiet --python $(PY) rfc3987-syntax
	@touch $(STAMP)

# The default run uses every core (pytest-xdist); paper-scale tests are marked slow and left to
# `make bench` and `make report`. --dist loadscope keeps a module's tests on one worker, so a
# module-scoped fixture (a whole study, a cross-check battery) is computed once, not per worker;
# --no-loadscope-reorder keeps tests/conftest.py's order (the costliest modules first).
test: setup
	$(PY) -m pytest -n auto --dist loadscope --no-loadscope-reorder

report: setup
	$(VENV)/bin/dprisk reproduce --out $(REPORT_DIR)

bench: setup
	$(PY) -m pytest -n auto -m slow
	$(PY) benchmarks/run.py

# Look at the report as a person does: check it, then screenshot it in headless Chromium.
screenshot: setup
	@test -f $(REPORT_DIR)/index.html || $(MAKE) report
	@command -v chromium-headless-shell >/dev/null 2>&1 || command -v chromium >/dev/null 2>&1 \
		|| { apt-get update -qq && { apt-get install -y -qq chromium-headless-shell \
			|| apt-get install -y -qq chromium; }; }
	$(PY) -m dprisk.validation.report.screenshot $(REPORT_DIR)

# The documentation site: Sphinx (pydata theme, MyST, numpydoc, sphinx-argparse, myst-nb) builds
# docs/_build/html with warnings as errors, no network; the notebooks are executed once and their
# outputs cached (docs/_build/.jupyter_cache), each live cell shown as its output at the
# parameters cell's values (DPRISK_LIVE=static). DPRISK_DOCS_EXECUTE=off skips executing them.
docs: setup
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	@echo "docs: docs/_build/html/index.html"

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

clean: clean-report
	rm -rf $(VENV) build .pytest_cache .ruff_cache docs/_build docs/api/generated docs/api/names.rst docs/api/renames.rst

# The report directory goes only when it is one, and only its own files
# (dprisk.validation.report.output.remove_report): it holds `dprisk reproduce`'s marker
# (.dprisk-report, listing them), and a file the user added stays (as a rerun keeps it). A
# directory of the user's at REPORT_DIR (`make clean REPORT_DIR=~/notes`) or a symbolic link
# is kept and named; so is a report when no environment is left to read its marker.
clean-report:
	@if [ -e "$(REPORT_DIR)" ] || [ -L "$(REPORT_DIR)" ]; then \
		if [ -x $(PY) ]; then $(PY) -m dprisk.validation.report.output "$(REPORT_DIR)"; \
		else echo "clean: $(REPORT_DIR) kept: no $(PY) to read its marker (make setup first)"; fi; \
	fi
