"""What the notebook tests' kernels share: the Python warning a cell may not print and the
Param setting run in each kernel before Panel is imported (``tests/notebooks/``)."""

import re

__all__ = ["PARAM_DOCSTRINGS_AS_WRITTEN", "WARNING_LINE"]

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
