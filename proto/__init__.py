"""aeromq's wire schema: the ``.proto`` files of package ``aeromq.v1`` and the Python code
generated from them (``<name>_pb2.py``, ``<name>_pb2_grpc.py`` and their ``.pyi`` stubs).

The generated modules are not edited by hand: change a ``.proto`` file and run
``python -m aeromq.proto.generate``; ``tests/proto/test_generated_current.py`` fails when they are
stale. Nothing is re-exported here, so importing ``aeromq.proto`` costs nothing; import the module you
need (``from aeromq.proto import messages_pb2``).
"""
