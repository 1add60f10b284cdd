"""With this folder on ``PYTHONPATH`` and ``SEND_DUMP=PREFIX`` set, the latency suite's producer
(``bench._latency_roles.ProducerRun``) pickles its schedule's start, rate and every send's
duration and lag to ``PREFIX.<pid>.pkl`` as its run ends, so single slow sends can be set
against a scheduler record (round.md, "The stalls at 5,000 msgs/s, recorded lighter")."""

from __future__ import annotations

import os
import pickle


def _patch() -> None:
    try:
        from bench import _latency_roles as roles
        from bench._schedule import Pacer
    except ImportError:  # not a process of the bench
        return
    original = roles.ProducerRun.end

    def end(self: roles.ProducerRun, pacer: Pacer) -> None:
        prefix = os.environ.get("SEND_DUMP")
        if prefix:
            with open(f"{prefix}.{os.getpid()}.pkl", "wb") as out:
                pickle.dump(
                    {
                        "t0_ns": pacer.t0_ns,
                        "rate": self.plan.rate,
                        "durations_ns": list(pacer.durations_ns),
                        "lags_ns": list(pacer.lags_ns),
                    },
                    out,
                )
        original(self, pacer)

    roles.ProducerRun.end = end  # type: ignore[method-assign]  # an experiment's wrap, on purpose


_patch()
