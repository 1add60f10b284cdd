"""The ``aeromq`` command line: one console script whose subcommands live in their packages."""

__version__ = "0.1.0"
