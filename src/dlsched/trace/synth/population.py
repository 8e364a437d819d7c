"""Who submits what, and when, in a Helios-like trace: users, recurring job templates and their
variants, and the submission times. Durations, GPUs and states come later
(:mod:`dlsched.trace.synth.calibrate`); the model and its parameters are documented in
:mod:`dlsched.trace.synth.helios`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dlsched.trace.synth.data import SLOT_S, SLOTS_PER_DAY, SLOTS_PER_WEEK

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
_USER_ID_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_USER_ID_LENGTH = 4
_UNIFORM_CHUNK = 4096


@dataclass(frozen=True)
class PopulationParams:
    """How users, templates and submissions are drawn (defaults: :mod:`.helios`).

    ``gpus_per_user``: a VC of G GPUs has ``max(1, round(G / gpus_per_user))`` users.
    ``user_zipf``: the k-th most active user of a VC submits in proportion to ``k**-user_zipf``.
    ``template_theta``/``template_discount``: Pitman–Yor concentration and discount of each
    user's choice among old and new templates; ``variant_*`` the same within a template.
    ``batch_mean``: mean jobs per submission (geometric, at most ``batch_max``), submitted
    ``batch_gap_s`` apart on average (exponential gaps).
    """

    gpus_per_user: float = 8.0
    user_zipf: float = 1.3
    template_theta: float = 1.0
    template_discount: float = 0.5
    variant_theta: float = 1.0
    variant_discount: float = 0.25
    batch_mean: float = 2.0
    batch_max: int = 32
    batch_gap_s: float = 3.0

    def __post_init__(self) -> None:
        checks = {
            "gpus_per_user": self.gpus_per_user > 0,
            "user_zipf": self.user_zipf >= 0,
            "template_theta": self.template_theta > -self.template_discount,
            "template_discount": 0 <= self.template_discount < 1,
            "variant_theta": self.variant_theta > -self.variant_discount,
            "variant_discount": 0 <= self.variant_discount < 1,
            "batch_mean": 1 <= self.batch_mean <= self.batch_max,
            "batch_max": self.batch_max >= 1,
            "batch_gap_s": self.batch_gap_s >= 0,
        }
        bad = [
            name for name, ok in checks.items() if not (ok and math.isfinite(getattr(self, name)))
        ]
        if bad:
            raise ValueError(f"invalid population parameters: {', '.join(bad)}")


@dataclass(frozen=True)
class Population:
    """The submissions of a trace, sorted by submit time, and the entities behind them.

    Per job: ``submit`` (seconds from the origin), ``template`` and ``variant`` (global ids).
    Per template: ``template_user``, ``template_rank`` (its creation order within its user).
    Per variant: ``variant_template``, ``variant_rank`` (creation order within its template).
    Per user: ``user_names``, ``user_vc`` (index into ``vc_names``).
    """

    submit: FloatArray
    template: IntArray
    variant: IntArray
    template_user: IntArray
    template_rank: IntArray
    variant_template: IntArray
    variant_rank: IntArray
    user_names: tuple[str, ...]
    user_vc: IntArray
    vc_names: tuple[str, ...]

    @property
    def job_user(self) -> IntArray:
        return self.template_user[self.template]

    @property
    def job_vc(self) -> IntArray:
        return self.user_vc[self.job_user]


class _Uniforms:
    """Uniform draws handed out one at a time from chunks of one generator (fast in loops)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._buffer: list[float] = []
        self._next = 0

    def __call__(self) -> float:
        if self._next == len(self._buffer):
            self._buffer = self._rng.random(_UNIFORM_CHUNK).tolist()
            self._next = 0
        value = self._buffer[self._next]
        self._next += 1
        return value


class _Restaurant:
    """One Pitman–Yor seating process: which table (template or variant) the next customer
    (job) takes. Tables are local indices 0, 1, ... in creation order."""

    __slots__ = ("counts", "seats")

    def __init__(self) -> None:
        self.counts: list[int] = []
        self.seats: list[int] = []

    def seat(self, theta: float, discount: float, uniform: _Uniforms) -> tuple[int, bool]:
        """Seat one customer; ``(table, is_new)``."""
        n, k = len(self.seats), len(self.counts)
        if n == 0 or uniform() * (theta + n) < theta + discount * k:
            self.counts.append(1)
            self.seats.append(k)
            return k, True
        # An old table with probability proportional to (count - discount): pick a past
        # customer's table (proportional to count) and accept with (count - discount) / count.
        while True:
            table = self.seats[min(int(uniform() * n), n - 1)]
            count = self.counts[table]
            if uniform() * count < count - discount:
                break
        self.counts[table] += 1
        self.seats.append(table)
        return table, False


def user_ids(count: int, rng: np.random.Generator) -> tuple[str, ...]:
    """``count`` distinct ids shaped like Helios's hashed users (``u`` + 4 letters/digits)."""
    ids: dict[str, None] = {}
    while len(ids) < count:
        picks = rng.integers(0, len(_USER_ID_CHARS), size=_USER_ID_LENGTH)
        ids["u" + "".join(_USER_ID_CHARS[int(i)] for i in picks)] = None
    return tuple(ids)


