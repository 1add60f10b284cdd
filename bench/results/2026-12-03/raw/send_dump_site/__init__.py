"""A folder for ``PYTHONPATH`` (its ``sitecustomize``); a package only so that mypy names it apart."""
