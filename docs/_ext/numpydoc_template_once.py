"""numpydoc's docstring template compiled once per build instead of once per docstring.

``numpydoc.docscrape_sphinx.get_doc_object`` builds a new Jinja environment and loads and
compiles ``numpydoc_docstring.rst`` for every docstring it renders (about 680 in this site:
about 3 s of the test build's CPU, ``tests/docs/test_docs_build.py``). This extension wraps
the function numpydoc's ``autodoc-process-docstring`` handler calls so that the template is
made by numpydoc's own code the first time for a builder and handed back in ``config`` (which
``get_doc_object`` then uses as it is) every other time. The rendered text is unchanged: the
same template, from the same loader, renders each docstring.
"""

from __future__ import annotations

import numpydoc.docscrape as docscrape
import numpydoc.docscrape_sphinx as docscrape_sphinx
import numpydoc.numpydoc as numpydoc_numpydoc

#: ``id(builder)`` -> the template ``docscrape_sphinx.get_doc_object`` made for it.
_TEMPLATES: dict[int, object] = {}


def get_doc_object(obj, what=None, doc=None, config=None, builder=None):
    """``docscrape_sphinx.get_doc_object`` with the builder's template made only once."""
    config = {} if config is None else config
    key = id(builder)
    if key not in _TEMPLATES:
        made = docscrape_sphinx.get_doc_object(obj, what=what, doc=doc, config=config,
                                               builder=builder)
        _TEMPLATES[key] = config["template"]
        return made
    config["template"] = _TEMPLATES[key]
    return docscrape.get_doc_object(obj, what=what, doc=doc, config=config,
                                    class_doc=docscrape_sphinx.SphinxClassDoc,
                                    func_doc=docscrape_sphinx.SphinxFunctionDoc,
                                    obj_doc=docscrape_sphinx.SphinxObjDoc)


def setup(app):
    """Install the wrapper where numpydoc's docstring handler looks the function up."""
    numpydoc_numpydoc.get_doc_object = get_doc_object
    return {"parallel_read_safe": True, "parallel_write_safe": True}