def submission_times(
    days: float,
    jobs_per_day: float,
    profile: FloatArray,
    origin_slot: int,
    batch_mean: float,
    rng: np.random.Generator,
) -> FloatArray:
    """Submission-event times over ``[0, days)`` days, sorted: a Poisson process whose rate in
    each 10-minute slot follows the weekly ``profile`` (slot 0 = Monday 00:00; the origin is
    weekly slot ``origin_slot``), scaled so that events × ``batch_mean`` average
    ``jobs_per_day`` per day over whole weeks."""
    if len(profile) != SLOTS_PER_WEEK:
        raise ValueError(f"profile needs {SLOTS_PER_WEEK} slots, got {len(profile)}")
    horizon = days * SLOTS_PER_DAY
    slots = np.arange(math.ceil(horizon), dtype=np.int64)
    rate = profile[(origin_slot + slots) % SLOTS_PER_WEEK]
    rate = rate * (jobs_per_day / batch_mean) / (float(np.mean(profile)) * SLOTS_PER_DAY)
    # The last slot may be cut short by a fractional number of days.
    rate[-1:] *= horizon - slots[-1:]
    counts = rng.poisson(rate)
    starts = np.repeat(slots, counts).astype(np.float64)
    times = (starts + rng.random(starts.size)) * SLOT_S
    times = times[times < days * 86400.0]
    times.sort()
    return times


def draw_population(
    vc_gpus: dict[str, int],
    days: float,
    jobs_per_day: float,
    profile: FloatArray,
    origin_slot: int,
    params: PopulationParams,
    rng: np.random.Generator,
) -> Population:
    """Draw users per VC, submission events, and for each event its user, template, batch of
    jobs and their variants. The same arguments and generator state give the same result."""
    vc_names = tuple(vc_gpus)
    sizes = np.array([vc_gpus[v] for v in vc_names], dtype=np.float64)
    users_per_vc = [max(1, round(g / params.gpus_per_user)) for g in sizes]
    user_vc = np.repeat(np.arange(len(vc_names), dtype=np.int64), users_per_vc)
    user_names = user_ids(len(user_vc), rng)
    first_user = np.concatenate(([0], np.cumsum(users_per_vc)[:-1]))

    events = submission_times(days, jobs_per_day, profile, origin_slot, params.batch_mean, rng)
    n_events = events.size
    event_vc = rng.choice(len(vc_names), size=n_events, p=sizes / sizes.sum())
    event_user = np.empty(n_events, dtype=np.int64)
    for v, n_users in enumerate(users_per_vc):
        weights = np.arange(1, n_users + 1, dtype=np.float64) ** -params.user_zipf
        picks = event_vc == v
        event_user[picks] = first_user[v] + rng.choice(
            n_users, size=int(picks.sum()), p=weights / weights.sum()
        )
    batch = np.minimum(rng.geometric(1.0 / params.batch_mean, size=n_events), params.batch_max)
    gaps = rng.exponential(params.batch_gap_s, size=int(batch.sum()))

    uniform = _Uniforms(rng)
    users = [_Restaurant() for _ in user_names]
    user_templates: list[list[int]] = [[] for _ in user_names]
    variants_of: list[_Restaurant] = []
    variant_ids: list[list[int]] = []
    template_user: list[int] = []
    template_rank: list[int] = []
    variant_template: list[int] = []
    variant_rank: list[int] = []
    job_submit: list[float] = []
    job_template: list[int] = []
    job_variant: list[int] = []
    end = days * 86400.0
    g = 0  # the next unused gap
    for e in range(n_events):
        u = int(event_user[e])
        local, new = users[u].seat(params.template_theta, params.template_discount, uniform)
        if new:
            user_templates[u].append(len(template_user))
            template_rank.append(local)
            template_user.append(u)
            variants_of.append(_Restaurant())
            variant_ids.append([])
        t = user_templates[u][local]
        when = float(events[e])
        for _ in range(int(batch[e])):
            if when >= end:
                break
            local_v, new_v = variants_of[t].seat(
                params.variant_theta, params.variant_discount, uniform
            )
            if new_v:
                variant_ids[t].append(len(variant_template))
                variant_rank.append(local_v)
                variant_template.append(t)
            job_submit.append(when)
            job_template.append(t)
            job_variant.append(variant_ids[t][local_v])
            when += float(gaps[g])
            g += 1

    submit = np.asarray(job_submit, dtype=np.float64)
    order = np.argsort(submit, kind="stable")
    return Population(
        submit=submit[order],
        template=np.asarray(job_template, dtype=np.int64)[order],
        variant=np.asarray(job_variant, dtype=np.int64)[order],
        template_user=np.asarray(template_user, dtype=np.int64),
        template_rank=np.asarray(template_rank, dtype=np.int64),
        variant_template=np.asarray(variant_template, dtype=np.int64),
        variant_rank=np.asarray(variant_rank, dtype=np.int64),
        user_names=user_names,
        user_vc=user_vc,
        vc_names=vc_names,
    )
