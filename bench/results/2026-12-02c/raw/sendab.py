"""``sendab.py VARIANTS SECONDS``: send() one at a time with no consumer, on a fresh broker per
variant (ab.py's VARIANT_ENV names), in the order given."""

from __future__ import annotations

import sys

from _run import broker_with, print_row, run
from ab import VARIANT_ENV

from bench._schedule import Plan


def main() -> None:
    variants, seconds = sys.argv[1].split(","), float(sys.argv[2])
    for i, variant in enumerate(variants):
        with broker_with(VARIANT_ENV[variant]) as (broker, admin):
            result = run(broker, admin, f"S{i}", Plan(None, 10**8, 0.0, seconds))
            print_row(
                variant=variant,
                msgs_per_s=result.msgs_per_s,
                send_p50_us=result.extra.get("send_p50_us"),
                send_p99_us=result.extra.get("send_p99_us"),
                cpu=result.extra.get("cpu"),
            )


if __name__ == "__main__":
    main()
