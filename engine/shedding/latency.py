"""When to shed and how much: pSPICE's latency model (digest-pspice section 7, Algorithm 1 with Eq. 6).

An event's latency is ``l_q + l_s + l_p``: queueing (the caller knows it: now minus the event's arrival), shedding
(``g``, the time a shedding pass takes, fitted on the passes made) and processing (``f``, fitted on every observed
event).  Only ``l_p`` can be controlled, by dropping partial matches.  Two checks use the same form:

- **global** (the paper's Algorithm 1): ``l_p = f(n_pm)`` with ``n_pm`` the runs alive; if
  ``l_q + l_p + l_s + b_s > LB``, keep ``n' = f^-1(LB - b_s - l_q - l_s)`` runs and shed ``n_pm - n'`` by utility.
  ``f`` fitted on ``n_pm`` is the *mean* event cost, which is what keeps the queue from growing;
- **per event** (our extension for a partitioned runtime): an event is matched only against the runs of its partition
  (all runs for a cluster-wide event), so its own cost is ``f_e(work)`` with ``work`` = the runs it will step
  (:meth:`engine.runtime.matcher.Matcher.pending_work`).  When that event alone would break the bound, the runs it
  is about to step are thinned to ``f_e^-1(budget)``.  In the paper every event meets every PM, so both coincide.

``b_s`` (Eq. 6's safety buffer) is ``safety_fraction * LB``.

**Thrashing** (digest ambiguity 6, our resolution).  When single events cost microseconds and LB is milliseconds, the
latency is almost all queueing: Algorithm 1 fires only once the queue reaches ``LB - b_s``, and shedding just enough
for *that* event leaves the queue there, so it fires again at every following event -- and a shedding pass costs
more than processing an event.  So when the global check fires, it also sheds down to the *sustainable* count
``f^-1(mean inter-arrival time)`` (the runs at which the mean event cost equals the arrival gap, from an EWMA of the
arrivals), lowered by ``hysteresis``: the queue then drains until the runs have grown back.

The fits: the paper tries "several regression models" and keeps the best; here a linear and a quadratic least-squares
fit, both exponentially weighted (recursive least squares with forgetting, as sufficient statistics), chosen by their
prequential error (each predicts a sample before learning it).  ``f^-1`` is a binary search over the runs count,
which needs ``f`` non-decreasing: a quadratic that is not, over the range seen, is not used.
"""

from __future__ import annotations

__all__ = ["LatencyModel", "OnlineFit"]


def _solve(a: list[list[float]], b: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None when singular."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-300:
            return None
        m[c], m[p] = m[p], m[c]
        for r in range(c + 1, n):
            f = m[r][c] / m[c][c]
            if f:
                for k in range(c, n + 1):
                    m[r][k] -= f * m[c][k]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][k] * x[k] for k in range(r + 1, n))) / m[r][r]
    return x


class OnlineFit:
    """y ~ poly(x) of degree 1 and 2, exponentially weighted least squares, the better one by prequential error.

    ``scale`` divides x before fitting so that the normal equations stay well conditioned for runs counts in the
    thousands; predictions are clamped to be >= 0 and non-decreasing in x.
    """

    def __init__(
        self, forgetting: float = 0.995, scale: float = 1000.0, ridge: float = 1e-9, refit_every: int = 8
    ) -> None:
        self.forgetting = forgetting
        self.scale = scale
        self.ridge = ridge
        self.refit_every = refit_every  # solving the normal equations per sample would cost more than the sample
        self._fitted_at = -1
        self.samples = 0
        self.x_max = 0.0
        # sums of x^k (k = 0..4) and x^k y (k = 0..2), weighted
        self._sx = [0.0] * 5
        self._sxy = [0.0] * 3
        self._err = [0.0, 0.0]  # EW squared prequential error of the linear and the quadratic model
        self._coef: list[list[float] | None] = [None, None]
        self._dirty = True
        self._best = 0

    def update(self, x: float, y: float) -> None:
        """Learn one sample (after scoring both models on it)."""
        if self.samples >= 4:
            f = self.forgetting
            for d in (0, 1):
                e = y - self._predict_model(d, x)
                self._err[d] = f * self._err[d] + (1 - f) * e * e
        f = self.forgetting
        u = x / self.scale
        p = 1.0
        sx = self._sx
        for k in range(5):
            sx[k] = f * sx[k] + p
            p *= u
        sxy = self._sxy
        sxy[0] = f * sxy[0] + y
        sxy[1] = f * sxy[1] + u * y
        sxy[2] = f * sxy[2] + u * u * y
        self.samples += 1
        if x > self.x_max:
            self.x_max = x
        self._dirty = self._fitted_at < 0 or self.samples - self._fitted_at >= self.refit_every

    def _fit(self) -> None:
        sx, sxy, r = self._sx, self._sxy, self.ridge
        lin = _solve([[sx[0] + r, sx[1]], [sx[1], sx[2] + r]], sxy[:2])
        quad = _solve([[sx[0] + r, sx[1], sx[2]], [sx[1], sx[2] + r, sx[3]], [sx[2], sx[3], sx[4] + r]], sxy[:3])
        if lin is not None and lin[1] < 0:  # a cost never falls with more runs: flat at the mean
            lin = [sxy[0] / sx[0] if sx[0] else 0.0, 0.0]
        if quad is not None:
            hi = max(self.x_max, 1.0) / self.scale
            if quad[1] < 0 or quad[1] + 2 * quad[2] * hi < 0:
                quad = None  # not monotone over the range seen: f^-1 would be ambiguous
        self._coef = [lin, quad]
        self._best = 1 if quad is not None and self.samples >= 8 and self._err[1] < self._err[0] else 0
        self._dirty = False
        self._fitted_at = self.samples

    def _predict_model(self, d: int, x: float) -> float:
        """Model ``d``'s value with the coefficients of the last fit (scoring does not refit)."""
        c = self._coef[d] or self._coef[0]
        if c is None:
            return 0.0
        u = x / self.scale
        return c[0] + c[1] * u + (c[2] * u * u if len(c) > 2 else 0.0)

    def predict(self, x: float) -> float:
        """The fitted value at ``x`` (0 before any sample)."""
        if not self.samples:
            return 0.0
        if self._dirty:
            self._fit()
        y = self._predict_model(self._best, x)
        return y if y > 0.0 else 0.0

    @property
    def model(self) -> str:
        if self._dirty:
            self._fit()
        return ("linear", "quadratic")[self._best]

    def inverse(self, y: float, hi: int) -> int:
        """The largest ``n`` in ``[0, hi]`` with ``predict(n) <= y``; -1 when even ``predict(0) > y``."""
        if self.predict(0) > y:
            return -1
        if self.predict(hi) <= y:
            return hi
        lo, up = 0, hi  # predict(lo) <= y < predict(up)
        while up - lo > 1:
            mid = (lo + up) // 2
            if self.predict(mid) <= y:
                lo = mid
            else:
                up = mid
        return lo


