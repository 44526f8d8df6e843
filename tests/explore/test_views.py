"""Panel views without a browser: updates, stale results, bad input, sampling, notebooks."""

import asyncio
import json
import types

import numpy as np
import pytest
from deferred_modules import deferred_module

from dprisk.explore.jobs import SamplingJob
from dprisk.explore.notebook import live
from dprisk.inference.single_level import closed_form as sl
from dprisk.inference.two_level.exact import exact_posterior

# Panel and Param: imported by the first test that uses them
app = deferred_module("dprisk.explore.app")
param = deferred_module("param")
pn = deferred_module("panel")

TWO = {"rho1": 0.0992, "rho2": 0.2465, "d": 27, "p": 0.5, "known": 0, "prior": "improper"}
#: Gibbs draws in the sampling test; the MCSE of P[X1 = m+1 | D] is about 0.5 / sqrt(ESS).
DRAWS, CHAINS = 2000, 2


def test_control_change_updates_the_numbers():
    view = app.single_level_view()
    view.refresh()
    view.controls["rho1"].value = 0.25
    assert view.current.numbers["rho1"] == 0.25
    assert view.current.numbers["p_correct"] == sl.p_correct(0.25, 0.5)
    assert "p_correct" in view.numbers.object and "current: request #2" in view.status.object


def test_bad_input_shows_a_message_and_no_current_result():
    view = app.single_level_view()
    view.refresh()
    view.controls["p"].value = "abc"
    assert view.message.visible and "p must be a number" in view.message.object
    assert view.current is None and view.numbers.object == ""
    view.controls["p"].value = "1/3"
    assert not view.message.visible
    assert view.current.numbers["p_correct"] == sl.p_correct(0.099, 1 / 3)


def test_downloads_are_disabled_without_a_current_result():
    """After bad input the view says "no current result" and clears its numbers; its download
    buttons are then disabled (before: enabled, and a click gave an empty 0-byte file), and
    enabled again with the next accepted input, whose numbers the JSON download holds."""
    view = app.single_level_view()
    view.refresh()
    downloads = view.layout.select(pn.widgets.FileDownload)  # JSON, netCDF, PNG
    assert [button.disabled for button in downloads] == [False, False, False]
    view.controls["p"].value = "abc"
    assert "no current result" in view.status.object
    assert [button.disabled for button in downloads] == [True, True, True]
    with pytest.raises(ValueError, match="no current result"):  # a click that raced it
        downloads[0].callback()
    view.controls["p"].value = "1/3"
    assert [button.disabled for button in downloads] == [False, False, False]
    downloaded = json.loads(downloads[0].callback().getvalue())  # floats: exact in JSON
    assert downloaded["p"] == 1 / 3 and downloaded["p_correct"] == sl.p_correct(0.099, 1 / 3)


