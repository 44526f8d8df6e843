"""Live what-ifs in a notebook or the browser (the interface layer beside ``dprisk.cli``).

Built on Panel (HoloViz) rather than ipywidgets + Voilà: the same components are live
controls in JupyterLab / VS Code notebooks and a standalone app served by one Bokeh process
(``dprisk explore``), without a Jupyter kernel per visitor; Panel brings the download buttons,
progress indicators and async (off-event-loop) callbacks the app needs, and installs as
pure-Python wheels. See :mod:`dprisk.explore.app` for the reasons in full.

Modules: :mod:`~dprisk.explore.inputs` (text boxes to validated values; request numbers),
:mod:`~dprisk.explore.results` (what each view shows, from the public functions of
:mod:`dprisk.inference`), :mod:`~dprisk.explore.jobs` (sampling in a killable worker process),
:mod:`~dprisk.explore.views` and :mod:`~dprisk.explore.sampling_view` (Panel views),
:mod:`~dprisk.explore.app` (the served app) and :mod:`~dprisk.explore.notebook` (live controls
for the what-if notebooks). Computation stays in :mod:`dprisk.inference`; nothing here
computes a risk. Only ``dprisk.cli.commands.explore`` imports this package.
"""
