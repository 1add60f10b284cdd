"""``aeromq admin`` and ``aeromq namesrv`` run against stores and control planes served in this
process by ``tests/broker/control``'s fixtures (``broker``, ``broker_factory``): imported, not
copied."""

from tests.broker.control.conftest import broker, broker_factory

__all__ = ["broker", "broker_factory"]
