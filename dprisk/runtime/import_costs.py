"""What importing the libraries costs a process besides the imports themselves, left out.

ArviZ's ``arviz_base`` (imported with PyMC) asks ``lazy_loader.load`` for ``jax`` and
``numpyro`` at its import. Neither is installed here, and for each ``lazy_loader`` keeps its
caller's file, line and source line for the error its placeholder raises on first use, read
from ``inspect.stack()``: every frame of the stack with its source, each of importlib's frozen
frames looked up through all of ``sys.modules``. The deeper the stack and the more modules
loaded, the more it costs: 0.3-0.5 s of CPU in the report's fork server, 1.0 s at a test
worker's collection, 0.5 s in a notebook kernel (measured 2026-11-29/30).
:func:`lazy_loader_reads_one_frame` has it read the caller's frame alone: the same file, line,
function and source line (the line from ``linecache``, not ``inspect.getframeinfo``'s
``findsource``, which looks the module up through every loaded module's real path: 0.13 s
of CPU in the report's fork server), so the placeholder and its error are the same.

SciPy and matplotlib write docstrings at import: SciPy's Array API notes (a parse and reprint
of 639 docstrings as the report's fork server imports ``scipy.stats`` and ``scipy.signal``),
matplotlib's property tables of each artist class's ``set``: about 0.5-0.9 s of CPU in the
fork server, 0.3-0.4 s in ``dprisk reproduce``'s own process, none of it read there.
:func:`library_docstrings_left_out` leaves those docstrings as written.

Called where dprisk runs a process of its own that imports PyMC (its fork servers,
:mod:`dprisk.runtime.fork_server_start`), in ``dprisk reproduce`` (the docstrings) and in the
test processes (``tests/process_costs.py``, the placeholders); not on ``import dprisk`` (a
user's process is the user's).

The collector's share of imports: :mod:`dprisk.runtime.collector`.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import linecache
import sys

__all__ = ["DocstringKept", "lazy_loader_reads_one_frame", "library_docstrings_left_out",
           "matplotlib_skips_property_docs", "scipy_skips_capability_notes"]


def lazy_loader_reads_one_frame() -> None:
    """Have ``lazy_loader`` make a missing module's placeholder from its caller's frame alone.

    ``lazy_loader.load`` reads the caller's frame (``inspect.getframeinfo`` without context,
    the source line from ``linecache``), not ``inspect.stack()``: the same file, line,
    function and source line, which the placeholder shows in the error it raises when used.
    Any other call (a module that is there, ``require``, ``error_on_import``, a submodule)
    goes to ``lazy_loader`` as before; without ``lazy_loader`` (or its placeholder class)
    nothing changes. Calling it again changes
    nothing (the wrapper says ``reads_one_frame``).
    """
    try:
        import lazy_loader
    except ImportError:
        return
    load = lazy_loader.load
    placeholder = getattr(lazy_loader, "DelayedImportErrorModule", None)
    if placeholder is None or getattr(load, "reads_one_frame", False):
        return

    @functools.wraps(load)
    def one_frame_load(fullname, *, require=None, error_on_import=False,
                       suppress_warning=False):
        if require is None and not error_on_import and "." not in fullname \
                and fullname not in sys.modules and importlib.util.find_spec(fullname) is None:
            frame = sys._getframe(1)
            caller = inspect.getframeinfo(frame, context=0)
            line = linecache.getline(caller.filename, caller.lineno, frame.f_globals)
            return placeholder({"filename": caller.filename, "lineno": caller.lineno,
                                "function": caller.function,
                                "code_context": [line] if line else None},
                               "DelayedImportErrorModule",
                               message=f"No module named '{fullname}'")
        return load(fullname, require=require, error_on_import=error_on_import,
                    suppress_warning=suppress_warning)

    one_frame_load.reads_one_frame = True
    lazy_loader.load = one_frame_load



class DocstringKept:
    """Stand-in for SciPy's ``FunctionDoc`` within ``xp_capabilities``: the docstring unparsed.

    ``str(DocstringKept(f))`` is an empty signature line, a newline and ``f``'s docstring as
    written; its sections are throwaway lists, so the note the decorator appends to
    ``doc["Notes"]`` goes nowhere.
    """

    def __init__(self, func):
        self.doc = getattr(func, "__doc__", None) or ""

    def __getitem__(self, section: str) -> list:
        return []

    def __str__(self) -> str:
        return "\n" + self.doc


def scipy_skips_capability_notes() -> None:
    """SciPy's functions keep their docstrings as written: no Array API note parsed in.

    SciPy (1.15 on) decorates its functions with ``xp_capabilities``, which records the
    function's Array API support in a table (still recorded) and rewrites its docstring:
    parses it (``FunctionDoc``), appends a note on that support and prints it again, about
    1 ms a function, 639 functions as the report's fork server imports ``scipy.stats`` and
    ``scipy.signal`` (0.45-0.7 s of CPU), 97 with ``scipy.special`` alone. Here the
    decorator's ``FunctionDoc`` and note are stand-ins (:class:`DocstringKept`): each function
    keeps the docstring it was written with (leading whitespace stripped), without the note;
    its code is SciPy's. Applies to the functions SciPy decorates after the call.

    The same stand-in serves SciPy's two decorators in ``scipy._lib._util`` that parse and
    reprint the docstrings they wrap: ``_apply_over_batch`` (a note on batching appended to
    the extended summary; 59-63 functions as ``scipy.linalg`` is imported, 0.15-0.2 s of CPU)
    and ``_transition_to_rng`` (the ``rng`` parameter's text rewritten): with it each keeps
    its function's docstring as written.
    """
    try:
        array_api = importlib.import_module("scipy._lib._array_api")
        util = importlib.import_module("scipy._lib._util")
    except ImportError:
        return
    if not all(hasattr(array_api, name) for name in ("FunctionDoc", "_make_capabilities_note",
                                                      "xp_capabilities")):
        return  # a SciPy that makes its docstrings otherwise: left alone
    array_api.FunctionDoc = DocstringKept
    array_api._make_capabilities_note = lambda *args, **kwargs: ""
    if hasattr(util, "FunctionDoc"):
        util.FunctionDoc = DocstringKept


def matplotlib_skips_property_docs() -> None:
    """Matplotlib's artist classes get no property table in ``set``'s docstring at import.

    Matplotlib gives each ``Artist`` subclass, as it is defined, its own ``set`` method with
    a signature listing every property and a docstring tabulating them
    (``Artist._update_set_signature_and_docstring``, the table from ``kwdoc``: every setter's
    docstring parsed), and fills the ``%(Line2D:kwdoc)s`` of its functions' docstrings with
    the same tables: 0.2-0.35 s of CPU in each process that imports its figures (104
    classes). Here each such ``set`` is the plain one (``Artist.set`` with ``**kwargs``,
    flagged as made for its class, as matplotlib's own), without signature or table, and a
    ``:kwdoc`` placeholder is filled with an empty string (an unknown class's still raises
    ``KeyError``). What ``set`` accepts and does is unchanged. Applies to the classes and
    docstrings defined after the call.
    """
    try:
        from matplotlib import _api, _docstring, artist
    except ImportError:
        return
    loader = getattr(_docstring, "_ArtistKwdocLoader", None)
    if loader is None or not hasattr(artist.Artist, "_update_set_signature_and_docstring"):
        return  # a matplotlib that makes its docstrings otherwise: left alone

    def set_flagged(cls):
        cls.set._autogenerated_signature = True  # as matplotlib's: its subclasses get their own

    def empty_table(self, key):
        if not key.endswith(":kwdoc"):
            raise KeyError(key)
        name = key[:-len(":kwdoc")]
        if sum(cls.__name__ == name for cls in _api.recursive_subclasses(artist.Artist)) != 1:
            raise KeyError(key)
        return self.setdefault(key, "")

    artist.Artist._update_set_signature_and_docstring = classmethod(set_flagged)
    loader.__missing__ = empty_table


def library_docstrings_left_out() -> None:
    """:func:`scipy_skips_capability_notes` and :func:`matplotlib_skips_property_docs`.

    For a process of dprisk's own that imports SciPy and matplotlib's figures afterwards and
    never shows their help (the fork servers, :mod:`dprisk.runtime.fork_server_start`, and
    ``dprisk reproduce``), not on ``import dprisk``. Every number and figure is the same:
    only the libraries' docstrings (and ``set``'s signature) are left as written.
    """
    scipy_skips_capability_notes()
    matplotlib_skips_property_docs()
