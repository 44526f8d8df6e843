r"""PyMC's Metropolis-within-Gibbs steps of a discrete model, without the point maps per step.

``pm.sample`` advances a chain by ``CompoundStep.step(point)``: each step maps the point
(a dict of arrays) to a raveled array and back (``DictToArrayBijection.map`` / ``rmap``),
and evaluates the model's compiled log density through ``Function.__call__`` (keyword
arguments, per-call bookkeeping, about 25 us a call where the compiled graph takes 3 us):
about 180 us per compound step of the two-level model's ``BinaryGibbsMetropolis`` +
``Metropolis``. :class:`FusedSteps` runs the same steps on the point's values (about 10 us):

* ``BinaryGibbsMetropolis`` of one scalar ``T``: PyMC's ``astep`` line for line (shuffle of
  the update order, a flip proposed with probability ``transit_p`` by ``rng.random()``,
  accepted by :func:`log_uniform_below`), its log density the compiled graph (the jitted
  function the PyTensor function's virtual machine calls) called directly with ``T``'s
  value and the other variables' current values;
* a Metropolis step of one discrete scalar ``X``: the step's own
  ``discrete_scalar_step(current, delta_logp)``
  (:class:`dprisk.inference.two_level.lean_steps.LeanMetropolis`, PyMC's ``Metropolis.astep``
  line for line), its acceptance log-ratio
  :math:`\log \pi(T, X') - \log \pi(T, X)` taken from the same compiled log density at the
  current ``T`` (the value PyMC's shared variable holds during the step).

The compiled graph receives arrays of the dtype and shape PyMC's point maps give it (0-d
int64 values) and the model's data as stored in the function's containers (read when a
chain starts; :func:`pymc.set_data` between chains), so it computes the same values. It is a
pure function of those values, so each chain keeps the log densities it computed by
argument ``(T, X)`` (a few dozen distinct arguments in thousands of steps) and calls the
graph only for a new one. The steps draw from their own generators in the same order, keep
the same state (``scaling``, ``accepted_sum``, ``steps_until_tune``, the Gibbs ``order``) and
leave the shared variable as PyMC does.

PyMC's Metropolis computes its log-ratio with a graph of its own, ``delta_logp``: the model's
log density at both values, subtracted, and simplified by PyTensor's rewrites (the terms of
``T`` alone cancel), compiled for each model (0.2-0.5 s of CPU, as much as the log density); the
difference of the two log densities is the same number up to rounding (a few units in the last
place of the larger log density). An acceptance can differ only when ``log u`` falls that close
to the ratio (a chance of the order of 1e-14 a step here), so the draws are PyMC's, the same
integers (``tests/inference/mcmc/test_fused_steps.py`` compares them with ``pm.sample`` and with
the unfused loop of :class:`dprisk.inference.mcmc.compiled_chain.CompiledChain`, which runs
PyMC's own ``delta_logp``; the indicator's step is PyMC's bit for bit). Anything else
(other step classes, continuous or vector variables, a compiled function not run by one
jitted graph) is not fused: :meth:`FusedSteps.build` returns None and the chain calls
``step.step(point)``.

:meth:`FusedSteps.run` runs its iterations in compiled code
(:mod:`dprisk.inference.mcmc.fused_loop_jit`, on the steps' own generators: the same draws and
states), which hands back to Python only for what PyMC's own code does: a log density not yet
computed (kept in a window by value of ``X``), the scale's tuning, an acceptance too close to
call with ``math.log``, a proposal beyond exact arithmetic. The Python loop
(:meth:`FusedSteps._run_python`) remains for when numba is missing; the two are compared in
``tests/inference/mcmc/test_fused_steps.py``.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["FusedSteps", "log_uniform_below"]

#: Smallest relative gap |log u - r| / (1 + |r|) decided by ``math.log``: libm's and numpy's
#: float64 logarithms differ by a few units in the last place (about 1e-16 relative) at most.
_LOG_TIE = 1e-9
#: LeanMetropolis's limits of exact scalar arithmetic (see there): beyond, PyMC's array path.
_EXACT_DELTA = 2.0**53
_EXACT_VALUE = 2**62
#: The compiled loop's first window of log densities (values of ``X``), and its largest.
_WINDOW = 64
_MAX_WINDOW = 1 << 16
#: ``{"module": the compiled loop's module or None}`` once :func:`_compiled_loop` ran.
_COMPILED_LOOP: dict = {}


def log_uniform_below(log_ratio, rng) -> bool:
    """PyMC's acceptance test ``np.isfinite(r) and np.log(rng.uniform()) < r`` (``metrop_select``).

    The same draw (none when ``r`` is not finite): ``rng.uniform()`` is ``0.0 + 1.0 * d`` with
    ``d`` the generator's next double (numpy's ``random_uniform``), which ``rng.random()``
    returns without ``uniform``'s argument checks (a third of the cost). The same outcome:
    ``log u`` by ``math.log``, and by ``np.log`` as PyMC computes it when ``u`` is 0 or
    ``log u`` is within a relative ``1e-9`` of ``r`` (where the two logarithms could order
    differently).
    """
    log_ratio = float(log_ratio)
    if not math.isfinite(log_ratio):
        return False
    u = rng.random()
    if u > 0.0:
        gap = math.log(u) - log_ratio
        if abs(gap) > _LOG_TIE * (1.0 + abs(log_ratio)):
            return gap < 0.0
    return bool(np.log(u) < log_ratio)


class FusedSteps:
    """``CompoundStep([BinaryGibbsMetropolis(T), Metropolis(X)]).step`` on the point's values.

    Build with :meth:`build` (None when ``steps`` are not of the fused kind). Per chain:
    :meth:`start_chain` after PyMC's ``setup_chain``, :meth:`step` per iteration (the new
    point, as ``step.step(point)[0]``), :meth:`end_chain` with the last point.
    """

    def __init__(self, gibbs, metropolis, names, logp):
        self.gibbs = gibbs
        self.metropolis = metropolis
        self.t_name, self.x_name = names
        self._logp = logp
        self._t_first = logp[1][0] == self.t_name  # the log density's inputs: (T, X) or (X, T)
        #: The variables whose values :meth:`run` records, in its order.
        self.run_names = (self.t_name,) if self.x_name is None else (self.t_name, self.x_name)
        self.start_chain()

    @classmethod
    def build(cls, model, steps) -> FusedSteps | None:
        """The fused steps of ``steps`` on ``model``, or None if they are not of that kind.

        Fused: ``[BinaryGibbsMetropolis]`` of one 0-d int64 value variable ``T``, optionally
        followed by a step with ``discrete_scalar_step`` (LeanMetropolis, ``discrete_scalar``)
        of one other 0-d int64 variable ``X`` whose only shared variable is ``T``; the model's
        value variables are exactly those; the indicator's compiled log density is run by one
        jitted graph whose leading inputs are the values of ``T`` and ``X`` given per call.
        """
        from pymc.step_methods.metropolis import BinaryGibbsMetropolis

        if not 1 <= len(steps) <= 2 or type(steps[0]) is not BinaryGibbsMetropolis:
            return None
        gibbs = steps[0]
        metropolis = steps[1] if len(steps) == 2 else None
        if (gibbs.allvars or len(gibbs.vars) != 1 or len(gibbs.fs) != 1 or gibbs.dim != 1
                or list(gibbs.order) != [0]):
            return None
        names = [gibbs.vars[0].name]
        if metropolis is not None:
            if (not getattr(metropolis, "discrete_scalar", False)
                    or not hasattr(metropolis, "discrete_scalar_step")
                    or len(metropolis.vars) != 1 or set(metropolis.shared) != {names[0]}):
                return None
            names.append(metropolis.vars[0].name)
        value_vars = {var.name: var for var in model.value_vars}
        if sorted(value_vars) != sorted(names) or any(
                value_vars[name].type.dtype != "int64" or value_vars[name].type.ndim != 0
                for name in names):
            return None
        logp = _direct(getattr(gibbs.fs[0], "f", None))
        if logp is None or sorted(logp[1]) != sorted(names):
            return None
        return cls(gibbs, metropolis, (*names, None)[:2], logp)

    def start_chain(self) -> None:
        """Read the functions' other inputs (the model's data) for the chain to come."""
        self._logp_args = tuple(cell[0] for cell in self._logp[2])
        # the chain's log densities by value, and its values' 0-d int64 arrays
        self._logp_values, self._arrays = {}, {}
        self._window = None  # the compiled loop's table of them (_table)

    def _array(self, value: int) -> np.ndarray:
        """The 0-d int64 array of ``value`` (one per value and chain; only ever read)."""
        array = self._arrays.get(value)
        if array is None:
            array = self._arrays[value] = np.array(value, dtype=np.int64)
        return array

    def _log_density(self, t: int, x: int | None) -> float:
        """The model's log density at ``T = t, X = x`` (the compiled graph, once per chain)."""
        value = self._logp_values.get((t, x))
        if value is None:
            if x is None:
                values = (self._array(t),)
            elif self._t_first:
                values = (self._array(t), self._array(x))
            else:
                values = (self._array(x), self._array(t))
            value = float(self._logp[0](*values, *self._logp_args)[0])
            self._logp_values[t, x] = value
        return value

    def step(self, point: dict) -> dict:
        """One iteration of the steps from ``point``: the new point (a new dict)."""
        t_name, x_name = self.t_name, self.x_name
        t = int(point[t_name])
        x = None if x_name is None else int(point[x_name])
        # BinaryGibbsMetropolis.astep for one dimension: its order is [0], whose shuffle
        # (Generator.shuffle of a list of one) draws nothing and changes nothing
        gibbs = self.gibbs
        rng = gibbs.rng
        logp_current = self._log_density(t, x)
        if rng.random() < gibbs.transit_p:
            proposal = 1 - t  # True - q.data[0]
            if log_uniform_below(self._log_density(proposal, x) - logp_current, rng):
                t = proposal
        new_point = dict(point)
        new_point[t_name] = self._array(t)
        if x is not None:
            log_density = self._log_density

            def delta_logp(proposal: int, current: int) -> np.float64:
                return np.float64(log_density(t, proposal) - log_density(t, current))

            x, _, _ = self.metropolis.discrete_scalar_step(x, delta_logp)
            new_point[x_name] = self._array(x)
        return new_point

    def run(self, point: dict, iterations: int, record: bool = False):
        """``iterations`` calls of :meth:`step` from ``point``, in one loop; the last point.

        The same iterations as :meth:`step` (the same draws from the same generators in the
        same order, the same acceptance tests, the same tuning of the Metropolis step every
        ``tune_interval`` steps while it tunes, the same state left in the steps), with the
        values held as Python ints between iterations instead of a new point per iteration.
        With ``record``: ``(point, t_values, x_values)``, each iteration's ``T`` and ``X``
        as lists of ints (``(point, t_values)`` without ``X``; :attr:`run_names`).
        """
        t_name, x_name = self.t_name, self.x_name
        t, x, t_values, x_values = self._run_both(
            int(point[t_name]), None if x_name is None else int(point[x_name]), iterations,
            record)
        new_point = dict(point)
        new_point[t_name] = self._array(t)
        if x_name is not None:
            new_point[x_name] = self._array(x)
        if not record:
            return new_point
        return (new_point, t_values) if x_name is None else (new_point, t_values, x_values)

    def _run_both(self, t: int, x: int | None, iterations: int, record: bool):
        """:meth:`run`'s loop: ``(t, x, t_values, x_values)``, compiled where it can be.

        :func:`dprisk.inference.mcmc.fused_loop_jit.fused_iterations` (the same iterations,
        draws and state; ``t_values``/``x_values`` then int64 arrays) when numba loads, ``T``
        is 0 or 1 and the steps draw from ``numpy.random.Generator`` objects; otherwise
        :meth:`_run_python`.
        """
        metropolis = None if x is None else self.metropolis
        rngs = (self.gibbs.rng, self.gibbs.rng if metropolis is None else metropolis.rng)
        kernel = _compiled_loop()
        if (kernel is None or t not in (0, 1)
                or not all(type(rng) is np.random.Generator for rng in rngs)):
            return self._run_python(t, x, iterations, record)
        return self._run_compiled(kernel, rngs, t, x, iterations, record)

    def _table(self, x: int):
        """The chain's window of log densities ``(table, known, x_lo)``, made to hold ``x``."""
        table = self._window
        if table is not None and 0 <= x - table[2] < table[0].shape[1]:
            return table
        if table is None:
            lo, hi = x - _WINDOW // 2, x + _WINDOW // 2
        else:
            old_lo, old_hi = table[2], table[2] + table[0].shape[1]
            width = 2 * (old_hi - old_lo)
            lo = min(old_lo, x - width // 2) if x < old_lo else old_lo
            hi = max(old_hi, x + width // 2) if x >= old_hi else old_hi
            if hi - lo > _MAX_WINDOW:
                return None
        values = np.zeros((2, hi - lo))
        known = np.zeros((2, hi - lo), dtype=np.bool_)
        if table is not None:
            offset = table[2] - lo
            values[:, offset:offset + table[0].shape[1]] = table[0]
            known[:, offset:offset + table[0].shape[1]] = table[1]
        self._window = (values, known, lo)
        return self._window

    def _run_compiled(self, kernel, rngs, t: int, x: int | None, iterations: int,
                      record: bool):
        """:meth:`_run_both` by the compiled loop, its driver's part done here (PyMC's)."""
        jit = kernel
        metropolis = None if x is None else self.metropolis
        state = np.zeros(jit.STATE_SIZE, dtype=np.int64)
        reals = np.zeros(jit.REALS_SIZE)
        state[jit.T], state[jit.X] = t, (0 if x is None else x)
        reals[jit.TRANSIT_P] = self.gibbs.transit_p
        if metropolis is not None:
            state[jit.HAS_X] = 1
            state[jit.TUNING] = bool(metropolis.tune)
            state[jit.STEPS_UNTIL_TUNE] = metropolis.steps_until_tune
            reals[jit.S0] = float(metropolis.proposal_dist.s[0])
            reals[jit.SCALING] = float(metropolis.scaling[0])
        t_out = np.empty(iterations if record else 0, dtype=np.int64)
        x_out = np.empty(iterations if record and metropolis is not None else 0,
                         dtype=np.int64)
        window = self._table(int(state[jit.X]))
        next_slot = 0
        while True:
            jit.fused_iterations(*rngs, window[0], window[1], window[2], state, reals,
                                 t_out, x_out, iterations, record)
            status = state[jit.STATUS]
            if status == jit.DONE:
                break
            if status == jit.MISS:
                miss_t, miss_x = int(state[jit.MISS_T]), int(state[jit.MISS_X])
                value = self._log_density(miss_t, None if metropolis is None else miss_x)
                grown = self._table(miss_x)
                if grown is None:  # far outside the window: a spare slot
                    state[jit.SLOT_T + next_slot] = miss_t
                    state[jit.SLOT_X + next_slot] = miss_x
                    state[jit.SLOT_VALID + next_slot] = 1
                    reals[jit.SLOT_VALUE + next_slot] = value
                    next_slot = 1 - next_slot
                else:
                    window = grown
                    window[0][miss_t, miss_x - window[2]] = value
                    window[1][miss_t, miss_x - window[2]] = True
            elif status == jit.TUNE:  # as PyMC: every tune_interval steps while tuning
                reals[jit.SCALING] = _tune(metropolis, int(state[jit.ACCEPTED_SINCE]))
                state[jit.ACCEPTED_SINCE] = 0
                state[jit.STEPS_UNTIL_TUNE] = metropolis.tune_interval
            elif status == jit.TIE:  # log u this close to the ratio: PyMC's np.log decides
                state[jit.DECISION] = bool(np.log(reals[jit.U]) < reals[jit.RATIO])
            else:  # BIG: PyMC's array operations on the same draw
                state[jit.PROPOSAL] = _array_proposal(metropolis, reals[jit.NORMAL],
                                                      int(state[jit.X]))
        t, x_last = int(state[jit.T]), int(state[jit.X])
        if metropolis is None:
            return t, None, (t_out if record else None), None
        _write_back(metropolis, int(state[jit.ACCEPTED_SINCE]), int(state[jit.STEPS_UNTIL_TUNE]),
                    reals[jit.ACCEPT_RATE] if state[jit.HAVE_RATE] else None,
                    bool(state[jit.ACCEPTED]))
        return t, x_last, (t_out if record else None), (x_out if record else None)

    def _run_python(self, t: int, x: int | None, iterations: int, record: bool):
        """:meth:`run`'s loop in Python: ``(t, x, t_values, x_values)``.

        Each iteration the BinaryGibbsMetropolis step of ``T`` and, when the model has ``X``
        (``x`` not None), the Metropolis step of ``X``; without ``X`` the Metropolis part is
        skipped (one branch per iteration) and ``x`` stays None. The Metropolis part is
        ``discrete_scalar_step`` of
        :class:`dprisk.inference.two_level.lean_steps.LeanMetropolis` line for line: its
        counters (``steps_until_tune``, accepted proposals since the last tuning) are kept
        in locals and written back to the step when it tunes and at the end.
        """
        gibbs, metropolis = self.gibbs, (None if x is None else self.metropolis)
        gibbs_random = gibbs.rng.random
        transit_p = gibbs.transit_p
        logp_values, log_density = self._logp_values, self._log_density
        isfinite, log, tie = math.isfinite, math.log, _LOG_TIE
        if metropolis is not None:
            metropolis_random = metropolis.rng.random
            standard_normal = metropolis.rng.standard_normal
            s0 = float(metropolis.proposal_dist.s[0])
            scaling0 = float(metropolis.scaling[0])
            tuning = metropolis.tune
            tune_interval = metropolis.tune_interval
            steps_until_tune = metropolis.steps_until_tune
        accepted_since = 0  # added to accepted_sum[0] at the next tuning or at the end
        accept_rate = accepted = None
        t_values = [] if record else None
        x_values = [] if record else None
        for _ in range(iterations):
            # BinaryGibbsMetropolis of T (as step())
            logp_current = logp_values.get((t, x))
            if logp_current is None:
                logp_current = log_density(t, x)
            if gibbs_random() < transit_p:
                proposal = 1 - t
                logp_proposal = logp_values.get((proposal, x))
                if logp_proposal is None:
                    logp_proposal = log_density(proposal, x)
                ratio = logp_proposal - logp_current
                if isfinite(ratio):  # log_uniform_below(ratio, rng), inlined
                    u = gibbs_random()
                    gap = log(u) - ratio if u > 0.0 else 0.0
                    if u > 0.0 and abs(gap) > tie * (1.0 + abs(ratio)):
                        flip = gap < 0.0
                    else:
                        flip = bool(np.log(u) < ratio)
                    if flip:
                        t = proposal
            if metropolis is None:  # no X: the indicator's step alone
                if record:
                    t_values.append(t)
                continue
            # Metropolis of X (LeanMetropolis.discrete_scalar_step)
            if not steps_until_tune and tuning:
                scaling0 = _tune(metropolis, accepted_since)
                accepted_since = 0
                steps_until_tune = tune_interval
            normal = 0.0 + s0 * standard_normal()
            delta = normal * scaling0
            if abs(delta) < _EXACT_DELTA and abs(x) < _EXACT_VALUE:
                proposal = x + round(delta)
            else:  # PyMC's array operations on the same draw
                proposal = _array_proposal(metropolis, normal, x)
            # log pi(t, proposal) - log pi(t, x): the log densities of this chain
            logp_proposal = logp_values.get((t, proposal))
            if logp_proposal is None:
                logp_proposal = log_density(t, proposal)
            logp_current = logp_values.get((t, x))
            if logp_current is None:
                logp_current = log_density(t, x)
            ratio = accept_rate = logp_proposal - logp_current
            accepted = False
            if isfinite(ratio):  # log_uniform_below(accept_rate, rng), inlined
                u = metropolis_random()
                gap = log(u) - ratio if u > 0.0 else 0.0
                if u > 0.0 and abs(gap) > tie * (1.0 + abs(ratio)):
                    accepted = gap < 0.0
                else:
                    accepted = bool(np.log(u) < ratio)
            if accepted:
                accepted_since += 1
                x = proposal
            steps_until_tune -= 1
            if record:
                t_values.append(t)
                x_values.append(x)
        if metropolis is None:
            return t, x, t_values, x_values
        _write_back(metropolis, accepted_since, steps_until_tune, accept_rate, accepted)
        return t, x, t_values, x_values

    def end_chain(self, point: dict) -> None:
        """Leave the Metropolis step's shared ``T`` at the last point's, as PyMC's loop does."""
        if self.x_name is not None:
            self.metropolis.shared[self.t_name].set_value(point[self.t_name], borrow=True)


def _tune(metropolis, accepted_since: int) -> float:
    """PyMC's tuning of the Metropolis step's scale; returns the new ``scaling[0]``.

    As ``Metropolis.astep`` every ``tune_interval`` steps while tuning: the accepted proposals
    since the last tuning added to ``accepted_sum``, ``scaling = tune(scaling, accepted_sum /
    tune_interval)``, ``accepted_sum`` set to 0.
    """
    from pymc.step_methods.metropolis import tune as tuned_scaling

    metropolis.accepted_sum[0] += accepted_since
    metropolis.scaling = tuned_scaling(
        metropolis.scaling, metropolis.accepted_sum / float(metropolis.tune_interval))
    metropolis.accepted_sum[:] = 0
    return float(metropolis.scaling[0])


def _array_proposal(metropolis, normal: float, x: int) -> int:
    """``x + round(normal * scaling)`` by PyMC's int64 array operations (beyond exact floats)."""
    step = (np.array([normal]) * metropolis.scaling).round(0).astype("int64")
    return int((np.array([x], dtype=np.int64) + step).astype("int64")[0])


def _write_back(metropolis, accepted_since: int, steps_until_tune: int, accept_rate,
                accepted: bool) -> None:
    """A run's Metropolis counters into the step, as PyMC's steps leave them.

    ``accept_rate`` is the last step's log-ratio (None when no step of ``X`` ran: the step's
    ``accept_rate_iter`` and ``accepted_iter`` are then left as they were).
    """
    if accepted_since:
        metropolis.accepted_sum[0] += accepted_since
    metropolis.steps_until_tune = steps_until_tune
    if accept_rate is not None:
        metropolis.accept_rate_iter = np.float64(accept_rate)
        metropolis.accepted_iter[0] = accepted


def _compiled_loop():
    """The compiled loop's module (:mod:`dprisk.inference.mcmc.fused_loop_jit`), or None.

    Imported on first use, numba's cache pointed at the user's cache directory first (the
    machine code is then loaded, not compiled); None when numba cannot be imported.
    """
    if "module" not in _COMPILED_LOOP:
        from dprisk.runtime.cache import use_numba_cache

        use_numba_cache()
        try:
            from dprisk.inference.mcmc import fused_loop_jit
        except ImportError:
            fused_loop_jit = None
        _COMPILED_LOOP["module"] = fused_loop_jit
    return _COMPILED_LOOP["module"]


def _direct(function, given_cells=()):
    """``(jit, explicit_names, other_cells)`` to call ``function``'s jitted graph, or None.

    ``function`` must be a PyTensor function without updates, of one output, whose virtual
    machine calls one jitted graph with its inputs' storage cells in order: first its
    explicit inputs (``explicit_names``), then ``given_cells`` (inputs taken from shared
    variables, given per call as well, in that order), then ``other_cells`` (read per chain).
    """
    vm = getattr(function, "vm", None)
    jit, vm_cells = getattr(vm, "jit_fn", None), getattr(vm, "inputs", None)
    if (jit is None or not isinstance(vm_cells, list) or function._has_updates
            or len(function.output_storage) != 1
            or len(vm_cells) != len(function.input_storage)
            or any(cell is not container.storage
                   for cell, container in zip(vm_cells, function.input_storage, strict=True))):
        return None
    implicit = [inp.implicit for inp in function.maker.inputs]
    n = implicit.count(False)
    given = n + len(given_cells)
    if (any(implicit[:n]) or len(vm_cells) < given
            or any(a is not b for a, b in zip(vm_cells[n:given], given_cells, strict=True))):
        return None
    names = [inp.variable.name for inp in function.maker.inputs[:n]]
    return jit, names, vm_cells[given:]
