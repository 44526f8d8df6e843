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

# Library subtrees that no process of the default test run reads (no .pyc of theirs opened in a
# run of every test directory, 2026-11-28, benchmarks/unread_packages.py --regex, subtrees of
# 0.1 MB of bytecode and more): `make setup` does not byte-compile them (1,470 of 9,000 files;
# compileall's CPU 74 -> 64 s, the two run side by side on the 2 cores; whatever imports them
# later compiles them on first import, as before compileall).
COMPILE_SKIP_LINES := PIL/TiffImagePlugin|aiohttp|better_optimize|bokeh/sphinxext|dask/array/_array_expr|\
	dask/bag|dask/dataframe|distributed/dashboard|distributed/utils_test|\
	docutils/writers/odf_odt|filelock|fontTools/cffLib|fontTools/designspaceLib|\
	fontTools/feaLib|fontTools/otlLib|fontTools/pens|fontTools/subset|fontTools/ttLib|\
	fontTools/ufoLib|fontTools/varLib|fontTools/voltLib|fsspec|hypothesis/extra|ipywidgets|\
	joblib|jupyter_lsp|lark|markdown|matplotlib/backends/backend_pdf|\
	mpl_toolkits/axes_grid1|mpl_toolkits/axisartist|narwhals/_arrow|narwhals/_dask|\
	narwhals/_duckdb|narwhals/_ibis|narwhals/_pandas_like|narwhals/_polars|\
	narwhals/_spark_like|numba/cuda|pandas/plotting/_matplotlib|panel/command|\
	panel_material_ui|pexpect|playwright/async_api|prompt_toolkit|pytensor/xtensor|\
	scipy/_external/cobyqa|scipy/_external/pyprima|scipy/cluster|scipy/io|\
	scipy/special/_add_newdocs|setuptools/_vendor/backports|setuptools/_vendor/packaging|\
	sqlalchemy/dialects/mssql|sqlalchemy/dialects/mysql|sqlalchemy/dialects/oracle|\
	sqlalchemy/dialects/postgresql|sqlalchemy/dialects/sqlite|sqlalchemy/ext|tabulate|tree|\
	wcwidth|wrapt
_nothing :=
COMPILE_SKIP := $(subst $(_nothing) ,,$(COMPILE_SKIP_LINES))

# PyMC 6 / PyTensor 3 / ArviZ 1 need Python >= 3.12: take the first interpreter that is.
PYTHON ?= $(shell for c in python3.12 python3.13 python3 python \
	$$HOME/.pyenv/versions/3.12*/bin/python3.12; do \
	command -v $$c >/dev/null 2>&1 && $$c -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null \
	&& { command -v $$c; break; }; done)

.PHONY: setup test report bench lint clean screenshot docs

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "error: no Python >= 3.12 found (PyMC 6 needs it)" >&2; exit 1; }
	@# The venv gets no pip of its own (ensurepip costs 5 s): the interpreter's pip installs uv
	@# into it (pip --python, pip >= 22.3); where that fails, ensurepip and the venv's own pip.
	@test -x $(PY) || $(PYTHON) -m venv --without-pip $(VENV)
	@rm -f $(VENV)/.installed*
	@$(PYTHON) -m pip --python $(PY) install --quiet --disable-pip-version-check uv 2>/dev/null \
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
	@# the libraries' own test suites (a third of their files) are never imported here: left out.
	@# The package's own modules too, through the link tree they are imported from.
	@# Subtrees that no process of `make test` reads (COMPILE_SKIP) are left out too. NumPy's
	@# and xarray's `testing` packages are imported by every process that imports SciPy's
	@# special functions or xarray's assertions: compiled.
	$(PY) -m compileall -q -j 0 \
		-x '/(tests?|(?<!numpy/)(?<!xarray/)testing)/|/site-packages/($(COMPILE_SKIP))(/|\.py$$)' \
		$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))') build >/dev/null
	@# The package's source tree and the tests' helper modules too: `python -m pytest` (and any
	@# `python -m`/`-c` run from this folder) imports `dprisk` from ./dprisk, not from the link
	@# tree, and each test process compiled every module it imported (about 0.8 s of CPU for
	@# the 240 modules of a worker's collection). Test modules and conftest files are left out:
	@# pytest reads its own assertion-rewritten pycs of them.
	$(PY) -m compileall -q -j 0 -x '/(test_[^/]*|conftest)\.py$$' \
		dprisk models inference validation tests >/dev/null
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
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium; }
	$(PY) -m dprisk.validation.report.screenshot $(REPORT_DIR)

# The documentation site: Sphinx (pydata theme, MyST, numpydoc, sphinx-argparse, myst-nb) builds
# docs/_build/html with warnings as errors, no network; the notebooks are executed once and their
# outputs cached (docs/_build/.jupyter_cache). DPRISK_DOCS_EXECUTE=off skips executing them.
docs: setup
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	@echo "docs: docs/_build/html/index.html"

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) $(REPORT_DIR) build .pytest_cache .ruff_cache docs/_build docs/api/generated docs/api/names.rst docs/api/renames.rst
