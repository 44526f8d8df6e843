r"""One PyMC chain on already-compiled steps, without ``pm.sample``'s fixed costs per call.

Each ``pm.sample`` call pays 0.1-0.3 s before and after the stepping even when the model and
its steps are reused (re-deriving the model's log-density to assign the steps, compiling the
initial point and a trace function per chain, converting the trace to a DataTree). The
calibration (:mod:`dprisk.validation.sbc.samplers`) runs hundreds of one-chain samples of the
same model with a new release each (:func:`dprisk.models.builders.two_level.set_release`):
:class:`CompiledChain` compiles the initial point and the recorded quantities once and then
runs exactly the loop of ``pm.sample(cores=1)``:

* the chains' generators are ``get_random_generator(random_seed).spawn(chains)`` and each
  initial point's seed is its generator's ``integers(2**30)``, as in ``pm.sample``;
* the steps are wrapped as ``pm.sample`` wraps them (one step as is, several in a
  ``CompoundStep``), their sampling state is re-assigned, ``setup_chain(rng, tune, draws)``
  is called, tuning is reset and stopped after ``tune`` steps; every chain starts from the
  steps' state at entry;
* the recorded quantities are evaluated at every kept point: when they are computed from the
  value variables by integer arithmetic alone (``X1 = m + target_has_c``, ``X2``), the kept
  points' values are stored during the chain and the quantities computed for all of them by
  one call of the same graph vectorised over the draws (exact: integer operations element by
  element), instead of one compiled-function call per draw (26 us each, 5-10 % of a
  two-level chain's time); otherwise point by point.

* PyMC's Metropolis-within-Gibbs steps of the two-level model (``BinaryGibbsMetropolis`` of
  the indicator, optionally followed by LeanMetropolis of X2) advance the chain through
  :class:`dprisk.inference.mcmc.fused_steps.FusedSteps`: the same steps on the point's values,
  their log densities' compiled graphs called directly (about 10 us per iteration instead of
  180 us); other steps through ``step.step(point)``.
* when the recorded quantities are computed from the values of ``T`` and ``X`` alone, a
  chain's iterations run in one call (:meth:`FusedSteps.run`: one compiled loop,
  :mod:`dprisk.inference.mcmc.fused_loop_jit`, about 0.3 us an iteration besides the log
  densities it is handed, or the values as Python ints in one loop, about 4 us; or the
  step's own ``run``,
  :meth:`dprisk.inference.two_level.gibbs_step.ExactGibbsStep.run`, all sweeps at once from
  one ``rng.random(2 n)``), which return the kept values as lists or arrays.

So the same ``random_seed`` gives the same draws as ``pm.sample`` with the same steps, bit for
bit (``tests/inference/mcmc/test_compiled_chain.py`` compares them over a sequence of releases,
``tests/inference/mcmc/test_fused_steps.py`` the fused loop with the unfused one).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property

import numpy as np

from dprisk.inference.mcmc.fused_steps import FusedSteps

__all__ = ["CompiledChain", "graphs_without_tracebacks", "initial_point_function"]

#: Per model (weakly): ``{var_names: (recorded outputs, batched function)}``, compiled by the
#: first :class:`CompiledChain` of the model.
_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: Per model (weakly): its initial point function (:func:`initial_point_function`).
_INITIAL_POINTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def initial_point_function(model):
    """``model``'s initial point as a function of a seed, compiled once per model.

    PyMC's ``make_initial_point_fn(model=model, jitter_rvs=set(), return_transformed=True)``,
    the function ``model.initial_point()`` compiles on every call (no jitter is its default):
    ``initial_point_function(model)(None)`` is ``model.initial_point()``'s point, and
    ``pm.sample`` starts each chain at its value for the chain's seed. Shared by
    :func:`dprisk.inference.two_level.sampling.pymc_steps` and every :class:`CompiledChain`
    of the model (one compilation, 0.02-0.04 s, instead of two).
    """
    function = _INITIAL_POINTS.get(model)
    if function is None:
        from pymc.initial_point import make_initial_point_fn

        function = make_initial_point_fn(model=model, jitter_rvs=set(), return_transformed=True)
        _INITIAL_POINTS[model] = function
    return function


@contextmanager
def graphs_without_tracebacks() -> Iterator[None]:
    """Within the block, PyTensor keeps no creation traceback on the graph nodes it makes.

    PyTensor records on every variable and node it creates the stack of the code that
    created it (``tag.trace``, up to ``config.traceback__limit`` = 8 frames outside PyTensor,
    each frame's source line read), which only its error messages show. Building a two-level
    model and compiling its PyMC steps creates thousands of nodes (the rewrites of each
    compilation make most of them): with the limit at 0 (``config.change_flags``) the same
    graphs, functions and draws, in about a fifth less CPU (0.55 -> 0.44 s for a model, its
    ``Metropolis`` steps and a :class:`CompiledChain`, measured in one process). The limit is
    restored on leaving the block.
    """
    import pytensor

    with pytensor.config.change_flags(traceback__limit=0):
        yield


class CompiledChain:
    """Run chains of ``model`` with ``steps`` one after another, as ``pm.sample(cores=1)`` does.

    Parameters
    ----------
    model : pymc.Model
        The model; its data may change between runs (``pm.set_data``).
    steps : list of step methods
        Built once for ``model`` (e.g. :func:`dprisk.inference.two_level.sampling.pymc_steps`); they
        keep their tuned state across runs, as when passed to ``pm.sample`` repeatedly.
    var_names : sequence of str
        The model variables (free or deterministic) whose draws :meth:`run` returns.
    """

    def __init__(self, model, steps, var_names=("X1", "X2")):
        self.model = model
        self.steps = list(steps)
        self.var_names = tuple(var_names)
        # compiled once per model and var_names, shared by its chains (pure functions of
        # their arguments: the pymc-gibbs and pymc chains of a model use the same ones)
        compiled = _COMPILED.setdefault(model, {})
        if self.var_names not in compiled:
            outputs = model.replace_rvs_by_values([model[name] for name in self.var_names])
            compiled[self.var_names] = (outputs, _batched_integer_function(model, outputs))
        self._outputs, self._batched = compiled[self.var_names]
        self._initial_point = initial_point_function(model)
        self._dtypes = {name: out.dtype for name, out in zip(self.var_names, self._outputs,
                                                              strict=True)}
        # PyMC's Metropolis-within-Gibbs steps on the point's arrays (the same draws), or
        # None: step.step(point)
        self._fused = FusedSteps.build(model, self.steps)

    @cached_property
    def _values(self):
        """The recorded quantities at one point, compiled when first needed.

        Only when they are not computed by the batched function (``_batched`` is None).
        """
        values = self.model.compile_fn(self._outputs, inputs=self.model.value_vars,
                                       on_unused_input="ignore", point_fn=True)
        # Called with the steps' points (every value an array of its variable's dtype and
        # shape), so PyTensor's per-call input checks are skipped, as PyMC does for its own
        # step functions.
        values.f.trust_input = True
        return values

    def run(self, *, draws: int, tune: int, random_seed: int,
            chains: int = 1) -> dict[str, np.ndarray]:
        """Draws after ``tune`` tuning steps of each chain: ``{name: (chains, draws) array}``.

        As ``pm.sample(chains=chains, cores=1)``: the chains' generators are
        ``spawn(random_seed)``, each initial point's seed is its generator's
        ``integers(2**30)``, and every chain starts from the steps' state at entry.
        """
        from pymc.step_methods.compound import CompoundStep
        from pymc.util import get_random_generator

        rngs = get_random_generator(random_seed).spawn(chains)
        points = [self._initial_point(rng.integers(2**30)) for rng in rngs]
        step = self.steps[0] if len(self.steps) == 1 else CompoundStep(self.steps)
        # every chain starts from the steps' state at entry: the first chain finds it as it
        # is, the others get a copy of it back (PyMC's sampling_state: deep copies, about
        # 1 ms a run of a two-level chain, most of a short chain's cost)
        entry_state = step.sampling_state if chains > 1 else None
        if self._batched is None:  # the recorded quantities, point by point
            record = {name: np.empty((chains, draws), dtype=self._dtypes[name])
                      for name in self.var_names}
        else:  # the value variables they are computed from, then all at once
            names, dtypes, _ = self._batched
            record = {name: np.empty((chains, draws, *np.shape(points[0][name])),
                                     dtype=dtypes[name])
                      for name in names}
        fused = self._fused
        if fused is not None:
            advance = fused.step
        else:
            def advance(point):
                return step.step(point)[0]
        whole, whole_names = self._whole_chain(step)
        for c, (rng, point) in enumerate(zip(rngs, points, strict=True)):
            _start_chain(step, entry_state if c else None, rng, tune, draws)
            if fused is not None:
                fused.start_chain()
            if whole is not None:  # the chain's iterations in one call, kept values as lists
                point = whole(point, tune)
                if draws:
                    step.stop_tuning()
                point, *values = whole(point, draws, record=True)
                kept = dict(zip(whole_names, values, strict=True))
                for name in names:
                    record[name][c] = kept[name]
            else:
                point = self._iterate(step, advance, point, record, c, tune, draws)
            if fused is not None:
                fused.end_chain(point)
        if self._batched is None:
            return record
        names, _, function = self._batched
        stacked = [record[name].reshape(chains * draws, *record[name].shape[2:])
                   for name in names]
        return {name: np.broadcast_to(np.asarray(value, dtype=self._dtypes[name]),
                                      (chains * draws,)).reshape(chains, draws).copy()
                for name, value in zip(self.var_names, function(*stacked), strict=True)}

    def _whole_chain(self, step):
        """``(run, names)``: the steps' iterations in one call, or ``(None, None)``.

        ``run(point, iterations, record=False)`` returns the last point (with ``record``
        also the values of the variables ``names`` at each iteration, as lists):
        :meth:`FusedSteps.run` (PyMC's two-level steps) or the step's own ``run``
        (:meth:`dprisk.inference.two_level.gibbs_step.ExactGibbsStep.run`). Only when the
        recorded quantities are computed from those values (the batched function's inputs).
        """
        runner = self._fused if self._fused is not None else step
        names = getattr(runner, "run_names", None)
        if (self._batched is None or names is None
                or not callable(getattr(runner, "run", None))
                or not set(self._batched[0]) <= set(names)):
            return None, None
        return runner.run, tuple(names)

    def _iterate(self, step, advance, point, record, c: int, tune: int, draws: int):
        """One chain point by point (``advance(point)`` per iteration); the last point."""
        for _ in range(tune):
            point = advance(point)
        if draws:  # pm.sample stops the tuning before the first kept step
            step.stop_tuning()
        if self._batched is None:
            rows = [(name, record[name][c]) for name in self.var_names]
            for i in range(draws):
                point = advance(point)
                for (_, row), value in zip(rows, self._values(point), strict=True):
                    row[i] = value
        else:
            rows = [(name, record[name][c]) for name in self._batched[0]]
            for i in range(draws):
                point = advance(point)
                for name, row in rows:
                    row[i] = point[name]
        return point


def _start_chain(step, entry_state, rng, tune: int, draws: int) -> None:
    """Reset ``step`` for a new chain as ``pm.sample`` does (``entry_state`` None: as it is)."""
    if entry_state is not None:
        step.sampling_state = entry_state
    step.setup_chain(rng, tune, draws)
    step.tune = bool(tune)
    if hasattr(step, "reset_tuning"):
        step.reset_tuning()
    if hasattr(step, "iter_count"):
        step.iter_count = 0


def _batched_integer_function(model, outputs):
    """``(names, dtypes, function)`` computing ``outputs`` for a batch of points, or None.

    Only when every variable between the model's value variables and ``outputs`` is of an
    integer or boolean type (integer arithmetic: the batched values equal the values computed
    point by point, exactly) and no random variable, shared variable or other input takes
    part; the function takes each used value variable's values stacked along a new first
    axis (draws) and returns each output likewise (``names`` and ``dtypes`` of those value
    variables). When every operation is elementwise (``X1 = m + target_has_c``, ``X2``), the
    graph takes the stacked values as it is (elementwise operations broadcast) and runs on
    PyTensor's Python implementations (numpy; one call per run): compiled in a few ms,
    where a jitted function's first call compiles it (0.1-0.4 s a model); otherwise the
    graph is vectorised and compiled as usual.
    """
    import pytensor
    from pytensor.compile.ops import DeepCopyOp, ViewOp
    from pytensor.graph.basic import Constant
    from pytensor.graph.replace import clone_replace, vectorize_graph
    from pytensor.graph.traversal import ancestors, applys_between, graph_inputs
    from pytensor.tensor.elemwise import Elemwise

    value_vars = {var.name: var for var in model.value_vars}
    used = [var for var in graph_inputs(outputs) if not isinstance(var, Constant)]
    if not used or any(value_vars.get(var.name) is not var for var in used):
        return None
    if any(getattr(var.type, "dtype", "float64")[:3] not in ("int", "uin", "boo")
           for var in ancestors(outputs) if not isinstance(var, Constant)):
        return None
    batched = {var: var.type.clone(shape=(None, *var.type.shape))(name=var.name)
               for var in used}
    if all(var.type.ndim == 0 for var in used) and all(
            isinstance(node.op, (Elemwise, ViewOp, DeepCopyOp))
            for node in applys_between(used, outputs)):
        new_outputs = clone_replace(list(outputs), replace=batched, rebuild_strict=False)
        mode = "FAST_COMPILE"
    else:
        try:
            new_outputs = vectorize_graph(list(outputs), replace=batched)
        except Exception:  # an operation PyTensor cannot vectorise: point by point instead
            return None
        mode = None
    function = pytensor.function(list(batched.values()), new_outputs,
                                 on_unused_input="ignore", mode=mode)
    return [var.name for var in used], {var.name: var.type.dtype for var in used}, function