class LatencyModel:
    """The overload detector's arithmetic (see the module docstring); seconds throughout."""

    def __init__(
        self,
        bound: float,
        safety_fraction: float = 0.1,
        hysteresis: float = 0.1,
        min_samples: int = 20,
        forgetting: float = 0.998,
        arrival_smoothing: float = 0.01,
    ) -> None:
        self.bound = bound
        self.safety = safety_fraction * bound
        self.hysteresis = hysteresis
        self.min_samples = min_samples
        self.processing = OnlineFit(forgetting)  # f: event seconds vs runs alive
        self.per_event = OnlineFit(forgetting)  # f_e: event seconds vs runs the event steps
        self.shedding = OnlineFit(forgetting)  # g: pass seconds vs runs scanned
        self.alpha = arrival_smoothing
        self.version = 0  # counts the samples learnt: predictions can change only when it moves
        self.gap: float | None = None  # EWMA of the time between arrivals
        self._last_arrival: float | None = None

    def observe_arrival(self, arrival: float) -> None:
        """An event arrived at ``arrival`` (seconds): update the mean gap between arrivals."""
        last = self._last_arrival
        self._last_arrival = arrival
        if last is None or arrival < last:
            return
        gap = arrival - last
        self.gap = gap if self.gap is None else self.gap + self.alpha * (gap - self.gap)

    def observe(self, n_pm: int, work: int, seconds: float) -> None:
        """One processed event: the runs alive before it, the runs it stepped, how long it took."""
        self.processing.update(n_pm, seconds)
        self.per_event.update(work, seconds)
        self.version += 1

    def observe_shedding(self, scanned: int, seconds: float) -> None:
        self.shedding.update(scanned, seconds)
        self.version += 1

    @property
    def ready(self) -> bool:
        return self.processing.samples >= self.min_samples

    def _drop(self, fit: OnlineFit, queueing: float, n: int, sustain: bool) -> int:
        if n <= 0 or fit.samples < self.min_samples:
            return 0
        ls = self.shedding.predict(n)
        if queueing + fit.predict(n) + ls + self.safety <= self.bound:
            return 0
        keep = fit.inverse(self.bound - self.safety - queueing - ls, n)  # Eq. 5 with b_s: this event fits
        rate = fit.inverse(self.gap, n) if sustain and self.gap is not None else n  # the queue stops growing
        if keep < 0:
            # No count lets this event meet the bound (the queue alone is past it): dropping more cannot help it,
            # only the sustainable count drains the queue -- and above it only (else every event would shed).
            if not sustain or n <= rate:
                return 0
            keep = rate
        else:
            keep = min(keep, max(rate, 0))
        keep = max(0, int(keep * (1.0 - self.hysteresis)))
        return n - keep

    def global_drop(self, queueing: float, n_pm: int) -> int:
        """Algorithm 1: how many of the ``n_pm`` runs alive to shed before processing an event that waited
        ``queueing`` seconds (0: none)."""
        return self._drop(self.processing, queueing, n_pm, True)

    def event_drop(self, queueing: float, work: int) -> int:
        """The per-event guard: how many of the ``work`` runs this event is about to step to shed (0: none)."""
        return self._drop(self.per_event, queueing, work, False)

    def estimate(self, queueing: float, n_pm: int) -> float:
        """The estimated latency ``l_q + l_p + l_s`` of an event (seconds), for metrics."""
        return queueing + self.processing.predict(n_pm)
