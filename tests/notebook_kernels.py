"""What the notebook tests' kernels share: the Python warning a cell may not print, the Param
setting run in each kernel before Panel is imported and the libraries' docstrings left as
written (``tests/notebooks/``)."""

import re

__all__ = ["LIBRARY_DOCSTRINGS_AS_WRITTEN", "PARAM_DOCSTRINGS_AS_WRITTEN", "WARNING_LINE"]

#: Lines of a Python warning as printed on stderr, e.g. "...: RuntimeWarning: ...".
WARNING_LINE = re.compile(r"\b\w*Warning: ")

#: Kernel source run before Panel is imported: Param (Panel's base) keeps each class's
#: docstring as written. In IPython it appends a table of the class's parameters to the
#: docstring of each ``Parameterized`` class it creates
#: (``param.parameterized.docstring_describe_params``), for ``help()``: about 0.4 s of CPU in
#: each kernel importing Panel (about 7 % of papermill's kernel when it built the live
#: controls), read by nothing here.
PARAM_DOCSTRINGS_AS_WRITTEN = """\
import param.parameterized as _parameterized
_parameterized.docstring_describe_params = False
del _parameterized
"""

#: Kernel source run before SciPy and matplotlib are imported: SciPy's functions get no Array
#: API note parsed into their docstrings and matplotlib's artist classes no property table in
#: ``set``'s (:func:`dprisk.runtime.import_costs.library_docstrings_left_out`, as in the test
#: processes, the fork servers and ``dprisk reproduce``). Every number and figure is the same;
#: nothing in the kernels reads those docstrings. The notebooks' kernels import SciPy (ArviZ,
#: the closed forms) and matplotlib's figures: the notes and tables cost about 1 s of CPU in
#: a process that imports SciPy, matplotlib, PyMC and ArviZ.
LIBRARY_DOCSTRINGS_AS_WRITTEN = """\
from dprisk.runtime.import_costs import library_docstrings_left_out as _left_out
_left_out()
del _left_out
"""
