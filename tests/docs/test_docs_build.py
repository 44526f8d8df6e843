"""The documentation site builds from the repository with warnings as errors (``make docs``).

One Sphinx build per module (the notebooks are not executed here: ``DPRISK_DOCS_EXECUTE=off``;
``make docs`` executes them), then checks that what is generated from the code is there: a page
per public name of ``import dprisk as dr`` (from ``dprisk.__all__``), every subcommand in the
command-line reference (from the argparse parsers), and every page reachable from the index.
"""

from __future__ import annotations

import contextlib
import gc
import html
import io
import logging
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

pytest.importorskip("sphinx")


#: ``sphinx-build ARGS`` (``make docs``' command, without the notebooks executed) minus work no
#: test here reads:
#:
#: * no search index (``StandaloneHTMLBuilder.search = False``, the builder's own switch, which
#:   the help builders set): feeding every page's words to the indexer was about 8 % of the
#:   build; ``searchindex.js`` and ``search.html`` are the only files not written, and the
#:   indexer emits no warnings, so ``-W`` checks the same pages.
#: * no copies of the page sources (``html_copy_source=0``: ``_sources/``).
#: * no search for where each definition of an analysed module starts and ends
#:   (:func:`skip_definition_scan`).
#: * each autosummary table's rows made once, not once per page showing the table
#:   (:func:`summarise_each_table_once`).
#: * no log records made below the level ``-q`` shows (:func:`log_only_what_is_shown`).
#: * no navigation in the theme's pages (:func:`leave_navigation_out`): ``make bench``'s build
#:   (:func:`test_make_docs_executes_every_notebook_with_warnings_as_errors`) renders it.
SPHINX_ARGS = ("-W", "--keep-going", "-q", "-b", "html", "-D", "html_copy_source=0")


def skip_definition_scan(patch: pytest.MonkeyPatch) -> None:
    """Skip the half of Sphinx's source analysis whose result no page of this site reads.

    autodoc analyses the module of each object it documents (``ModuleAnalyzer.analyze``: 56
    modules) in two passes: one reads the ``#:`` comments, annotations and overloads, which the
    pages use; the other tokenizes the whole module to find the line range of each definition
    (``Parser.parse_definition``), read only through ``ModuleAnalyzer.find_tags`` by
    ``sphinx.ext.viewcode`` and ``literalinclude``'s ``:pyobject:``, neither used here. That
    pass was 0.48-0.58 s of the build's 12.3-14.2 s of CPU (two builds, 2026-11-29); the pages
    are byte for byte the same without it (``diff -r`` of the two sites). Should a page need
    the ranges, ``find_tags`` raises, which fails the build (``-W``) instead of leaving a
    range out. The analyses made meanwhile are kept in a cache of their own (``cache``), dropped
    after the build, so no analysis without ranges outlives it in this process.
    """
    from sphinx.pycode import ModuleAnalyzer
    from sphinx.pycode.parser import Parser

    def find_tags(self):
        raise AssertionError("tests/docs skips Parser.parse_definition: a page needs it now")

    patch.setattr(Parser, "parse_definition", lambda self: None)
    patch.setattr(ModuleAnalyzer, "find_tags", find_tags)
    patch.setattr(ModuleAnalyzer, "cache", {})


def summarise_each_table_once(patch: pytest.MonkeyPatch) -> None:
    """Make each ``autosummary`` table's rows once per build, not once per page that shows it.

    ``api/names.rst`` (the public names' tables, written by ``docs/_ext/dprisk_api.py``) is a
    page of its own and also included in ``api/index.md``, so Sphinx read its ten tables twice:
    each time importing every name, loading it as autodoc does (numpydoc's docstring processing
    included) and parsing the first sentence of its docstring, the same rows from the same
    names in the same settings. The second page now gets a copy of the first's rows (about
    0.5 s of the build's CPU, 2026-11-29; pages byte for byte the same). A table fails the
    build (``-W``) where it did: the first making of its rows warns as before.
    """
    from sphinx.ext.autosummary import Autosummary, get_import_prefixes_from_env

    get_items = Autosummary.get_items
    made: dict[tuple, list] = {}

    def rows_once(self, names):
        key = (tuple(names), tuple(get_import_prefixes_from_env(self.env)),
               self.options.get("signatures"), "nosignatures" in self.options)
        if key not in made:
            made[key] = get_items(self, names)
        return list(made[key])

    patch.setattr(Autosummary, "get_items", rows_once)


