"""The media driver's ``aeron:ipc`` media: publications whose log subscribers map directly.

:class:`~transport.driver.ipc.ipc_streams.IpcStreams` is the conductor's side of the media (it
adds publications and subscriptions and links them); an
:class:`~transport.driver.ipc.ipc_publication.IpcPublication` is one shared log, its limit, its
cleaning and its life cycle. There are no agents of its own: the conductor does all the work.
What IPC shares with UDP (logs, counters, session ids, subscription links, subscriber positions)
is in ``transport/driver/``.

Import from the modules: :mod:`~transport.driver.ipc.ipc_streams`,
:mod:`~transport.driver.ipc.ipc_publication`.
"""
