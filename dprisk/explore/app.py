"""The ``dprisk explore`` app: five what-if views and a sampling check, served by Panel.

Why Panel (HoloViz) and not ipywidgets + Voilà: the same objects are live controls in a
notebook (JupyterLab, VS Code, through Panel's own extension) *and* a standalone web app
served by one Bokeh/Tornado process (``pn.serve``), with no Jupyter kernel started per
visitor (Voilà starts one per page load, seconds each, and needs a Jupyter server); Panel ships
download buttons, progress indicators, periodic callbacks and async callbacks (off-loop work)
that this app needs, and it installs from PyPI as pure-Python wheels (panel, bokeh). The
views are plain :class:`dprisk.explore.views.WhatIfView` objects that call
:mod:`dprisk.explore.results`, which calls the public functions of :mod:`dprisk.inference`.

Views: single level, two levels (with "check by sampling"), P[correct] against rho, the
budget for a risk target, accounting. :func:`build_app` returns the page for one session;
:func:`serve` serves it.
"""

from __future__ import annotations

import gc
import numbers
import threading

import panel as pn

from dprisk.explore import limits, results
from dprisk.explore.inputs import (
    PriorPolicy,
    is_loopback,
    prior_policy,
    read_count,
    read_number,
    read_probability,
    read_rho,
    read_scenario,
    read_slider,
)
from dprisk.explore.plots import CurvePlot, TwoLevelPlot
from dprisk.explore.sampling_view import SamplingPanel
from dprisk.explore.views import WhatIfView, set_max_jobs

__all__ = ["DEFAULT_PORT", "Choice", "build_app", "serve", "single_level_view",
           "two_level_view"]

#: Bokeh's usual port.
DEFAULT_PORT = 5006
#: Start of the rho1 slider (the 2020 Census block rho is about 0.0992).
RHO1_START = 0.099


def _text(label: str, value: str) -> pn.widgets.TextInput:
    return pn.widgets.TextInput(name=label, value=value, width=260)


class Choice(pn.widgets.Select):
    """A list of options that keeps its value when a client sends one not among them.

    Only a hand-written websocket client sends one (the page offers the options); Panel's
    ``Select`` raised ValueError for it (``'../x.py' not in list``), which Panel and Bokeh
    each logged with its traceback: about 45 lines of the server's log per message.
    """

    def _process_property_change(self, props: dict) -> dict:
        value = props.get("value")
        if value not in (None, "") and value not in self.labels \
                and value not in self.unicode_values:
            props = {key: item for key, item in props.items() if key != "value"}
        return super()._process_property_change(props)


#: What the prior box accepts, by what the server allows (:class:`PriorPolicy`).
PRIOR_LABELS = {
    "typed": "prior of X2 | X1 (improper, truncated:U, point:K, FILE.py:NAME)",
    "dir": "prior of X2 | X1 (improper, truncated:U, point:K; NAME with a model file)",
    "none": "prior of X2 | X1 (improper, truncated:U, point:K)",
}
#: The model-file list's entry for "no file: a built-in prior".
NO_FILE = "(none: a built-in prior)"


def _two_level_controls(policy: PriorPolicy) -> dict:
    kind = "typed" if policy.typed_files else "dir" if policy.prior_dir is not None else "none"
    controls = {"rho1": _text("rho1 (number, a/b or census:LEVEL)", "census:block"),
                "rho2": _text("rho2", "census:block-group"),
                "d": _text("d (other blocks)", "27"), "p": _text("p = P[X1 = m+1]", "1/2"),
                "m": _text("m (known others)", "0"),
                "prior": _text(PRIOR_LABELS[kind], "improper")}
    if policy.prior_dir is not None:  # chosen from a list, never typed
        controls["prior_file"] = Choice(
            name="model file (--prior-dir)", value="", width=260,
            options={NO_FILE: "", **{name: name for name in policy.files()}})
    return controls


