"""The documentation site builds from the repository with warnings as errors (``make docs``).

One Sphinx build per module (the notebooks are not executed here: ``DPRISK_DOCS_EXECUTE=off``;
``make docs`` executes them), then checks that what is generated from the code is there: a page
per public name of ``import dprisk as dr`` (from ``dprisk.__all__``), every subcommand in the
command-line reference (from the argparse parsers), and every page reachable from the index.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

pytest.importorskip("sphinx")


#: ``python -m sphinx ARGS`` (what ``sphinx/__main__.py`` runs) minus work no test here reads:
#:
#: * no cyclic garbage collection during the build (``gc.disable()``): the build holds every
#:   page's doctree, which each collection walked again, about 1.8 s of the build's CPU even at
#:   ``tests/conftest.py``'s ``GC_THRESHOLDS`` (peak RSS about 430 -> 550 MB); what reference
#:   counting frees is freed as before, and the pages built are the same.
#: * no search index (``StandaloneHTMLBuilder.search = False``, the builder's own switch, which
#:   the help builders set): feeding every page's words to the indexer was about 8 % of the
#:   build; ``searchindex.js`` and ``search.html`` are the only files not written, and the
#:   indexer emits no warnings, so ``-W`` checks the same pages.
#: * no copies of the page sources (``html_copy_source=0``: ``_sources/``).
SPHINX_MAIN = ("import gc, sys; gc.disable(); sys.argv[0] = 'sphinx'; "
               "from sphinx.builders.html import StandaloneHTMLBuilder; "
               "StandaloneHTMLBuilder.search = False; "
               "from sphinx.cmd.build import main; raise SystemExit(main(sys.argv[1:]))")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html")
    doctrees = tmp_path_factory.mktemp("doctrees")
    env = {**os.environ, "DPRISK_DOCS_EXECUTE": "off"}
    done = subprocess.run(
        [sys.executable, "-c", SPHINX_MAIN, "-W", "--keep-going", "-q", "-b", "html",
         "-D", "html_copy_source=0", "-d", str(doctrees), str(DOCS), str(out)],
        capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, f"sphinx-build failed:\n{done.stderr[-4000:]}"
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
