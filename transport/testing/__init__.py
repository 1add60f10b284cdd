"""Test helpers shipped with the transport: raw protocol clients and fake peers.

Import the helpers from their modules (``aeromq.transport.testing.driver_client``); this package
imports nothing itself, so a helper's dependencies load only when it is used.
"""
