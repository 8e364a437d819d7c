"""The ``Priority*`` parameters of a ``slurm.conf`` excerpt, as the multifactor plugin reads them.

Read by :func:`read_priority_conf`. Lines are ``Key=Value`` pairs separated by blanks, ``#``
starts a comment, keys are case-insensitive (as in Slurm). Recognised:

- ``PriorityWeightAge``, ``PriorityWeightFairshare``, ``PriorityWeightJobSize``,
  ``PriorityWeightPartition``, ``PriorityWeightQOS``: whole numbers >= 0 (default 0);
- ``PriorityMaxAge``, ``PriorityDecayHalfLife``: Slurm times (``MM``, ``MM:SS``, ``HH:MM:SS``,
  ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``; default 7-0);
- ``PriorityFavorSmall``: ``YES``/``NO`` (default NO);
- ``PriorityType``: must be ``priority/multifactor`` when given;
- ``PriorityFlags=NO_FAIR_TREE``: Slurm's classic fair share, the one dlsched models;
- ``PartitionName=NAME ... PriorityJobFactor=N``: a partition's job factor (default 1);
- ``FairShareDampeningFactor``: a whole number >= 1 (default 1), the fair-share exponent's
  divisor;
- ``AccountingStorageEnforce``: only whether it enforces ``limits`` (also set by ``safe`` and
  ``all``), since Slurm charges a job's usage since the last decay pass when it ends only then.

``PriorityCalcPeriod`` and ``PriorityUsageResetPeriod`` are accepted and not used (dlsched
computes priorities exactly when it orders jobs; usage is never reset). Any other ``Priority*``
key (other ``PriorityFlags``, ``PriorityWeightTRES``, ...) is refused, since its effect is not
modelled.
Other keys of ``slurm.conf`` are ignored. Every error names ``file:line`` and the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

WEEK_S = 7 * 86400.0
_WEIGHTS = {
    "priorityweightage": "weight_age",
    "priorityweightfairshare": "weight_fairshare",
    "priorityweightjobsize": "weight_job_size",
    "priorityweightpartition": "weight_partition",
    "priorityweightqos": "weight_qos",
}
_TIMES = {"prioritymaxage": "max_age_s", "prioritydecayhalflife": "decay_half_life_s"}
_UNUSED = {"prioritycalcperiod", "priorityusageresetperiod"}
_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


class SlurmConfError(ValueError):
    """A ``slurm.conf`` excerpt that cannot be read; the message names file:line and key."""


@dataclass(frozen=True)
class PriorityConf:
    """Multifactor weights and parameters (times in seconds); see the module docstring."""

    weight_age: int = 0
    weight_fairshare: int = 0
    weight_job_size: int = 0
    weight_partition: int = 0
    weight_qos: int = 0
    max_age_s: float = WEEK_S
    decay_half_life_s: float = WEEK_S
    favor_small: bool = False
    partition_job_factor: dict[str, int] = field(default_factory=dict)
    fairshare_dampening: int = 1
    enforce_limits: bool = False
    source: str = "<defaults>"


def slurm_time_s(text: str) -> float:
    """Seconds in a Slurm time string (module docstring); ValueError if malformed."""
    m = _TIME.match(text.strip())
    if m is None:
        raise ValueError(text)
    days, first, second, third = m.groups()
    parts = [int(p) for p in (first, second, third) if p is not None]
    if days is not None:
        hours, minutes, seconds = [*parts, 0, 0][:3]
        return float(int(days) * 86400 + hours * 3600 + minutes * 60 + seconds)
    if len(parts) == 3:
        return float(parts[0] * 3600 + parts[1] * 60 + parts[2])
    return float(parts[0] * 60 + (parts[1] if len(parts) == 2 else 0))


def _pairs(line: str, where: str) -> list[tuple[str, str]]:
    pairs = []
    for token in line.split():
        key, eq, value = token.partition("=")
        if not eq or not key:
            raise SlurmConfError(f"{where}: expected KEY=VALUE, got {token!r}")
        pairs.append((key, value))
    return pairs


def parse_priority_conf(text: str, source: str) -> PriorityConf:
    """The :class:`PriorityConf` of ``text``; ``source`` names it in errors."""
    values: dict[str, object] = {}
    partitions: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{source}:{lineno}"
        pairs = _pairs(line, where)
        head = pairs[0][0].lower()
        if head == "partitionname":
            factor = next((v for k, v in pairs if k.lower() == "priorityjobfactor"), "1")
            partitions[pairs[0][1]] = _whole(factor, f"{where}: PriorityJobFactor")
            continue
        for key, value in pairs:
            low = key.lower()
            if low in _WEIGHTS:
                values[_WEIGHTS[low]] = _whole(value, f"{where}: {key}")
            elif low in _TIMES:
                try:
                    values[_TIMES[low]] = slurm_time_s(value)
                except ValueError:
                    raise SlurmConfError(
                        f"{where}: {key}: expected a Slurm time (MM, MM:SS, HH:MM:SS, D-HH, "
                        f"D-HH:MM or D-HH:MM:SS), got {value!r}"
                    ) from None
            elif low == "priorityfavorsmall":
                if value.upper() not in ("YES", "NO"):
                    raise SlurmConfError(f"{where}: {key}: expected YES or NO, got {value!r}")
                values["favor_small"] = value.upper() == "YES"
            elif low == "prioritytype":
                if value != "priority/multifactor":
                    raise SlurmConfError(
                        f"{where}: {key}: expected priority/multifactor, got {value!r}"
                    )
            elif low == "fairsharedampeningfactor":
                dampening = _whole(value, f"{where}: {key}")
                if dampening < 1:
                    raise SlurmConfError(f"{where}: {key}: expected a whole number >= 1, got 0")
                values["fairshare_dampening"] = dampening
            elif low == "accountingstorageenforce":
                enforced = {option.strip().lower() for option in value.split(",")}
                values["enforce_limits"] = bool(enforced & {"limits", "safe", "all"})
            elif low == "priorityflags" and value.upper() == "NO_FAIR_TREE":
                pass  # the classic fair share that slurm_factors models
            elif low.startswith("priority") and low not in _UNUSED:
                raise SlurmConfError(
                    f"{where}: {key}: not modelled by dlsched's multifactor priority; remove it"
                )
    if values.get("max_age_s") == 0:
        raise SlurmConfError(f"{source}: PriorityMaxAge: expected a positive time, got 0")
    return PriorityConf(partition_job_factor=partitions, source=source, **values)  # type: ignore[arg-type]


def _whole(value: str, what: str) -> int:
    if not value.isdigit():
        raise SlurmConfError(f"{what}: expected a whole number >= 0, got {value!r}")
    return int(value)


def read_priority_conf(path: str | Path) -> PriorityConf:
    """:func:`parse_priority_conf` of the file at ``path``; a SlurmConfError naming it when
    it cannot be read."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise SlurmConfError(f"{path}: cannot read the slurm.conf excerpt: {exc}") from None
    return parse_priority_conf(text, str(path))
