"""The media driver's ``aeron:udp`` media: network publications, images and their agents.

- the conductor's side: :mod:`~transport.driver.udp.udp_streams` (which owns the agents),
  ``udp_publications.py`` (send endpoints, network publications) and ``udp_subscriptions.py``
  (receive endpoints, subscriptions, images: which SETUPs may become one,
  ``image_admission.py``, and how one is built, ``image_factory.py``), with the channel
  (``udp_channel.py``), the settings (``udp_settings.py``) and the counters
  (``network_counters.py``);
- the agents, reached only through ``network_proxies.py``: ``sender.py`` with
  ``network_publication.py`` (its SETUP, heartbeat and RTTM frames in ``publication_frames.py``),
  ``flow_control.py`` and ``retransmit_handler.py``; ``receiver.py``
  with ``publication_image.py`` and ``loss_detector.py``;
- the sockets: ``udp_channel_transport.py``, ``send_channel_endpoint.py``,
  ``receive_channel_endpoint.py`` and ``data_packet_dispatcher.py``.

What UDP shares with IPC (logs, counters, session ids, subscription links, subscriber positions)
is in ``transport/driver/``; ``docs/transport-udp.md`` maps the modules and the protocol.
Import from the modules.
"""