def test_broken_prior_file_is_a_message(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('no')\n")
    view = app.two_level_view()
    view.refresh()
    view.controls["prior"].value = f"{broken}:prior"
    assert view.message.visible and "broken.py" in view.message.object


def test_stale_answer_is_dropped():
    view = app.single_level_view()
    view.refresh()
    old = view.sequencer.next()  # a request...
    newer = view.sequencer.next()  # ...overtaken by a newer one
    view._finish(old, *view._attempt({**view.values(), "rho1": 1.5}))
    assert view.current.numbers["rho1"] != 1.5  # the old answer is not shown
    view._finish(newer, *view._attempt({**view.values(), "rho1": 0.5}))
    assert view.current.numbers["rho1"] == 0.5


def test_slow_view_computes_off_the_event_loop():
    view = app.accounting_view()
    view.refresh()
    with param.discard_events(view.controls["rho"]):  # the server would run the watcher
        view.controls["rho"].value = "1"
    asyncio.run(view.refresh_off_loop())
    assert view.current.numbers["rho"] == 1.0 and not view.busy.value


def test_sampling_job_agrees_with_exact_and_can_be_cancelled():
    job = SamplingJob((2, 1, -1), TWO, draws=DRAWS, chains=CHAINS, tune=100,
                      random_seed=3).start()
    job.join(120)
    assert job.status == "done" and job.progress == 1.0
    exact = exact_posterior(2, 1, -1, **TWO).prob_x1
    report = job.report
    # 5 MCSE: a false failure about once in 1.7 million runs
    assert abs(report.posterior - exact) < 5 * report.posterior_mcse
    assert set(job.summary.index) >= {"X1", "X2"}
    assert job.figures["trace"].startswith(b"\x89PNG") and job.figures["rank"]
    assert not job.plot_dir.exists()  # the temporary folder is removed when the job ends

    cancelled = SamplingJob((2, 1, -1), TWO, draws=DRAWS, chains=50, random_seed=3)
    cancelled.cancel()
    cancelled.start().join(60)
    assert cancelled.status == "cancelled" and cancelled.summary is None


def test_sampling_job_refuses_one_chain():
    with pytest.raises(ValueError, match="chains"):
        SamplingJob((2, 1, -1), TWO, chains=1)


def test_notebook_live_controls():
    calls = []

    def view(rho1, p, priors):
        calls.append((rho1, p, priors))
        return {"P[correct]": sl.p_correct(rho1, p)}, f"priors {priors}"

    panel = live(view, rho1=0.5, p=0.2, priors=[0.5, 0.1], ranges={"rho1": (0.01, 2.0)})
    assert calls == [(0.5, 0.2, [0.5, 0.1])]  # computed at once, at the parameters' values
    panel.controls["rho1"].value = 1.0
    assert panel.last[0]["P[correct]"] == sl.p_correct(1.0, 0.2)
    panel.controls["priors"].value = "[0.5, oops"
    assert panel.last is None and "priors" in panel.output.objects[0].object
    assert np.isfinite(calls[-1][0])


@pytest.mark.parametrize("make", ["single_level_view", "budget_view"])
def test_overflowing_number_is_one_line_and_no_current_numbers(make):
    """Finding "9...9/1 in a number box": the fast view kept its stale numbers as current, the
    slow one said "computing request #2" for ever. Now one line, no current numbers."""
    view = getattr(app, make)()
    view.refresh()
    with param.discard_events(view.controls["p"]):  # the server would run the watcher
        view.controls["p"].value = "9" * 400 + "/1"
    if view.slow:
        asyncio.run(view.refresh_off_loop())
    else:
        view._refresh_sync()
    assert view.message.visible and "p must be a number" in view.message.object
    assert view.current is None and not view.busy.value
    assert "request #2: bad input" in view.status.object


def test_a_failing_computation_ends_the_request_and_is_logged(caplog):
    """Any exception of a computation ends the request with one line (never a stuck
    "computing"); a programming error's traceback goes to the server's log."""
    view = app.accounting_view()
    view.refresh()

    def broken(**_values):
        raise OverflowError("a programming error")

    view.compute = broken
    with caplog.at_level("ERROR", logger="dprisk.explore.views"):
        asyncio.run(view.refresh_off_loop())
    assert view.current is None and not view.busy.value
    assert "OverflowError" in view.message.object and "bad input" in view.status.object
    assert "a programming error" not in view.message.object
    assert any(record.exc_info and "a programming error" in str(record.exc_info[1])
               for record in caplog.records)
    view.size = broken  # the sizing too
    asyncio.run(view.refresh_off_loop())
    assert "OverflowError" in view.message.object and not view.busy.value


def test_sampling_with_a_model_file_prior():
    """Finding "check by sampling always fails with a model-file prior" (PicklingError: the
    file's module has a made-up name the worker cannot import): the worker reads the prior's
    text again under the server's policy, and the check runs."""
    from dprisk.explore.inputs import PriorPolicy
    from dprisk.explore.sampling_view import SamplingPanel

    view = app.two_level_view()
    with param.discard_events(view.controls["prior"]):
        view.controls["prior"].value = "models/examples/geometric_prior.py:prior"
    panel = SamplingPanel(PriorPolicy())
    panel.attach(view)
    panel.draws.value, panel.chains.value, panel.seed.value = "300", "2", "5"
    release, params, options = panel._inputs()
    job = SamplingJob(release, params, tune=50, **options).start()
    job.join(180)
    assert job.status == "done", job.error
    assert 0 <= job.report.posterior <= 1


def test_a_control_change_cancels_the_sampling_check_and_hides_its_result(monkeypatch):
    """Finding "the sampling check kept its old result as current": rho1 changed from
    census:block to 0.5 while a check ran (the view's exact posterior 0.5033 -> 0.7776), and
    the finished check was shown as current, "sampling #1 at D = (2, 1, -1): P[X1 = m+1 | D]
    = 0.5250", its summary and plots beside the new exact answer. Now the change cancels the
    job and the panel says its check was for the previous input."""
    from dprisk.explore.sampling_view import SamplingPanel

    view = app.two_level_view()
    view.refresh()
    panel = SamplingPanel()
    panel.attach(view)
    panel.draws.value, panel.chains.value, panel.seed.value = "300", "2", "5"
    # no server to poll the job: _check is called by hand below
    monkeypatch.setattr(app.pn.state, "add_periodic_callback",
                        lambda callback, period: types.SimpleNamespace(stop=lambda: None))
    panel._start()
    view.controls["rho1"].value = "0.5"
    assert view.current.numbers["rho1"] == 0.5
    panel.job.join(180)
    panel._check()
    assert panel.job.status == "cancelled"
    assert "dprisk-current" not in panel.status.object
    assert "for the previous input" in panel.status.object
    assert not (panel.summary.visible or panel.trace.visible or panel.rank.visible)


def test_a_job_that_cannot_start_says_so_without_memory_addresses():
    """A prior object that cannot be sent to the worker fails the job with one line that
    names no memory address (``<function f at 0x...>``)."""
    from dprisk.models.priors.library import TruncatedUniform

    def logp():  # as a model file's function: its module cannot be imported elsewhere
        return 0.0

    logp.__module__, logp.__qualname__ = "_dprisk_prior_no_such_module", "logp"
    prior = TruncatedUniform(5)
    prior.unpicklable = logp
    job = SamplingJob((2, 1, -1), {**TWO, "prior": prior}, draws=10, chains=2, tune=0,
                      random_seed=1).start()
    job.join(60)
    assert job.status == "failed" and "pickle <function logp" in job.error
    assert "0x" not in job.error and "\n" not in job.error


def test_accounting_at_the_edges_of_its_range():
    """Finding "the accounting view refused rho at the edges": its curve (rho / 100 to
    rho x 100) left the conversions' range and refused a rho the command line converts
    (1e5), or quoted a point of the curve instead of the rho typed (1e100, 1e-300). Now the
    rho is converted as the command line converts it, and the curve is drawn where it can be."""
    from dprisk.explore import results
    from dprisk.inference.privacy.accounting import epsilon_bun_steinke, epsilon_cks

    edge = results.accounting_result(rho=1e5, delta=1e-10)
    assert edge.numbers["epsilon_cks"] == epsilon_cks(1e5, 1e-10)
    assert edge.numbers["epsilon_bun_steinke"] == epsilon_bun_steinke(1e5, 1e-10)
    cks = edge.dataset["epsilon_cks"].values
    assert np.isnan(cks).any() and np.isfinite(cks).any()  # beyond the range: not drawn
    assert edge.to_png()
    for rho, shown in ((1e100, "rho = 1e+100"), (1e-300, "rho = 1e-300")):
        with pytest.raises(ValueError) as err:
            results.accounting_result(rho=rho, delta=1e-10)
        assert shown in str(err.value) and "\n" not in str(err.value)
