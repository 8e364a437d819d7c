"""ONES's progress predictor: a job's ρ is the given quantile of its Beta posterior, so the
same quantile gives the same ρ until the job or the model changes."""

from __future__ import annotations

from dataclasses import replace

import pytest
from scipy.stats import beta

from dlsched.elastic.ones_predictor import BetaProgressPredictor
from dlsched.perf.perfbook import PerfBook
from tests.elastic.helpers import job_at


def trained() -> BetaProgressPredictor:
    predictor = BetaProgressPredictor(seed=0)
    for k, app in enumerate(("cifar10", "ncf")):
        predictor.add(job_at(-1 - k, app, PerfBook().efficiency(app).num_epochs))
    predictor.refit()
    return predictor


def test_untrained_predictor_predicts_nothing() -> None:
    assert BetaProgressPredictor(seed=0).rho([job_at(0, "cifar10", 3)], {0: 0.5}) == {}


def test_rho_is_the_quantile_of_the_posterior() -> None:
    predictor = trained()
    job = job_at(0, "cifar10", 3)
    values = [predictor.rho([job], {0: u})[0] for u in (0.1, 0.5, 0.9)]
    assert 0 < values[0] < values[1] < values[2] < 1
    # the same quantile, the same draw: nothing moves between rounds without new evidence
    assert predictor.rho([job], {0: 0.5})[0] == values[1]
    b = predictor.predict_b(job)
    assert b is not None
    assert values[1] == pytest.approx(beta.median(3, b))
    later = predictor.rho([replace(job, metrics=job_at(0, "cifar10", 4).metrics)], {0: 0.5})[0]
    assert later != values[1]


def test_jobs_before_their_first_epoch_have_no_prediction() -> None:
    predictor = trained()
    assert predictor.rho([job_at(0, "ncf", 0), job_at(1, "ncf", 2)], {0: 0.5, 1: 0.5}).keys() == {1}
