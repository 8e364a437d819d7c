"""The five published CES parameter sets (Hu et al., "Characterization and Prediction of Deep
Learning Workloads in Large-Scale GPU Datacenters", SC'21, and its artifact
S-Lab-System-Group/HeliosArtifact; restated in seeds.md 1.4).

Venus, Earth, Saturn and Uranus are the four Helios clusters; Philly is the Microsoft cluster
whose busy-node series (420 nodes) the artifact replays.
"""

from __future__ import annotations

from dlsched.energy.power_rule import RuleParams

PRESETS: dict[str, RuleParams] = {
    "venus": RuleParams(history=3, future=18, his_th=0.5, fut_th=1, de_th=2, buffer=5, hold_off=12),
    "earth": RuleParams(history=6, future=18, his_th=1, fut_th=1, de_th=5, buffer=5, hold_off=12),
    "saturn": RuleParams(history=6, future=18, his_th=1, fut_th=1, de_th=1, buffer=5, hold_off=12),
    "uranus": RuleParams(history=3, future=18, his_th=1, fut_th=1, de_th=1, buffer=7, hold_off=12),
    "philly": RuleParams(
        history=2, future=30, his_th=0.1, fut_th=0, de_th=1, buffer=20, hold_off=10
    ),
}
PRESET_NAMES = tuple(PRESETS)


def get_preset(name: str) -> RuleParams:
    """The parameters of preset ``name`` (case-insensitive); ValueError listing the known
    names otherwise."""
    try:
        return PRESETS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown CES preset {name!r}; known: {', '.join(PRESET_NAMES)}") from None
