"""Runnable examples of the Spark connector (``python -m aeromq.pipeline.examples.NAME``)."""
