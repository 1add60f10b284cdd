"""Per-hop tracing at start-up (``bench/_hop_trace.py``): put this folder on ``PYTHONPATH`` and
set ``AEROMQ_HOPS_DIR``, and every Python process started so records its hops there."""

import os

if os.environ.get("AEROMQ_HOPS_DIR"):
    from bench._hop_trace import install

    install()