def single_level_view() -> WhatIfView:
    """Posterior and P[correct] of the single-level adversary (rho1 slider, p, m, x1*)."""
    controls = {
        "rho1": pn.widgets.FloatSlider(name="rho1", start=0.001, end=2.0, step=0.001,
                                       value=RHO1_START, format="0.000", width=260),
        "p": _text("p = P[X1 = m+1]", "1/2"),
        "m": _text("m (known others)", "0"),
        "x1_star": _text("release x1*", "3"),
    }

    slider = controls["rho1"]

    def compute(rho1, p, m, x1_star):  # on the event loop: rho1 within the slider's range
        m = read_count(m, "m", minimum=0)
        return results.single_level_result(
            rho1=read_slider(rho1, "rho1", slider.start, slider.end),
            p=read_probability(p, "p"), m=m,
            x1_star=read_count(x1_star, "x1*"))

    return WhatIfView("single", "Single level", controls, compute, CurvePlot(
        "release x1*", "probability", vline="x1_star", hline="p", y_range=(0, 1.02)))


def two_level_view(policy: PriorPolicy | None = None) -> WhatIfView:
    """Exact posterior of X1, X2 for one release, the decision map, and sampling."""
    policy = policy or PriorPolicy()
    controls = {**_two_level_controls(policy), "x1_star": _text("release x1*", "2"),
                "x2_star": _text("release x2*", "1"), "y1_star": _text("release y1*", "-1")}

    def compute(x1_star, x2_star, y1_star, **scenario):
        return results.two_level_result(
            **read_scenario(scenario, policy), x1_star=read_count(x1_star, "x1*"),
            x2_star=read_count(x2_star, "x2*"), y1_star=read_count(y1_star, "y1*"))

    def size(rho1, rho2, d, **_others):
        limits.size_two_level(rho1=read_rho(rho1, "rho1"), rho2=read_rho(rho2, "rho2"),
                              d=read_count(d, "d", minimum=1))

    sampling = SamplingPanel(policy)
    view = WhatIfView("two", "Two levels", controls, compute, TwoLevelPlot(),
                      extra=[sampling.layout], slow=True, size=size)  # 2 s at rho = 1e-8
    sampling.attach(view)
    return view


def p_correct_view(policy: PriorPolicy | None = None) -> WhatIfView:
    """P[correct decision] against rho1, and with the block group at the truth x2."""
    policy = policy or PriorPolicy()
    controls = {**_two_level_controls(policy), "x2": _text("true block-group count x2", "1")}

    def compute(x2, **scenario):
        return results.p_correct_result(**read_scenario(scenario, policy),
                                        x2=read_count(x2, "x2"))

    def size(rho1, rho2, d, **_others):  # the grid depends on rho1, rho2, d only
        limits.size_p_correct(rho1=read_rho(rho1, "rho1"), rho2=read_rho(rho2, "rho2"),
                              d=read_count(d, "d", minimum=1))

    return WhatIfView("pcorrect", "P[correct] vs rho", controls, compute, CurvePlot(
        "rho1", "P[correct decision]", x_axis_type="log", vline="rho1",
        point=("rho1", "p_correct_two_level"), y_range=(0, 1.02)),
        slow=True, size=size)  # sized first: minutes at rho1 = 1e-7 within the CLI's limits


def budget_view() -> WhatIfView:
    """The largest rho meeting a risk target (worker thread)."""
    controls = {
        "measure": Choice(name="measure", value="p-correct", width=260,
                          options=["p-correct", "marginal-risk", "marginal-posterior"]),
        "target": _text("target", "0.6"), "p": _text("p", "1/2"), "m": _text("m", "0"),
    }

    def compute(measure, target, p, m):
        return results.budget_result(measure=measure, target=read_number(target, "target"),
                                     p=read_probability(p, "p"),
                                     m=read_count(m, "m", minimum=0))

    return WhatIfView("budget", "Budget for a risk target", controls, compute,
                      CurvePlot("rho", "risk measure", x_axis_type="log", vline="rho",
                                hline="target"), slow=True)


def accounting_view() -> WhatIfView:
    """(epsilon, delta) of rho-zCDP (worker thread: the CKS conversion takes ~0.1 s a point)."""
    controls = {"rho": _text("rho (zCDP; census:LEVEL for one level)", "2.56"),
                "delta": _text("delta", "1e-10")}

    def compute(rho, delta):
        return results.accounting_result(rho=read_rho(rho, "rho"),
                                         delta=read_probability(delta, "delta"))

    return WhatIfView("accounting", "Accounting", controls, compute,
                      CurvePlot("rho (zCDP)", "epsilon", x_axis_type="log", y_axis_type="log",
                                vline="rho"), slow=True)


