"""Imported by the report's fork server: every registered study's module, once.

The last module of the early fork server's preload
(:func:`dprisk.validation.report.fork_server.report_preload`): importing it imports each
study module of :data:`dprisk.validation.report.build.STUDIES` in the fork server, which the
workers then inherit, as the pool's own preload names them one by one
(:func:`dprisk.validation.report.build.write_report`). The registry's reading of the studies'
source (``ast.parse`` of each study module: about 0.1 s of CPU) then happens in the fork
server, where importing the report does it anyway, not in ``dprisk reproduce`` before the
server can start. A study module that fails to import is skipped here, as the fork server
skips a preload module that does; the study imports it again when it runs, and fails with
its own error there.
"""

from __future__ import annotations

import contextlib
import importlib

from dprisk.validation.report.build import STUDIES

__all__ = ["IMPORTED"]

#: The study modules imported (those that failed are not listed).
IMPORTED: list[str] = []

for _title, _study in STUDIES:
    _module = getattr(_study, "module", None)
    if _module is not None and _module not in IMPORTED:
        with contextlib.suppress(Exception):
            importlib.import_module(_module)
            IMPORTED.append(_module)
