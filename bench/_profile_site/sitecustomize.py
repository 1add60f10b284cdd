"""Per-thread profiling at start-up (``bench/_thread_profile.py``): put this folder on
``PYTHONPATH`` and set ``AEROMQ_PROFILE_DIR``, and every Python process started so profiles
each of its threads."""

import os

if os.environ.get("AEROMQ_PROFILE_DIR"):
    from bench._thread_profile import install

    install()
