"""Scraping a live broker's ``/metrics`` in tests: samples by name and labels, and the broker
process the observability tests start."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from aeromq.broker.testing import ServerProcess, start_broker_process

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    """Every sample of ``url`` (a Prometheus text page), by (sample name, labels)."""
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample ``name`` with exactly ``labels`` (KeyError naming what there is, if none)."""
    key = (name, frozenset(labels.items()))
    if key not in samples:
        near = sorted(str(dict(k[1])) for k in samples if k[0] == name)
        raise KeyError(f"no sample {name}{labels}; with that name: {near}")
    return samples[key]


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, have), v in samples.items() if n == name and wanted <= have)


def wait_for_metric(url: str, check: Callable[[Samples], bool], timeout_s: float = 30.0) -> Samples:
    """Scrape every 100 ms until ``check`` holds (the last scrape, whatever it shows)."""
    deadline = time.monotonic() + timeout_s
    samples = scrape(url)
    while not check(samples) and time.monotonic() < deadline:
        time.sleep(0.1)
        samples = scrape(url)
    return samples


def labels_of(samples: Samples, name: str) -> list[Mapping[str, str]]:
    return [dict(have) for (n, have) in samples if n == name]


def start_observed_broker(directory: Path) -> ServerProcess:
    """A broker process for the observability tests: IPC only, 16 MiB segments, its data in
    ``directory/data``."""
    return start_broker_process(
        directory / "data",
        extra_args=["--ingress-udp-endpoint", "none", "--commit-log-segment-bytes", "16MiB",
                    "--log-level", "WARNING"],
    )  # fmt: skip