def log_only_what_is_shown(patch: pytest.MonkeyPatch) -> None:
    """Make no log record that no handler of the build takes (Sphinx's debug messages).

    Sphinx's ``logging.setup`` sets its ``sphinx`` logger (every extension's logger is a child
    of it) to ``DEBUG`` and gives each of its handlers a level of its own: warnings at
    ``WARNING``, the status messages at the verbosity's level (``INFO`` here). So each of the
    build's ~7,800 debug messages (an extension's config value, event handler or role
    registered, an event emitted, an object imported) was made into a record, with its
    caller's frame looked up, then dropped by every handler: about 3 % of the build's CPU
    (2026-12-01, profiled). With the logger itself at the lowest level a handler takes, those
    messages are dropped before a record is made; every record a handler took is made and
    handled as before, so ``-W`` fails the build on the same warnings.
    """
    from sphinx.util import logging as sphinx_logging

    setup = sphinx_logging.setup

    def setup_at_the_shown_level(app, status, warning, *, verbosity: int = 0) -> None:
        setup(app, status, warning, verbosity=verbosity)
        logger = logging.getLogger(sphinx_logging.NAMESPACE)
        logger.setLevel(min(handler.level for handler in logger.handlers))

    patch.setattr(sphinx_logging, "setup", setup_at_the_shown_level)


#: The theme's navigation lists, empty in the default run's build (:func:`leave_navigation_out`):
#: the primary sidebar (the site's toctree), the header's links and the page's own contents.
NO_NAVIGATION = {"html_sidebars": {"**": []},
                 "html_theme_options": {"secondary_sidebar_items": [], "navbar_center": []}}


