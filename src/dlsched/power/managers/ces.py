"""CES, the cluster energy saving service of Helios (Hu et al., SC'21; seeds.md 1.4), run on
the simulated cluster.

Every 10 minutes of simulated time the manager records the cluster's busy nodes, forecasts the
next ``2F`` steps from the simulated past (:mod:`dlsched.power.online_forecast`) and applies the
shrink rule of :func:`dlsched.energy.power_rule.shrink_target`: when demand has been falling, is
forecast lower and no rebound is forecast, it powers off idle nodes down to ``busy + B``. The
rule's wake-up half happens in the simulator: queued jobs wake the nodes they need at once,
which starts the hold-off of ``K`` steps without shrinking.

Differences from the offline replay, by necessity: busy nodes are the simulator's own (jobs
really wait while woken nodes boot), and only idle nodes of partitions without queued jobs can
be powered off, so the count powered may stay above ``busy + B``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dlsched.energy.power_rule import RuleParams, shrink_target
from dlsched.energy.presets import get_preset
from dlsched.energy.series import STEP_S, load_series, series_from_run
from dlsched.power.manager import PowerManager, PowerSnapshot
from dlsched.power.online_forecast import OnlineForecaster


@dataclass
class Ces(PowerManager):
    """Options: ``preset`` (philly, venus, earth, saturn, uranus) with any of its seven
    parameters overridden; ``forecaster`` (lightgbm, seasonal, persistence) with
    ``min_train_days`` of simulated history before the first model and ``retrain_days``
    between trainings; or ``train_series``, a busy-node series (a CSV ``time,active,total`` as
    ``dlsched energy replay`` reads, or a run directory) to train the LightGBM model on before
    the run instead."""

    name = "ces"
    description = "Helios CES: forecast-driven shrink rule, wake on demand"
    preset: str = "philly"
    forecaster: str = "lightgbm"
    min_train_days: float = 2.0
    retrain_days: float = 1.0
    history: int | None = None
    future: int | None = None
    his_th: float | None = None
    fut_th: float | None = None
    de_th: int | None = None
    buffer: int | None = None
    hold_off: int | None = None
    train_series: str | None = None
    params: RuleParams = field(init=False)
    _forecaster: OnlineForecaster | None = field(init=False, default=None)
    _busy: list[int] = field(init=False, default_factory=list)
    _hold_until: int = field(init=False, default=0)
    _step: int = field(init=False, default=0)
    _shrinks: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        overrides = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(RuleParams)
            if getattr(self, f.name) is not None
        }
        self.params = dataclasses.replace(get_preset(self.preset), **overrides)

    @property
    def interval_s(self) -> float:
        return float(STEP_S)

    def bind(self, start_s: float, origin_unix: float | None, seed: int) -> None:
        pretrained = None
        if self.train_series is not None:
            if self.forecaster != "lightgbm":
                raise ValueError("train_series needs forecaster=lightgbm")
            path = Path(self.train_series)
            series = series_from_run(path) if path.is_dir() else load_series(path)
            pretrained = OnlineForecaster.train_on(
                series.busy, series.filled, series.start_s, self.params.max_horizon, seed
            )
        self._forecaster = OnlineForecaster(
            self.forecaster,
            self.params.max_horizon,
            int((origin_unix or 0.0) + start_s),
            seed=seed,
            min_train_days=self.min_train_days,
            retrain_days=self.retrain_days,
            pretrained=pretrained,
        )

    def decide(self, snapshot: PowerSnapshot) -> Sequence[int]:
        if self._forecaster is None:
            raise RuntimeError("the CES manager was not bound to a run")
        i = self._forecaster.observe(snapshot.busy_nodes)
        self._step = i
        self._busy.append(snapshot.busy_nodes)
        p = self.params
        if i < p.history:
            return []
        forecast = self._forecaster.forecast()
        if i < self._hold_until:
            return []
        target = shrink_target(
            p,
            float(np.mean(self._busy[i - p.history : i])),
            snapshot.busy_nodes,
            float(forecast[: p.future].mean()),
            float(forecast[: p.max_horizon].mean()),
            snapshot.powered_nodes,
        )
        if target is None:
            return []
        self._shrinks += 1
        return list(snapshot.eligible[: snapshot.powered_nodes - target])

    def on_wake(self, now: float, nodes: int) -> None:
        self._hold_until = self._step + 1 + self.params.hold_off

    def report(self) -> dict[str, object]:
        out: dict[str, object] = {"ces_params": self.params.to_dict(), "ces_shrinks": self._shrinks}
        if self._forecaster is not None:
            acc = self._forecaster.accuracy()
            out.update(
                forecaster=self.forecaster,
                forecast_pairs=acc.pairs,
                forecast_rmse=acc.rmse,
                forecast_smape=acc.smape,
                forecast_model_steps=acc.model_steps,
                forecast_trainings=acc.trainings,
            )
        return out
