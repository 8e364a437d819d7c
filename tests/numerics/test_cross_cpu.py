"""Fits and the simulations that use them give the same bits whatever the CPU.

A CPU changes two things under NumPy: the OpenBLAS kernels (chosen by CPU model at load time)
and NumPy's own vector code for ``exp``, ``log``, ``pow`` and the like (AVX-512 or AVX2,
chosen at import). Both can be forced to what a lesser CPU would get: ``OPENBLAS_CORETYPE``
names the kernels, ``NPY_DISABLE_CPU_FEATURES`` turns dispatch targets off. Each test runs
``tests/numerics/fingerprint.py`` as this CPU runs it and as each lesser CPU it can imitate
would, checks from OpenBLAS's own report that the imitation took effect, and requires identical
output. Before the fits moved to :mod:`dlsched.numerics`, the AVX2 imitation changed the
Optimus reference figures by up to 0.15% (the failure first seen on an AMD EPYC without
AVX-512 against references made on an Intel Xeon with it).
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from numpy._core._multiarray_umath import __cpu_dispatch__

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Imitation:
    """A lesser x86-64 CPU: the OpenBLAS kernels it gets and the NumPy targets it lacks."""

    name: str
    core: str
    needs: frozenset[str]  # /proc/cpuinfo flags the kernels need
    off: tuple[str, ...]  # NumPy dispatch targets such a CPU lacks


def _targets(*patterns: str) -> tuple[str, ...]:
    return tuple(t for t in __cpu_dispatch__ if any(re.fullmatch(p, t) for p in patterns))


AVX512 = (r"X86_V4", r"AVX512.*")
AVX2 = (*AVX512, r"X86_V3", r"AVX2", r"FMA3", r"F16C")
IMITATIONS = (
    Imitation(
        "avx2 (AMD Zen 2/3, Intel Haswell)",
        "Haswell",
        frozenset({"avx2", "fma"}),
        _targets(*AVX512),
    ),
    Imitation("avx (Intel Sandy Bridge)", "Sandybridge", frozenset({"avx"}), _targets(*AVX2)),
    Imitation(
        "sse4.2 (Intel Nehalem; NumPy's baseline)",
        "Nehalem",
        frozenset({"sse4_2"}),
        _targets(*AVX2),
    ),
)


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    found = re.search(r"^flags\s*:(.*)$", text, re.MULTILINE)
    return set(found.group(1).split()) if found else set()


@functools.cache
def native(quick: bool) -> tuple[dict[str, object], str]:
    """This CPU's own fingerprint (computed once per test session)."""
    return fingerprint({}, quick)


def fingerprint(env: dict[str, str], quick: bool) -> tuple[dict[str, object], str]:
    """The fingerprint's output under ``env``, and the OpenBLAS core it reported."""
    argv = [sys.executable, "-m", "tests.numerics.fingerprint"]
    if quick:
        argv.append("--fits")
    done = subprocess.run(
        argv,
        cwd=REPO,
        env={**os.environ, "OPENBLAS_VERBOSE": "2", **env},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    core = re.search(r"Core: (\w+)", done.stderr)
    return json.loads(done.stdout), core.group(1) if core else "?"


def imitations() -> list[object]:
    if sys.platform != "linux" or os.uname().machine != "x86_64":
        return [pytest.param(None, marks=pytest.mark.skip(reason="imitates x86-64 CPUs only"))]
    flags = cpu_flags()
    out = []
    for imitation in IMITATIONS:
        marks = []
        if not imitation.needs <= flags:
            marks.append(pytest.mark.skip(reason=f"this CPU lacks {sorted(imitation.needs)}"))
        out.append(pytest.param(imitation, marks=marks, id=imitation.core))
    return out


def compare(imitation: Imitation, quick: bool) -> None:
    own, native_core = native(quick)
    env = {"OPENBLAS_CORETYPE": imitation.core}
    if imitation.off:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(imitation.off)
    imitated, core = fingerprint(env, quick)
    assert core == imitation.core, f"OpenBLAS ran {core}, not {imitation.core}"
    if native_core == core and not imitation.off:
        pytest.skip(f"this CPU already runs the {core} kernels")
    differ = sorted(k for k in own if own[k] != imitated.get(k))
    assert sorted(own) == sorted(imitated)
    assert not differ, f"as {imitation.name} (native {native_core}): {differ}"


@pytest.mark.parametrize("imitation", imitations()[:1])
def test_fits_are_the_same_bits_on_a_cpu_without_avx512(imitation: Imitation) -> None:
    compare(imitation, quick=True)


@pytest.mark.long
@pytest.mark.parametrize("imitation", imitations())
def test_fits_and_runs_are_the_same_bits_on_lesser_cpus(imitation: Imitation) -> None:
    compare(imitation, quick=False)
