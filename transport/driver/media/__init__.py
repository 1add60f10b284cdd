"""The media driver's UDP media: channel transports (sockets) and the send and receive channel
endpoints that dispatch frames between sockets and streams.

Import from the modules: :mod:`~transport.driver.media.udp_channel_transport`,
:mod:`~transport.driver.media.send_channel_endpoint`,
:mod:`~transport.driver.media.receive_channel_endpoint`,
:mod:`~transport.driver.media.data_packet_dispatcher`.
"""
