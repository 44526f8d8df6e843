"""Sphinx configuration of the dprisk documentation site (``make docs``).

The pages are Markdown (MyST); the API reference is generated from the docstrings (autosummary,
numpydoc), the command-line reference from the argparse parsers (sphinx-argparse), and the
notebooks are rendered from their jupytext percent scripts (myst-nb; executed with a cache by
``make docs``, not executed by the test build). No page needs the network: intersphinx is off,
so references to other projects' objects are left as text and only this project's references
are checked (``nitpicky`` with the other projects' names ignored).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "dprisk"
author = "the dp-disclosure-risk developers"
copyright = "the dp-disclosure-risk developers"

extensions = [
    "myst_nb",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinxarg.ext",
    "dprisk_api",
    "numpydoc_template_once",
]

# reStructuredText first: autosummary writes its generated pages with the first suffix.
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "conf.py", "_ext", "Thumbs.db", ".DS_Store"]
root_doc = "index"

# MyST: $…$ and $$…$$ maths, heading anchors for links such as page.md#section.
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# Notebooks are jupytext percent scripts in notebooks/, linked into docs/notebooks/ by the
# api_names extension. `make docs` executes them once and caches the outputs
# (docs/_build/.jupyter_cache); DPRISK_DOCS_EXECUTE=off builds without executing (the test).
nb_custom_formats = {".py": ["jupytext.reads", {"fmt": "py:percent"}]}
nb_execution_mode = os.environ.get("DPRISK_DOCS_EXECUTE", "cache")
# The cache has a directory per way of showing live cells: outputs cached while the live cells
# still showed Panel's controls (which the site cannot show) are not reused.
nb_execution_cache_path = str(DOCS / "_build" / ".jupyter_cache" / "live-static")
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_merge_streams = True
# A page of the site has no kernel behind it, so the notebooks' live controls cannot run there:
# the kernels that execute the notebooks (they inherit this environment) show each live view
# as its output at the parameters cell's values (dprisk.explore.notebook.StaticView). Set only
# when notebooks are executed: the test build (execution off) runs in a process whose later
# notebook kernels must keep their controls.
if nb_execution_mode != "off":
    os.environ["DPRISK_LIVE"] = "static"

# The API reference: one page per public name (autosummary), numpydoc sections.
templates_path = ["_templates"]
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"
# No `# type:` comments in the package: autodoc need not parse each function's source for them
# (about 2 % of the build's CPU; the pages are the same).
autodoc_use_type_comments = False
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# Every reference to this project's objects must resolve; other projects' names (no network:
# no intersphinx inventories) are ignored.
nitpicky = True
_OTHER_PROJECTS = (
    "numpy", "np", "xarray", "xr", "pandas", "pd", "pymc", "pm", "pytensor", "pt", "arviz", "az",
    "scipy", "dask", "distributed", "matplotlib", "panel", "pn", "bokeh", "pyarrow", "fractions",
    "collections", "pathlib", "typing", "os", "io", "argparse", "functools", "concurrent",
    "threading", "dataclasses", "enum", "abc",
)
_TYPE_WORDS = (
    "int", "float", "str", "bool", "bytes", "tuple", "list", "dict", "set", "frozenset", "object",
    "callable", "type", "None", "Ellipsis", "array_like", "array-like", "ndarray", "optional",
    "sequence", "iterable", "mapping", "path-like", "scalar", "Fraction", "DataTree", "Dataset",
    "DataArray", "Figure", "Axes", "Model", "Path",
)
_PHRASE_WORDS = ("of", "or", "and", "shape", "default", "length", "numbers?", "arrays?", "lists?",
                 "floats?", "ints?", "integers?")
nitpick_ignore_regex = [
    (r"py:.*", rf"({'|'.join(_OTHER_PROJECTS)})\b.*"),
    (r"py:.*", rf"({'|'.join(_TYPE_WORDS)})\b.*"),
    (r"py:.*", rf".*\b({'|'.join(_PHRASE_WORDS)})\b.*"),
]

html_theme = "pydata_sphinx_theme"
html_title = "dprisk"
html_theme_options = {
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path: list[str] = []

# "--rho1" must stay two hyphens (option names), never an en dash.
smartquotes = False