#: The views of the app, in tab order.
VIEWS = (single_level_view, two_level_view, p_correct_view, budget_view, accounting_view)


def build_app(policy: PriorPolicy | None = None) -> pn.Column:
    """The page of one session: one tab per view, each computed at its defaults.

    ``policy`` says which priors the two-level views load (default: typed model files, as
    on a server listening on loopback only). In a served session the slow views compute in
    the views' pool (:meth:`WhatIfView.refresh_off_loop`, from a next-tick callback of the
    session), not on the event loop that builds the page (0.1 s of every page load at the
    defaults, measured 2026-11-30); elsewhere (the warm-up, a notebook, the tests) every view
    computes at once.
    """
    policy = policy or PriorPolicy()
    views = [make(policy) if make in (two_level_view, p_correct_view) else make()
             for make in VIEWS]
    doc = pn.state.curdoc
    served = doc is not None and doc.session_context is not None
    for view in views:
        if served and view.slow:
            doc.add_next_tick_callback(view.refresh_off_loop)
        else:
            view.refresh()
    tabs = pn.Tabs(*(view.layout for view in views), dynamic=False)
    header = pn.pane.Markdown(
        "## dprisk explore: what-ifs of discrete-Gaussian disclosure risk\n"
        "Change a control: exact answers update at once; slow ones say *computing*. "
        "Every rate and probability box accepts a fraction (1/864), count boxes whole "
        "numbers; rho boxes accept census:LEVEL.")
    return pn.Column(header, tabs)


def _start_sampling_workers() -> None:
    """:func:`dprisk.explore.jobs.start_workers`, ahead of the first sampling check.

    A failure here is left to the job, which reports it in the page.
    """
    from dprisk.explore.jobs import start_workers

    try:
        start_workers()
    except Exception:  # the job starts its worker again and shows the error in the page
        pass


#: The values of :func:`serve`'s ``auth``.
AUTH_MODES = ("auto", "token", "basic", "none")


def _check_serve_options(port, host, auth, max_jobs, page_loads) -> None:
    """The rules of ``dprisk explore``'s options for :func:`serve`'s own arguments."""
    def integer(value) -> bool:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)

    if not integer(port) or not 1 <= port <= 65535:
        raise ValueError(f"port must be an integer in 1..65535, got {port!r}")
    if not isinstance(host, str) or not host.strip():
        raise ValueError(f"host must be a host name or address, got {host!r}")
    if auth not in AUTH_MODES:
        raise ValueError(f"auth must be one of {', '.join(AUTH_MODES)}, got {auth!r}")
    if max_jobs is not None and (not integer(max_jobs) or max_jobs < 1):
        raise ValueError(f"max_jobs must be None or an integer >= 1, got {max_jobs!r}")
    if page_loads is not None and (not integer(page_loads) or page_loads < 0):
        raise ValueError(f"page_loads must be None or an integer >= 0 (0: no limit), got "
                         f"{page_loads!r}")


