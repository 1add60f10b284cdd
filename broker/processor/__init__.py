"""The broker's request processors, independent of what carries a request.

Each processor takes protobuf request messages (``proto/``) and returns protobuf responses, or
completes a callback for a request it holds (a long poll). The transport session server and the
gRPC servicers both call them; nothing here knows a socket, a channel or a gRPC context.

Data plane: ``send``, ``pull``, ``pull_hold``. Control plane: ``topics``, ``route``, ``offsets``,
``consumer_groups``, ``stats`` and ``admin`` (which bundles them for the servicers).
"""
