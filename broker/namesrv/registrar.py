"""The broker's side of the name server: register with every topic, heartbeat, re-register
when topics change or the name server asks, unregister at shutdown (RocketMQ's
``BrokerOuterAPI.registerBrokerAll`` on its 30 s timer, here every ``interval_ms``).

A name server that is down is retried on the next beat; the broker keeps serving (its own
``QueryRoute`` still answers). The name server drops a broker silent for
``heartbeat_timeout_ms`` (three intervals by default).

Caller: the broker (``start`` after its ports are bound and endpoints published, ``stop``
at shutdown).
"""

from __future__ import annotations

import logging
import threading

from aeromq.broker.processor.admin import ControlPlane
from aeromq.client._errors import ClientError
from aeromq.client.grpc_client import GrpcClient
from aeromq.proto import namesrv_pb2

__all__ = ["NameServerRegistrar"]

_log = logging.getLogger(__name__)


class NameServerRegistrar:
    """Keeps this broker registered with the name server at ``namesrv_address``."""

    def __init__(
        self,
        control: ControlPlane,
        namesrv_address: str,
        interval_ms: int,
        *,
        heartbeat_timeout_ms: int | None = None,
        timeout_s: float = 3.0,
    ) -> None:
        self._control = control
        self._interval_s = interval_ms / 1000.0
        self._heartbeat_timeout_ms = heartbeat_timeout_ms or 3 * interval_ms
        self._client = GrpcClient(namesrv_address, timeout_s=timeout_s)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._registered_version: int | None = None
        self.registrations = 0
        control.topics.add_listener(self._on_topic_change)

    @property
    def namesrv_address(self) -> str:
        return self._client.address

    def start(self) -> None:
        """Register now (failures are retried on the timer) and start beating."""
        if self._thread is not None:
            return
        self._beat(force_register=True)
        self._thread = threading.Thread(target=self._run, name="aeromq-namesrv-beat", daemon=True)
        self._thread.start()

    def stop(self, unregister: bool = True) -> None:
        """Stop beating and (by default) unregister, so routes stop naming this broker."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        if unregister:
            identity = self._control.identity
            try:
                self._client.unregister_broker(identity.cluster_name, identity.broker_name)
            except ClientError as exc:
                _log.warning("unregister from the name server failed: %s", exc)
        self._client.close()

    def _on_topic_change(self, topic: str) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self._interval_s)
            self._wake.clear()
            if self._stop.is_set():
                return
            self._beat(force_register=False)

    def _data_version(self) -> int:
        return self._control.store.topic_config.data_version[1]

    def _beat(self, force_register: bool) -> None:
        identity = self._control.identity
        version = self._data_version()
        try:
            register = force_register or version != self._registered_version
            if not register:
                register = self._client.broker_heartbeat(
                    identity.cluster_name, identity.broker_name, version
                )
            if register:
                self._register(version)
        except ClientError as exc:
            self._registered_version = None
            _log.warning("name server unreachable: address=%s %s", self._client.address, exc)

    def _register(self, version: int) -> None:
        identity = self._control.identity
        request = namesrv_pb2.RegisterBrokerRequest(
            cluster_name=identity.cluster_name,
            broker_name=identity.broker_name,
            endpoints=identity.endpoints,
            topics=self._control.routes.topic_configs(),
            data_version=version,
            heartbeat_timeout_ms=self._heartbeat_timeout_ms,
        )
        self._client.register_broker(request)
        self._registered_version = version
        self.registrations += 1
        _log.info(
            "registered with the name server: address=%s topics=%d version=%d",
            self._client.address,
            len(request.topics),
            version,
        )
