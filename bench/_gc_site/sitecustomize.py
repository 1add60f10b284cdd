"""The garbage collector's recorder at start-up (``bench/_gc_stats.py``): put this folder on
``PYTHONPATH`` and set ``AEROMQ_BENCH_GC_DIR``, and every Python process started so records its
collections there."""

import os

if os.environ.get("AEROMQ_BENCH_GC_DIR"):
    from bench._gc_stats import install

    install()
