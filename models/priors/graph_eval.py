r"""Evaluate a user prior's PyTensor log-weight graph with NumPy, without compiling it.

A prior written once as a PyTensor expression (:class:`dprisk.models.priors.library.UserPrior`)
is used by the exact and Gibbs methods through a numpy function of ``(k2, k1)``. Compiling
that graph with :func:`pytensor.function` (numba linker, full rewrites) cost about 9 s per
process, for a function the exact path calls a handful of times. Here the graph is walked
instead, in topological order, and each node is computed by its Op's own ``perform`` (the
NumPy/SciPy implementation PyTensor's Python linker runs), with no rewrites:

.. math::

    v(\text{node}) = \text{op.perform}(v(\text{input}_1), \dots, v(\text{input}_n)),

inputs bound to ``k2`` and ``k1``, constants to their data, shared variables to their value.
Building costs nothing beyond the graph itself; each evaluation costs one ``perform`` per node
(about a millisecond for a 4096-value probe of a negative-binomial prior). Results agree with
the compiled function to rounding (relative differences around 1e-14: the rewrites may reorder
an operation). A graph with an Op that has no ``perform`` falls back to
``pytensor.function(mode="FAST_COMPILE")``.

SciPy's special functions without ``import scipy.special``. An elementwise node whose Op names
``scipy.special.NAME`` as its NumPy function (``gammaln``, ``psi``, ``erf``, ...: the
negative-binomial example uses ``gammaln``) would import ``scipy.special`` when prepared, and
that import (0.4-0.5 s of CPU: it pulls in ``scipy.linalg`` and the array-API layer) was half
of a prior file's first use. While ``scipy.special`` is not imported, such a node is computed
by the same ufunc taken from SciPy's compiled module ``scipy/special/_special_ufuncs``, loaded
on its own (:func:`special_ufunc`, about 0.04 s; ``scipy.special.NAME`` is that module's
``NAME``, or with SciPy's array-API dispatch calls it for NumPy input, so the values are the
same bits: tests/models/priors/test_graph_eval.py compares the bytes), exactly as
``Elemwise.perform`` calls it (the same
``sig`` for integer inputs, errors ignored, the result cast to the output's dtype). Any name
the module lacks, and any failure to load it, takes the ordinary path.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

__all__ = ["graph_function", "special_ufunc"]

#: The NumPy-function prefix of the Ops computed by :func:`special_ufunc`.
_SCIPY_SPECIAL = "scipy.special."
#: SciPy's compiled ufunc module, loaded on its own (``False``: could not be loaded).
_LOADED: dict = {}


def graph_function(inputs: list, outputs: list) -> Callable[..., list[np.ndarray]]:
    """A numpy function computing the PyTensor variables ``outputs`` from ``inputs``.

    Parameters
    ----------
    inputs : list of TensorVariable
        The graph's free inputs, in the order the returned function takes their values.
    outputs : list of TensorVariable
        The variables to compute.

    Returns
    -------
    callable
        ``f(*values) -> list of ndarray``: the graph evaluated by each node's ``perform`` (module
        docstring), or a FAST_COMPILE function if some Op cannot be performed in Python.
    """
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import io_toposort

    outputs = list(outputs)
    nodes = io_toposort(list(inputs), outputs)
    performs = []
    for node in nodes:
        perform = _special_perform(node)
        if perform is None:
            node.op.prepare_node(node, None, None, "py")
            perform = node.op.perform
        performs.append(perform)
    fixed = {}
    for node in nodes:
        for var in node.inputs:
            if isinstance(var, Constant):
                fixed[var] = var.data
            elif isinstance(var, SharedVariable):
                fixed[var] = var.get_value(borrow=True)
    for var in outputs:
        if isinstance(var, Constant):
            fixed[var] = var.data
    plan = [(perform, node, node.inputs, node.outputs)
            for perform, node in zip(performs, nodes, strict=True)]

    fallback: list = []

    def evaluate(*values) -> list[np.ndarray]:
        if not fallback:
            try:
                return walk(values)
            except NotImplementedError:  # an Op with no Python implementation
                fallback.append(_compiled(inputs, outputs))
        return [np.asarray(value) for value in fallback[0](*values)]

    def walk(values) -> list[np.ndarray]:
        known = dict(fixed)
        known.update(zip(inputs, values, strict=True))
        for perform, node, node_inputs, node_outputs in plan:
            storage = [[None] for _ in node_outputs]
            perform(node, [known[var] for var in node_inputs], storage)
            known.update(zip(node_outputs, (cell[0] for cell in storage), strict=True))
        return [np.asarray(known[var]) for var in outputs]

    return evaluate


def _compiled(inputs: list, outputs: list) -> Callable[..., list]:
    """``pytensor.function(inputs, outputs, mode="FAST_COMPILE")`` (the Python linker)."""
    import pytensor

    return pytensor.function(list(inputs), list(outputs), mode="FAST_COMPILE")


def special_ufunc(name: str):
    """SciPy's ufunc ``scipy.special.<name>`` without importing ``scipy.special``, or ``None``.

    Taken from the compiled module ``scipy/special/_special_ufuncs`` loaded by itself (not
    entered in ``sys.modules``; a later ``import scipy.special`` loads its own copy of the same
    code). ``None`` when ``scipy.special`` is already imported (then the ordinary path costs
    nothing), when the module lacks ``name`` or cannot be loaded.
    """
    if "scipy.special" in sys.modules:
        return None
    module = _LOADED.get("module")
    if module is None:
        module = _LOADED["module"] = _load_special_ufuncs() or False
    ufunc = getattr(module, name, None) if module else None
    return ufunc if isinstance(ufunc, np.ufunc) else None


def _load_special_ufuncs():
    """The module ``scipy.special._special_ufuncs`` loaded alone, or ``None``."""
    import importlib.machinery
    import importlib.util

    try:
        import scipy  # the package itself is light; scipy.special is not

        folder = importlib.util.find_spec("scipy").submodule_search_locations[0] + "/special"
        finder = importlib.machinery.FileFinder(folder, (
            importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES))
        spec = finder.find_spec("scipy.special._special_ufuncs")
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        del scipy
        return module
    except Exception:  # any failure: the ordinary path (import scipy.special)
        return None


def _special_perform(node):
    """A ``perform`` for an elementwise ``scipy.special`` node via :func:`special_ufunc`.

    ``None`` unless the node is an ``Elemwise`` with one output, no in-place pattern, and a
    NumPy function ``scipy.special.NAME`` taking all its inputs that :func:`special_ufunc`
    provides. The call is ``Elemwise.perform``'s for a prepared node.
    """
    from pytensor.tensor.elemwise import Elemwise
    from pytensor.tensor.type import discrete_dtypes, float_dtypes

    op = node.op
    spec = getattr(op, "nfunc_spec", None) if isinstance(op, Elemwise) else None
    if (not spec or not spec[0].startswith(_SCIPY_SPECIAL) or spec[1] != len(node.inputs)
            or spec[2] != 1 or len(node.outputs) != 1 or op.inplace_pattern
            or len(node.inputs) + 1 > 32):
        return None
    ufunc = special_ufunc(spec[0][len(_SCIPY_SPECIAL):])
    if ufunc is None:
        return None
    out_dtype = node.outputs[0].dtype
    kwargs = {}
    if out_dtype in float_dtypes and node.inputs[0].dtype in discrete_dtypes:
        char = np.dtype(out_dtype).char
        kwargs["sig"] = char * len(node.inputs) + "->" + char  # as Elemwise.prepare_node

    def perform(node, inputs, output_storage):
        op._check_runtime_broadcast(node, inputs)
        with np.errstate(all="ignore"):
            value = ufunc(*inputs, **kwargs)
        value = np.asarray(value, dtype=out_dtype)
        output_storage[0][0] = value if value.flags.owndata else value.copy()

    return perform