def leave_navigation_out(patch: pytest.MonkeyPatch) -> None:
    """Build the pages with the site's theme and settings but without its navigation lists.

    On each of the site's ~200 pages the theme makes three lists of links: the sidebar's (the
    site's toctree resolved for the page, then reworked with BeautifulSoup), the header's, and
    the page's own contents (parsed with BeautifulSoup, rendered first to learn whether it is
    empty): about 7-8 % of the build's CPU, profiled (2026-12-02), none of it read by a test
    here. They are links made from the toctrees that the pages' own ``toctree`` directives
    resolve in this build too (a broken entry, a page in no toctree or without a title warns
    there, with ``-W``); every page is still written with the theme's layout, header, footer
    and article templates, and its extension's transforms run. ``make bench``'s build
    (:func:`test_make_docs_executes_every_notebook_with_warnings_as_errors`) renders the
    navigation, as ``make docs`` does. ``conf.py`` is read as written; the lists are replaced
    after (:data:`NO_NAVIGATION`), its other theme options kept.
    """
    import sphinx.config

    read = sphinx.config.eval_config_file

    def read_without_navigation(filename, tags):
        namespace = read(filename, tags)
        namespace["html_sidebars"] = NO_NAVIGATION["html_sidebars"]
        namespace["html_theme_options"] = {**namespace.get("html_theme_options", {}),
                                           **NO_NAVIGATION["html_theme_options"]}
        return namespace

    patch.setattr(sphinx.config, "eval_config_file", read_without_navigation)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The site built in this test process (Sphinx's ``build_main``, what ``sphinx-build`` runs
    after setting the console's locale).

    In this process rather than a fresh ``sphinx-build``: the build imports every public module
    of dprisk and what they import (PyMC, xarray, SciPy, Matplotlib, Panel: about 8 s of CPU),
    which the worker imports anyway for its other tests, so a run of ``make test`` pays them
    once instead of twice. The pages are the same; Python warnings raised during the build are
    errors, as everywhere in the tests (a subprocess printed them). No cyclic garbage collection
    during the build: it holds every page's doctree, which each collection walked again (about
    1.8 s of its CPU); reference counting frees what it freed before, and one collection of the
    youngest generation (where all the build's objects stay meanwhile) reclaims the rest after.
    """
    from sphinx.builders.html import StandaloneHTMLBuilder
    from sphinx.cmd.build import build_main

    from dprisk.runtime import renamed

    out = tmp_path_factory.mktemp("html")
    doctrees = tmp_path_factory.mktemp("doctrees")
    warned = set(renamed._WARNED)
    messages = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DPRISK_DOCS_EXECUTE", "off")
        patch.setattr(StandaloneHTMLBuilder, "search", False)
        skip_definition_scan(patch)
        summarise_each_table_once(patch)
        log_only_what_is_shown(patch)
        leave_navigation_out(patch)
        patch.setattr(sys, "path", list(sys.path))  # conf.py puts docs/_ext first
        collecting = gc.isenabled()
        gc.disable()
        try:
            with contextlib.redirect_stderr(messages):
                status = build_main([*SPHINX_ARGS, "-d", str(doctrees), str(DOCS), str(out)])
        finally:
            if collecting:
                gc.enable()
            gc.collect(0)  # the build's objects, all still in the youngest generation
    assert status == 0, f"sphinx-build failed:\n{messages.getvalue()[-4000:]}"
    # The build looked no renamed name up: each still warns once in this worker's other tests.
    assert renamed._WARNED == warned
    return out


def test_index_and_guide_pages(built):
    assert (built / "index.html").exists()
    for page in ["getting-started", "guide/index", "guide/one-level", "guide/two-levels",
                 "guide/nested-levels", "cli", "cli-reference", "api/index", "validation",
                 "paper-differences", "speed", "architecture"]:
        assert (built / f"{page}.html").exists(), page


def test_api_reference_lists_every_public_name(built):
    import dprisk

    names = [name for name in dprisk.__all__ if name in dprisk._LAZY]
    missing = [name for name in names
               if not (built / "api" / "generated" / f"dprisk.{name}.html").exists()]
    assert not missing, f"no API page for {missing}"
    page = (built / "api" / "generated" / "dprisk.posterior.html").read_text()
    assert "Parameters" in page  # numpydoc rendered the docstring's sections


def test_api_reference_has_a_page_for_every_result_type(built, monkeypatch):
    """A public function's ``Returns`` names its result's class (``DGBudget`` of
    ``dr.privacy.rho_for_target``, ``TwoLevelPCorrect`` of ``dr.two_level.p_correct``, 25 of
    them); without a page of its own the fields it holds were nowhere on the site."""
    monkeypatch.syspath_prepend(str(DOCS / "_ext"))
    import dprisk_api

    names = dprisk_api.public_names()[dprisk_api.RESULT_TYPES]
    assert "dprisk.inference.privacy.budget.DGBudget" in names
    assert "dprisk.inference.studies.p_correct.TwoLevelPCorrect" in names
    missing = [name for name in names
               if not (built / "api" / "generated" / f"{name}.html").exists()]
    assert not missing, f"no API page for {missing}"
    page = html.unescape(re.sub(r"<[^>]+>", "", (
        built / "api" / "generated" / "dprisk.inference.privacy.budget.DGBudget.html")
        .read_text()))
    assert "certified_to" in page  # the fields, from the class's Attributes


def test_cli_reference_lists_every_subcommand(built):
    from dprisk.cli.main import build_parser
    from dprisk.cli.parsers import subparser

    page = html.unescape(re.sub(r"<[^>]+>", "", (built / "cli-reference.html").read_text()))
    parser = build_parser()
    commands = next(action for action in parser._actions if hasattr(action, "choices")
                and isinstance(action.choices, dict)).choices
    for name in commands:
        assert f"dprisk {name}" in page, name
        for action in subparser(parser, name)._actions:
            for option in action.option_strings:
                if option.startswith("--"):
                    assert option in page, (name, option)


@pytest.mark.slow
def test_make_docs_executes_every_notebook_with_warnings_as_errors(tmp_path):
    """``make docs``' build as a fresh clone runs it (the arguments above): every notebook
    executed (myst-nb's ``force``: no cache read or written), the theme's navigation rendered
    (the default run's build leaves it out: :func:`leave_navigation_out`), warnings as errors,
    in a process of its own. The default run builds without executing (above), so this is
    where an output the site cannot show fails: the live cells' Panel loaders did (``skipping
    unknown output mime type``; they now show their output at the parameters' values,
    ``DPRISK_LIVE=static``). About 70 s of CPU (2026-11-30): ``make bench`` runs it."""
    import os
    import subprocess

    out = tmp_path / "html"
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", *SPHINX_ARGS, "-d", str(tmp_path / "doctrees"),
         str(DOCS), str(out)],
        env={**os.environ, "DPRISK_DOCS_EXECUTE": "force"}, capture_output=True, text=True,
        timeout=1200, check=False)
    assert done.returncode == 0, f"sphinx-build failed:\n{done.stderr[-4000:]}"
    for path in sorted((ROOT / "notebooks").glob("*.py")):
        page = (out / "notebooks" / f"{path.stem}.html").read_text()
        assert "holoviews" not in page, path.stem
        if "dr.live(" in path.read_text():
            assert "dprisk-static-note" in page, path.stem
