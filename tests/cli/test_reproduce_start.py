"""``dprisk reproduce`` starts the report's fork server first thing, and only with workers.

The server's imports (seconds) then run on the other core while the command imports the
report; ``--workers 1`` starts none; an error stops it. The studies here are a stub (the
real ones take minutes): the server's start is recorded, not made, except in the fresh
interpreter of the last test, which stops at the start.
"""

import gc
import json
import subprocess
import sys
from multiprocessing import forkserver

import numpy as np
import pytest
import xarray as xr

from dprisk.cli import stopping
from dprisk.cli.commands import reproduce
from dprisk.cli.main import main
from dprisk.validation.paper.records import StudyResult
from dprisk.validation.report import build, fork_server
from dprisk.validation.report.fork_server import report_preload, server_preload


def _stub_study(*, paper_scale):
    record = {"id": "stub/x", "source": "Table 0", "published": 0.5, "computed": 0.5,
              "mcse": None, "status": "match", "explanation": ""}
    return StudyResult(name="stub", title="Stub study", records=[record],
                       datasets={"table": xr.Dataset({"v": ("x", np.arange(3.0))})},
                       figures={})


def _failing_study(*, paper_scale):
    raise RuntimeError("boom in the stub")


@pytest.fixture
def starts(monkeypatch, tmp_path):
    """The fork server's starts (the preload each asked for), recorded instead of made, with
    the report's module taken as not yet imported (as in a fresh ``dprisk`` process)."""
    made = []

    def record_start():
        made.append(list(forkserver._forkserver._preload_modules))  # multiprocessing's one

    monkeypatch.setattr(fork_server, "start_fork_server_without_stderr", record_start)
    monkeypatch.setattr(fork_server, "fork_server_pid", lambda: None)  # none running
    monkeypatch.setattr(reproduce, "REPORT_MODULE", "a.module.not.imported")
    monkeypatch.setattr(build, "STUDIES", [("stub", _stub_study)])
    monkeypatch.chdir(tmp_path)
    return made


def test_workers_start_the_server_with_the_pools_preload(starts, capsys):
    assert main(["reproduce", "--out", "report", "--workers", "2", "--quiet", "--json"]) == 0
    assert starts == [server_preload(report_preload())]
    assert json.loads(capsys.readouterr().out)["n_records"] == 1


def test_the_summary_line_counts_checks_apart_from_published_numbers(starts, monkeypatch,
                                                                     capsys):
    # a record without a published number is a check of the suite, not a number compared
    def study(*, paper_scale):
        result = _stub_study(paper_scale=paper_scale)
        result.records.append({**result.records[0], "id": "stub/check", "published": None})
        return result

    monkeypatch.setattr(build, "STUDIES", [("stub", study)])
    assert main(["reproduce", "--out", "report", "--workers", "1", "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "  1 published numbers compared: match 1; 1 checks of the suite: match 1"


def test_one_worker_starts_none(starts, capsys):
    assert main(["reproduce", "--out", "report", "--workers", "1", "--quiet", "--json"]) == 0
    assert starts == []


def test_with_the_report_imported_already_the_pool_starts_it_as_before(starts, monkeypatch,
                                                                       capsys):
    monkeypatch.setattr(reproduce, "REPORT_MODULE", build.__name__)  # loaded in this process
    assert main(["reproduce", "--out", "report", "--workers", "2", "--quiet", "--json"]) == 0
    assert starts == []


def test_refused_out_starts_none(starts, tmp_path, capsys):
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "mine.txt").write_text("the user's")
    assert main(["reproduce", "--out", "report", "--workers", "2", "--quiet"]) == 2
    assert starts == []


def test_a_failure_stops_the_server_it_started(starts, monkeypatch, tmp_path, capsys):
    stops = []
    monkeypatch.setattr(fork_server, "stop_fork_server", lambda: stops.append(1))
    monkeypatch.setattr(build, "STUDIES", [("bad", _failing_study)])
    assert main(["reproduce", "--out", "report", "--workers", "2", "--quiet"]) == 1
    assert "boom in the stub" in capsys.readouterr().err
    assert len(starts) == 1 and stops == [1]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written, no lock left


def test_a_written_report_has_the_shutdown_skip_its_collections_once(starts, monkeypatch,
                                                                    capsys):
    """The interpreter's last collections would walk the whole heap (0.5-0.7 s of CPU after
    the report's last line); gc.freeze at exit, registered once, has them skip it."""
    registered = []
    monkeypatch.setattr(stopping, "_FREEZE_AT_EXIT", [])
    monkeypatch.setattr(stopping.atexit, "register", registered.append)
    monkeypatch.setattr(build, "STUDIES", [("bad", _failing_study)])
    assert main(["reproduce", "--out", "report", "--workers", "1", "--quiet"]) == 1
    assert gc.freeze not in registered  # not for a failed run (others may register: tqdm)
    monkeypatch.setattr(build, "STUDIES", [("stub", _stub_study)])
    for _ in range(2):
        assert main(["reproduce", "--out", "report", "--workers", "1", "--quiet"]) == 0
    assert registered.count(gc.freeze) == 1


#: A fresh ``dprisk reproduce`` whose fork server start is replaced by a record of what the
#: process had imported by then, and a failure (so that no study runs).
_FRESH = """
import json, sys, time
from multiprocessing import forkserver

def record():
    loaded = {name for name in ("xarray", "matplotlib", "pandas", "dprisk.validation.report.build")
              if name in sys.modules}
    print("LOADED " + json.dumps(sorted(loaded)))
    raise RuntimeError("stopped at the fork server's start")

forkserver.ensure_running = record
from dprisk.cli.main import main
sys.exit(main(["reproduce", "--out", sys.argv[1], "--quiet"]))
"""


def test_a_fresh_command_starts_the_server_before_importing_the_report(tmp_path):
    done = subprocess.run([sys.executable, "-c", _FRESH, str(tmp_path / "report")],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "stopped at the fork server's start" in done.stderr
    (line,) = [text for text in done.stdout.splitlines() if text.startswith("LOADED ")]
    assert json.loads(line[len("LOADED "):]) == []  # none of the report's libraries yet
    assert list(tmp_path.iterdir()) == []  # nothing written
