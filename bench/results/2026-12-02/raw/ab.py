"""A/B of broker settings given through its environment: ``ab.py VARIANTS RATES SECONDS``, with
VARIANTS a comma list of names of VARIANT_ENV (one broker a name, in that order) and RATES a
comma list of msgs/s run in turn on each, SECONDS each after the warm-up, over IPC.

A and B need ``yield.diff`` applied: B has the session agent yield its CPU after ringing a
consumer in mid-cycle. D, L0 and W0 are the session agent's idle strategy: the default, the long
spin window off, both spin windows off. Y needs ``spin-yield.diff`` applied: every spin window's
poll (the broker's and the clients') ends in ``sched_yield()``."""

from __future__ import annotations

import sys

from _run import run_variants

_IDLE = "AEROMQ_BROKER_SESSION_IDLE_STRATEGY"
VARIANT_ENV = {
    "A": {"AEROMQ_EXP_YIELD": "0"},
    "B": {"AEROMQ_EXP_YIELD": "1"},
    "D": {},
    "L0": {_IDLE: "doorbell:0,0,1000,1000000,25000000,1000000000,100000,0"},
    "W0": {_IDLE: "doorbell:0,0,1000,1000000,25000000,1000000000,0,0"},
    "Y": {"AEROMQ_EXP_SPIN_YIELD": "1"},
}


def main() -> None:
    seconds = float(sys.argv[3])
    rates = [(int(rate), seconds) for rate in sys.argv[2].split(",")]
    run_variants(sys.argv[1].split(","), VARIANT_ENV, rates)


if __name__ == "__main__":
    main()
