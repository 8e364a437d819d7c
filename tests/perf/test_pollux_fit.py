"""The Pollux throughput model: its formula, its fit to step times, its held-out error."""

from __future__ import annotations

import dataclasses
import math

import pytest
import typer
from typer.testing import CliRunner

from dlsched.cli.perf_cmd import perf_app
from dlsched.perf.pollux_fit import (
    PolluxModel,
    PolluxParams,
    fit_pollux,
    fit_profile,
    fitted_model,
    predict,
    split_holdout,
)
from dlsched.perf.profiles import APPLICATIONS, SOURCE_VARIANTS, StepSample, load_profile

KNOWN = PolluxParams(
    alpha_c=0.02, beta_c=0.001, alpha_r=0.01, beta_r=0.002, alpha_n=0.05, beta_n=0.004, gamma=2.5
)

# Held-out mean relative error on the T4 profiles measured when this was written (every 5th
# configuration held out): bert 6.9%, cifar10 7.6%, deepspeech2 7.6%, imagenet 8.0%,
# ncf 9.7%, yolov3 10.1%.
T4_BOUND = 0.12
# Sia's variants fit worse: azure imagenet 38% (its 2-node and 3-5-node rows disagree), and
# yolov3 step time is a sawtooth in local batch the linear compute term cannot follow.
SIA_BOUND = 0.40


def test_formula() -> None:
    m = PolluxModel(KNOWN)
    t_c = 0.02 + 0.001 * 64
    assert m(1, 1, 64) == pytest.approx(t_c)  # one replica: no synchronization
    t_n = 0.05 + 0.004 * 6
    assert m(2, 8, 64) == pytest.approx((t_c**2.5 + t_n**2.5) ** (1 / 2.5))
    assert m.network_time(1, 2) == pytest.approx(0.01 + 0.002 * 1e-8)
    assert m(2, 8, 64, accum_steps=3) == pytest.approx(3 * t_c + m(2, 8, 64))
    assert m.throughput(2, 8, 64, 3) == pytest.approx(8 * 64 * 4 / m(2, 8, 64, 3))
    additive = PolluxModel(dataclasses.replace(KNOWN, gamma=1.0))
    assert additive(2, 8, 64) == pytest.approx(t_c + t_n)


def synthetic(params: PolluxParams) -> list[StepSample]:
    m = PolluxModel(params)
    out = []
    for placement in [(1,), (2,), (4,), (1, 1), (2, 2), (4, 4), (1, 3), (4, 4, 4, 4)]:
        n, r = len(placement), sum(placement)
        for b in (16, 32, 64, 128, 256):
            t = m(n, r, b)
            out.append(StepSample(placement, n, r, b, t, t - m.compute_time(b)))
    return out


def test_fit_recovers_known_parameters() -> None:
    fitted = fit_pollux(synthetic(KNOWN))
    for field in dataclasses.fields(PolluxParams):
        assert getattr(fitted, field.name) == pytest.approx(getattr(KNOWN, field.name), rel=1e-3)


def test_fit_without_cross_node_data_copies_the_node_pair() -> None:
    one_node = [s for s in synthetic(KNOWN) if s.nodes == 1]
    fitted = fit_pollux(one_node)
    assert (fitted.alpha_n, fitted.beta_n) == (fitted.alpha_r, fitted.beta_r)
    with pytest.raises(ValueError):
        fit_pollux([])


def test_holdout_split_is_by_configuration() -> None:
    samples = load_profile("cifar10").samples
    train, test = split_holdout(samples, every=5)
    assert len(train) + len(test) == len(samples)

    def key(s: StepSample) -> tuple[int, int, tuple[int, ...]]:
        return (s.nodes, s.replicas, s.placement)

    assert not {key(s) for s in train} & {key(s) for s in test}
    configs = len({key(s) for s in samples})
    assert len({key(s) for s in test}) == configs // 5
    with pytest.raises(ValueError):
        split_holdout(samples, every=1)


@pytest.mark.parametrize("app", APPLICATIONS)
def test_t4_held_out_error(app: str) -> None:
    report = fit_profile(load_profile(app))
    assert report.test_rows > 0.1 * (report.train_rows + report.test_rows)
    assert report.test_mre < T4_BOUND
    assert report.train_mre < T4_BOUND
    p = report.params
    assert all(v >= 0 for v in dataclasses.astuple(p))
    assert 1.0 <= p.gamma <= 10.0
    # Synchronizing across nodes costs more than within one, on the T4 testbed.
    assert p.alpha_n > p.alpha_r


@pytest.mark.parametrize("variant", [v for v in SOURCE_VARIANTS["sia"] if v != "t4"])
def test_sia_held_out_error(variant: str) -> None:
    for app in APPLICATIONS:
        report = fit_profile(load_profile(app, variant))
        assert report.test_mre < SIA_BOUND, (app, variant, report.test_mre)


def test_fit_is_deterministic() -> None:
    samples = load_profile("imagenet").samples
    assert fit_pollux(samples) == fit_pollux(samples)
    model = fitted_model("imagenet")
    assert model is fitted_model("imagenet")
    assert model.params == fit_pollux(samples)
    assert len(predict(model.params, samples)) == len(samples)
    assert all(math.isfinite(t) and t > 0 for t in predict(model.params, samples))


def cli() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(perf_app, name="perf")
    return app


def test_cli_prints_parameters_and_errors() -> None:
    result = CliRunner().invoke(cli(), ["perf", "fit", "--app", "cifar10"])
    assert result.exit_code == 0, result.output
    header, row = result.output.strip().splitlines()
    assert "testMRE" in header and "γ" in header
    assert row.split()[:3] == ["cifar10", "t4", "T4"]


def test_cli_sia_lists_every_variant() -> None:
    result = CliRunner().invoke(cli(), ["perf", "fit", "--app", "ncf", "--profiles", "sia"])
    assert result.exit_code == 0, result.output
    variants = [line.split()[1] for line in result.output.strip().splitlines()[1:]]
    assert variants == list(SOURCE_VARIANTS["sia"])


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--app", "gpt"], "unknown application"), (["--profiles", "gavel"], "unknown profiles")],
)
def test_cli_rejects_bad_names(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli(), ["perf", "fit", *args])
    assert result.exit_code == 2
    assert message in result.output
