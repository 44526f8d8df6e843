"""Every number of ``results.nc`` says what it is: its ``units`` and ``long_name``, as read back.

One case per registered study (:func:`dprisk.validation.registry.registered`), each run by
:func:`~dprisk.validation.report.build.write_report` alone, so a study added later is checked
without any other edit. The report's ``results.nc`` had no units on 120 of its 381 numbers
(the sbc runs, the cross-check, the Tables 6-8 MCSEs, the supplement's rho and counters, the
Monte Carlo runs' seeds, the Census allocation). The costlier cases are left to ``make bench``
(``tests/conftest.py`` ``SLOW_CASES``: each study's own test checks its datasets the same way).
"""

import pytest
import xarray as xr
from study_checks import numbers_without_units

from dprisk.validation.registry import registered
from dprisk.validation.report import build as report
from dprisk.validation.report.build import write_report


def _case(study) -> str:
    return study.module.removeprefix("dprisk.validation.")


@pytest.mark.parametrize("study", registered(), ids=_case)
def test_every_number_of_results_nc_has_units_and_a_long_name(study, tmp_path, monkeypatch):
    monkeypatch.setattr(report, "STUDIES", [(study.title, study)])
    write_report(tmp_path / "report", progress=False)
    with xr.open_datatree(tmp_path / "report" / "results.nc") as tree:
        groups = {node.path: node.to_dataset(inherit=False) for node in tree.subtree
                  if node.has_data}
    assert groups
    assert not numbers_without_units(groups)
    assert not numbers_without_units(groups, attribute="long_name")
