"""Suites for the tests of ``python -m bench all``: one that works (with a failed case), one
that raises, one that hangs with a child process."""
