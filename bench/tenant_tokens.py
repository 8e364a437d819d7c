"""Cost of identifying a request's sender with ``dlsched serve --tokens``, by tenant count.

Every known token is compared with the presented one in constant time
(``dlsched.service.api.tenants.Tokens.identify``), so the cost grows with the number of tenants
and does not depend on which tenant, if any, matched. For each tenant count this prints, as one
JSON object a line, the median time per identification (over ``--repeat`` rounds of ``--calls``
calls) for the first tenant's token, the last one's, and an unknown token, and their ratio to
the single-tenant case measured in the same run.

    python bench/tenant_tokens.py [--tenants 1,10,100,1000] [--calls 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from dlsched.service.api.tenants import Principal, Tokens


def tokens_for(n: int) -> Tokens:
    """A token set with ``n`` tenants (tokens of the length ``secrets.token_urlsafe(32)`` gives)."""
    entries = tuple(
        (f"tenant-{i:05d}-" + "x" * 30, Principal(f"t{i}", frozenset({f"q{i}"}))) for i in range(n)
    )
    return Tokens("admin-" + "y" * 37, entries, tenanted=True)


def per_call(tokens: Tokens, header: str, calls: int, repeat: int) -> float:
    """Median seconds per :meth:`Tokens.identify` of ``header``."""
    rounds = []
    for _ in range(repeat):
        began = time.perf_counter()
        for _ in range(calls):
            tokens.identify(header)
        rounds.append((time.perf_counter() - began) / calls)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tenants", default="1,10,100,1000")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    base: float | None = None
    for n in (int(x) for x in args.tenants.split(",")):
        tokens = tokens_for(n)
        first, last = tokens.tenants[0][0], tokens.tenants[-1][0]
        times = {
            who: per_call(tokens, f"Bearer {token}", args.calls, args.repeat)
            for who, token in (("first", first), ("last", last), ("unknown", "z" * 43))
        }
        if base is None:
            base = times["unknown"]
        print(
            json.dumps(
                {
                    "tenants": n,
                    **{f"{who}_us": round(t * 1e6, 2) for who, t in times.items()},
                    "unknown_vs_1_tenant": round(times["unknown"] / base, 1),
                    "last_vs_first": round(times["last"] / times["first"], 2),
                }
            )
        )


if __name__ == "__main__":
    main()