def serve(*, port: int = DEFAULT_PORT, host: str = "127.0.0.1", show: bool = True,
          prior_dir=None, allow_origin=(), auth: str = "auto", users: dict | None = None,
          max_jobs: int | None = None, page_loads: int | None = None) -> None:
    """Serve :func:`build_app` at ``http://host:port/`` until interrupted.

    Model files (:class:`PriorPolicy`): typed ``PATH.py:NAME`` only when ``host`` is
    loopback and no ``prior_dir`` is given; with ``prior_dir``, its ``.py`` files from a list.
    Who may connect (:mod:`dprisk.explore.access`): the Host and Origin of every request must
    be a name the server answers on or an ``allow_origin`` name; ``auth`` is ``"token"``
    (a random token, printed in the URL), ``"basic"`` (``users``: ``{user: hash}``),
    ``"none"``, or ``"auto"`` (a token beyond loopback, none on loopback).

    Parameters
    ----------
    port : int (1 <= port <= 65535), default 5006
        TCP port to listen on.
    host : str (non-empty), default "127.0.0.1"
        Address to listen on (the default: this machine only).
    show : bool, default True
        Open the page in a browser.
    prior_dir : str or path-like, optional
        Offer the ``.py`` model files under this directory (chosen from a list) as priors.
    allow_origin : sequence of str, default ()
        Further ``HOST[:PORT]`` names to answer to (a reverse proxy's).
    auth : {"auto", "token", "basic", "none"}, default "auto"
        How a visitor is admitted (see above).
    users : dict, optional
        For ``auth="basic"``: ``{user: "pbkdf2_sha256$..."}`` (``python -m
        dprisk.explore.access USER`` prints one).
    max_jobs : int (>= 1), optional
        Slow computations running at once, server-wide, and as many sampling workers
        (default: the number of cores).
    page_loads : int (>= 0), optional
        Page loads (and websocket connections) per client address per minute, and
        websocket connections a client address holds open at once (default
        :data:`dprisk.explore.access.DEFAULT_PAGE_LOADS`, 30; 0: no limit).

    Raises
    ------
    ValueError
        Before anything starts, naming the parameter: ``port`` outside 1..65535, an empty
        ``host``, ``auth`` not one of auto, token, basic, none, ``max_jobs < 1`` or
        ``page_loads < 0`` (the rules of ``dprisk explore``'s options).
    """
    _check_serve_options(port, host, auth, max_jobs, page_loads)
    import secrets

    from dprisk.explore.access import (
        DEFAULT_PAGE_LOADS,
        Access,
        allowed_names,
        bokeh_origins,
        new_token,
    )
    from dprisk.explore.jobs import set_max_sampling
    from dprisk.explore.routes import guard, server_options

    policy = prior_policy(host, prior_dir)
    set_max_jobs(max_jobs)
    set_max_sampling(max_jobs)
    if auth == "auto":
        auth = "none" if is_loopback(host) else "token"
    token = new_token() if auth == "token" else None
    names = allowed_names(host, port, allow_origin)
    loads = DEFAULT_PAGE_LOADS if page_loads is None else (page_loads, 60.0) if page_loads else None
    access = Access(names, token=token, users=users if auth == "basic" else None,
                    page_loads=loads)
    import matplotlib

    matplotlib.use("Agg")
    pn.extension(notifications=False)
    build_app()  # warm: compiled kernels and caches load before the first visitor
    # What the imports and the warm-up made lives as long as the server: collect the warm-up's
    # garbage once, then freeze the rest, so that the full collections a page load triggers
    # walk only that page's objects, not Panel's, Bokeh's and PyMC's (per page load about
    # 0.16-0.25 -> 0.07-0.09 s of CPU, measured 2026-11-29)
    gc.collect()
    gc.freeze()
    # the sampling workers' forkserver imports their libraries (ArviZ alone takes seconds) in
    # the background while the first visitor's page is served, not when "Check by sampling"
    # is pressed
    threading.Thread(target=_start_sampling_workers, name="dprisk-warm", daemon=True).start()
    shown = "localhost" if host in ("0.0.0.0", "::", "") else host
    shown = f"[{shown}]" if ":" in shown else shown
    url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    print(f"dprisk explore: serving at {url} (Ctrl+C to stop)", flush=True)
    print(f"dprisk explore: answering to {', '.join(names)}", flush=True)
    if auth == "none" and not is_loopback(host):
        print("dprisk explore: WARNING: --no-auth: anyone who can reach this address may use "
              "the explorer", flush=True)

    def page():  # a plain function: Panel serves a partial as an object, not a page
        return build_app(policy)

    if show:  # the URL with its token, once the server listens
        import webbrowser

        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    server = pn.serve({"/": page}, port=port, address=host, show=False,
                      title="dprisk explore", allow_websocket_origin=bokeh_origins(names),
                      auth_provider=access, cookie_secret=secrets.token_hex(32),
                      threaded=False, start=False, **server_options())
    # the Host check on every route (static files too), and Panel's /components/ route, which
    # imports the module its URL names, replaced by one that imports nothing
    guard(server._tornado, access)
    server.start()
    server.io_loop.start()
