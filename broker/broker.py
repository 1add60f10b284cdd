"""``Broker``: the running broker service, assembled from its parts.

::

    producers / consumers ──ingress (aeron:ipc, aeron:udp)──> SessionAgent ──> SendProcessor ──> MessageStore
                <──────────── response channels ──────────────    │        ──> PullProcessor ──┘    │
                                                                  │              PullHoldService <──┘ arrivals

:meth:`Broker.start`, in order: the media driver (embedded in a fresh directory, or the external
one of ``aeron_dir``), the store (recovery runs here: :attr:`Broker.recovery_report` says what
it found), the timer service (``broker.timer``: timer messages held until due), the long-poll hold service, the processors, the ingress subscriptions (IPC, and UDP
when an endpoint is set) and the session agent on its own thread. In a broker group
(``etcd_endpoints`` set) the member then joins its group once its gRPC port is bound
(:class:`~aeromq.broker.replication.GroupMember`: etcd, elections, replication over UDP), and
the processors refuse what only the leader may do.

:meth:`Broker.shutdown` is graceful and bounded: stop reading the ingress, answer held pulls,
shut the store down (every append made durable, its SYNC answers settled, a clean checkpoint),
send the answers still queued, close the sessions with a notice, then the transport.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Final

from aeromq.broker._embedded_driver import (
    client_conductor_idle_strategy,
    embedded_driver_context,
)
from aeromq.broker._group_views import GroupEndpointLeadership, replication_status
from aeromq.broker.broker_id import load_or_create_broker_id
from aeromq.broker.config import BrokerConfig
from aeromq.broker.grpc.server import BrokerGrpcServer
from aeromq.broker.namesrv.registrar import NameServerRegistrar
from aeromq.broker.observability import ObservabilityServer, TopicMeter
from aeromq.broker.ports import free_ports
from aeromq.broker.processor.admin import ControlPlane
from aeromq.broker.processor.pull import PullProcessor
from aeromq.broker.processor.pull_hold import PullHoldService
from aeromq.broker.processor.send import SendProcessor
from aeromq.broker.replication import GroupMember, GroupSettings
from aeromq.broker.rocketmq import RocketMQEndpoint
from aeromq.broker.security import Acl, acl_of, tls_of, warn_if_exposed
from aeromq.broker.session import (
    LocalReadGrant,
    SessionAgent,
    SessionServerConfig,
    new_image_handler,
    park_until_due,
    session_idle_strategy,
)
from aeromq.broker.store import MessageStore, RecoveryReport
from aeromq.broker.timer import TimerService
from aeromq.broker.transaction import TRANSACTION_SERVICE, TransactionService, TransactionServicer
from aeromq.common import GcTuning, ResponseCode, tune_gc
from aeromq.proto import common_pb2
from aeromq.transport import TransportError
from aeromq.transport.client import Aeron, AeronContext, Subscription
from aeromq.transport.concurrent.agent import AgentRunner
from aeromq.transport.driver import MediaDriver, MediaDriverContext, with_doorbell
from aeromq.transport.util import name_os_threads

__all__ = ["Broker"]

_log = logging.getLogger(__name__)

_DRAIN_TIMEOUT_S: Final = 5.0
_ERROR_CODES: Final = (
    ResponseCode.TOPIC_NOT_EXIST,
    ResponseCode.NO_PERMISSION,
    ResponseCode.MESSAGE_ILLEGAL,
    ResponseCode.INVALID_PARAMETER,
    ResponseCode.SUBSCRIPTION_PARSE_FAILED,
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
    ResponseCode.SERVICE_NOT_AVAILABLE,
    ResponseCode.SYSTEM_ERROR,
    ResponseCode.FLUSH_DISK_TIMEOUT,
)


class Broker:
    """One broker process's services (see module); ``with Broker(config) as broker:``."""

    def __init__(
        self,
        config: BrokerConfig | None = None,
        *,
        session_config: SessionServerConfig | None = None,
        driver_context: MediaDriverContext | None = None,
    ) -> None:
        self.config = config or BrokerConfig()
        self.session_config = session_config or SessionServerConfig(
            session_timeout_ms=self.config.session_timeout_ms
        )
        self._driver_context = driver_context
        self.driver: MediaDriver | None = None
        self.aeron: Aeron | None = None
        self.store: MessageStore | None = None
        self.hold: PullHoldService | None = None
        self.timer: TimerService | None = None
        self.transactions: TransactionService | None = None
        self.send_processor: SendProcessor | None = None
        self.pull_processor: PullProcessor | None = None
        self.session_agent: SessionAgent | None = None
        self.control_plane: ControlPlane | None = None
        self.grpc_server: BrokerGrpcServer | None = None
        self.acl: Acl | None = None
        self.registrar: NameServerRegistrar | None = None
        self.rocketmq: RocketMQEndpoint | None = None
        self.observability: ObservabilityServer | None = None
        self.group: GroupMember | None = None
        self.meter = TopicMeter()
        self.recovery_report: RecoveryReport | None = None
        self.aeron_dir = ""
        self.broker_id = ""
        """Made at the store's first start and kept in it (``broker/broker_id.py``)."""
        self._subscriptions: list[Subscription] = []
        self._udp_channel: str | None = None
        self._runner: AgentRunner | None = None
        self._lock = threading.Lock()
        self._running = False
        self._stopped = threading.Event()
        self.failure: TransportError | None = None
        """Why the data plane stopped for good (its transport client terminated: the driver
        dropped it, or died), else None; ``aeromq broker`` then exits with status 1."""

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> Broker:
        """Start every service (see module); on a failure, what started is stopped again."""
        with self._lock:
            if self._running:
                return self
            try:
                self._start()
            except BaseException:
                self._stop()
                raise
            self._running = True
        name_os_threads()  # the services' threads, in top -H and /proc (docs/latency.md)
        return self

    def tune_gc(self) -> GcTuning:
        """Set this process's garbage collector as the config says, once started: what the
        start-up left collected once and frozen (``gc_freeze``), the thresholds
        ``gc_threshold`` (``aeromq.common.tune_gc``). ``aeromq broker`` calls it; a broker
        embedded in an application's process leaves the collector alone unless the application
        calls it. Affects: the whole process's collector."""
        config = self.config
        tuning = tune_gc(config.gc_threshold_numbers, freeze=config.gc_freeze)
        _log.info(
            "garbage collector: %d start-up objects frozen, thresholds %s (were %s)",
            tuning.frozen,
            ",".join(map(str, tuning.threshold)),
            ",".join(map(str, tuning.previous_threshold)),
        )
        return tuning

    def _start(self) -> None:
        # port 0: bind known ports, chosen together so they differ (the gRPC port is also the
        # store host's port; routes and a group's member key name the RocketMQ port)
        grpc_port, rocketmq_port = self.config.grpc_port, self.config.rocketmq_port
        wanted = [grpc_port == 0, rocketmq_port == 0 and self._rocketmq_allowed()]
        if any(wanted):
            chosen = iter(free_ports(socket.SOCK_STREAM, self.config.grpc_host, sum(wanted)))
            self.config = self.config.with_overrides(
                grpc_port=next(chosen) if wanted[0] else grpc_port,
                rocketmq_port=next(chosen) if wanted[1] else rocketmq_port,
            )
        config = self.config
        self.acl = acl_of(config)
        self._start_transport()
        store = self.store = MessageStore(config.to_store_config())
        report = self.recovery_report = store.start()
        self.broker_id = load_or_create_broker_id(config.data_dir, config.file_mode)
        message = report.describe(
            config.flush_mode, config.flush_interval_ms, group=config.group_mode
        )
        if (report.clean_shutdown or report.end_offset == 0) and report.truncated_at is None:
            _log.info("%s", message)
        else:
            _log.warning("%s", message)
        if config.timer_enabled:  # before any send: it hooks the put path
            self.timer = TimerService(store, max_delay_ms=config.timer_max_delay_ms)
            self.timer.start()
        self.transactions = TransactionService(  # before any send: it hooks the put path
            store,
            timeout_ms=config.transaction_timeout_ms,
            check_max=config.transaction_check_max,
            check_interval_ms=config.transaction_check_interval_ms,
        )
        self.transactions.start()
        hold = self.hold = PullHoldService(store.get_max_offset, config.long_polling_max_suspend_ms)
        hold.start()
        store.add_arrival_listener(hold.on_arrival)
        aeron = self.aeron
        assert aeron is not None
        group = self.group = self._group_member(aeron, store)
        self.send_processor = SendProcessor(
            store,
            config.broker_name,
            max_message_size=config.max_message_size,
            auto_create_topic=config.auto_create_topic,
            default_queue_nums=config.default_queue_count,
            meter=self.meter,
            leadership=group,
        )
        self.pull_processor = PullProcessor(
            store, hold, config.broker_name, meter=self.meter, leadership=group
        )
        idle, doorbell = session_idle_strategy(
            aeron, config.session_idle_strategy, config.broker_name
        )
        on_image = new_image_handler(idle)  # a connecting client wakes the agent
        self._subscriptions.append(
            aeron.add_subscription(
                config.ingress_ipc_channel, config.ingress_ipc_stream_id, on_image
            )
        )
        udp_channel = self._udp_channel = _resolve_udp_channel(config.ingress_udp_endpoint)
        if udp_channel is not None:
            rung = (
                udp_channel if doorbell is None else with_doorbell(udp_channel, doorbell.counter_id)
            )
            self._subscriptions.append(  # the driver rings the agent as requests land
                aeron.add_subscription(rung, config.ingress_udp_stream_id, on_image)
            )
        agent = self.session_agent = SessionAgent(
            aeron,
            self._subscriptions,
            self.send_processor,
            self.pull_processor,
            config.broker_name,
            config=self.session_config,
            max_message_size=config.max_message_size,
            acl=self.acl,
            doorbell=doorbell,
            local_reads=(
                LocalReadGrant.of(
                    store.config.commit_log_dir,
                    config.commit_log_segment_bytes,
                    store.config.file_mode,
                )
                if config.local_reads_enabled
                else None
            ),
        )
        park_until_due(idle, agent)  # sleep until rung or the sweep while every client rings
        store.add_arrival_listener(agent.on_store_arrival)  # lazy pulls wait for other writers
        self._runner = AgentRunner(idle, self._on_agent_error, None, agent)
        self._runner.start()
        self._start_control_plane(store)
        if group is not None:
            assert self.grpc_server is not None
            group.start(self.endpoints(self.grpc_server.address))
        self._start_rocketmq(store)
        self._start_observability()
        _log.info(
            "broker started: name=%s cluster=%s aeron_dir=%s ingress=%s udp=%s grpc=%s "
            "data_dir=%s flush=%s %s",
            config.broker_name,
            config.cluster_name,
            self.aeron_dir,
            f"{config.ingress_ipc_channel}#{config.ingress_ipc_stream_id}",
            udp_channel,
            self.grpc_address,
            config.data_dir,
            config.flush_mode.value,
            self.group_line(),
        )

    def _group_member(self, aeron: Aeron, store: MessageStore) -> GroupMember | None:
        """This broker's membership of its group (``etcd_endpoints`` set), not started yet."""
        config = self.config
        if not config.group_mode:
            return None
        host, _, port = config.replication_endpoint.rpartition(":")
        if port == "0":
            port = str(_free_port(socket.SOCK_DGRAM, host))
        settings = GroupSettings(
            config.etcd_endpoint_list,
            config.broker_name,
            config.member_id,
            group_size=config.group_size,
            min_isr=config.min_isr,
            replication_endpoint=f"{host}:{port}",
            lease_ttl_ms=config.lease_ttl_ms,
            replica_lag_max_ms=config.replica_lag_max_ms,
            unclean_election=config.unclean_election,
            leader_fsync_inline=config.leader_fsync_inline,
            rocketmq_endpoint=(
                f"{config.grpc_host}:{config.rocketmq_port}" if self._rocketmq_allowed() else ""
            ),
        )
        return GroupMember(settings, aeron, store, config.data_dir)

    def group_line(self) -> str:
        """``group=NAME role=leader|follower epoch=N`` in a broker group, ``group=none
        role=single epoch=0`` for a single broker (the ready line's end)."""
        group = self.group
        if group is None:
            return "group=none role=single epoch=0"
        return f"group={group.group} role={group.role.value} epoch={group.epoch}"

    def _start_control_plane(self, store: MessageStore) -> None:
        """The gRPC control plane: admin, routes, offsets, groups, stats (the data plane's counters
        are published as gauges of its stats registry); registration with the name server when
        one is configured."""
        config = self.config
        group = self.group
        control = self.control_plane = ControlPlane(config, store, leadership=group)
        tls = tls_of(config)
        warn_if_exposed(config.grpc_host, tls, self.acl)
        server = self.grpc_server = BrokerGrpcServer(
            control, config.grpc_host, config.grpc_port, tls=tls, acl=self.acl
        )
        if group is not None:
            if tls is not None or self.acl is not None:
                _log.warning(
                    "a broker group's members call each other without TLS or credentials: "
                    "with TLS or an ACL on the gRPC port, their handshakes fail"
                )
            server.add_group_replication(
                group.answer_epoch_end, lambda: replication_status(group, store)
            )
        if self.transactions is not None:
            server.add_service(TRANSACTION_SERVICE, TransactionServicer(self.transactions).register)
        server.start()
        control.identity.update_endpoints(self.endpoints(server.address))
        registry = control.registry
        for name in self.stats():
            if not name.startswith("session.error_"):
                registry.gauge(name, self._stat(name))
        control.start()
        if config.namesrv_address is not None:
            self.registrar = NameServerRegistrar(
                control, config.namesrv_address, config.namesrv_heartbeat_interval_ms
            )
            self.registrar.start()

    def _rocketmq_allowed(self) -> bool:
        """Whether the RocketMQ 5 endpoint opens: on, and with neither TLS nor an ACL set (it
        has neither yet, so it would bypass them)."""
        config = self.config
        return config.rocketmq_enabled and acl_of(config) is None and tls_of(config) is None

    def _start_rocketmq(self, store: MessageStore) -> None:
        """RocketMQ 5 clients' endpoint (``aeromq.broker.rocketmq``), unless turned off.

        The endpoint has neither TLS nor the ACL's checks yet, so a broker configured with either
        keeps it closed (one warning) rather than open a port that bypasses them. In a broker
        group, a member that does not lead forwards its calls to the leader's endpoint (named
        in the leader's member key), and its routes name the leader's endpoint."""
        if not self.config.rocketmq_enabled:
            return
        if not self._rocketmq_allowed():
            _log.warning(
                "the RocketMQ 5 endpoint stays off: it supports neither TLS nor the ACL, which "
                "this broker is configured with (rocketmq_enabled=false silences this)"
            )
            return
        leadership = None if self.group is None else GroupEndpointLeadership(self.group)
        self.rocketmq = RocketMQEndpoint(store, self.config, leadership, self.transactions)
        self.rocketmq.start()

    def _start_observability(self) -> None:
        """``/metrics`` and the web console on one HTTP port (see ``broker.observability``),
        unless ``metrics_port`` is none."""
        config = self.config
        if config.metrics_port is None:
            return
        server = ObservabilityServer(
            self, config.metrics_host, config.metrics_port, console=config.console_enabled
        )
        self.observability = server
        server.start()

    @property
    def metrics_url(self) -> str | None:
        """``http://HOST:PORT/metrics``, None when the HTTP server is off or not started."""
        return None if self.observability is None else self.observability.metrics_url

    @property
    def console_url(self) -> str | None:
        """``http://HOST:PORT/console/``, None when the console is off or not started."""
        return None if self.observability is None else self.observability.console_url

    def _start_transport(self) -> None:
        config = self.config
        if config.aeron_dir is None:
            base = self._driver_context or embedded_driver_context(
                config.file_mode,
                config.driver_threading_mode,
                park_when_settled=config.group_mode,  # replication: most of its wake-ups
            )
            self.driver = MediaDriver.launch_embedded(base)
            self.aeron_dir = self.driver.aeron_dir
        else:
            self.aeron_dir = str(config.aeron_dir)
        self.aeron = Aeron.connect(
            AeronContext(
                aeron_dir=self.aeron_dir,
                error_handler=self._on_transport_error,
                idle_strategy=client_conductor_idle_strategy(self.driver),
            )
        )

    def shutdown(self) -> None:
        """Stop gracefully (see module); idempotent."""
        with self._lock:
            if not self._running:
                return
            self._running = False
            self._stop()
        self._stopped.set()

    def _stop(self) -> None:
        if self.observability is not None:
            self.observability.stop()
            self.observability = None
        agent = self.session_agent
        if agent is not None:
            agent.stop_ingress()
        if self.group is not None:
            self.group.stop()  # a leader's waiting sends fail; the others elect at once
        if self.registrar is not None:
            self.registrar.stop()
        if self.grpc_server is not None:
            self.grpc_server.stop()
        if self.rocketmq is not None:
            self.rocketmq.stop()
        if self.control_plane is not None:
            self.control_plane.close()
        if self.hold is not None:
            self.hold.shutdown()
        if self.timer is not None:
            self.timer.stop()
        if self.transactions is not None:
            self.transactions.stop()
        if self.store is not None:
            try:
                self.store.shutdown()
            except Exception:
                _log.exception("store shutdown failed")
        if agent is not None and self._runner is not None:
            deadline = time.monotonic() + _DRAIN_TIMEOUT_S
            while not agent.idle and time.monotonic() < deadline:
                time.sleep(0.001)
        if self._runner is not None:
            self._runner.close()
            self._runner = None
        for subscription in self._subscriptions:
            subscription.close()
        self._subscriptions.clear()
        if self.aeron is not None:
            self.aeron.close()
        if self.driver is not None:
            self.driver.close()
        _log.info("broker stopped: name=%s", self.config.broker_name)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait until the broker is shut down; True if it is."""
        return self._stopped.wait(timeout_s)

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    @property
    def running(self) -> bool:
        return self._running

    # -- what clients need to know -------------------------------------------------------

    @property
    def grpc_address(self) -> str:
        """``host:port`` the gRPC control plane listens on ("" before start)."""
        return self.grpc_server.address if self.grpc_server is not None else ""

    @property
    def rocketmq_address(self) -> str:
        """``host:port`` of the RocketMQ 5 endpoint ("" when off or before start)."""
        return self.rocketmq.address if self.rocketmq is not None else ""

    @property
    def ipc_ingress(self) -> tuple[str, int]:
        return self.config.ingress_ipc_channel, self.config.ingress_ipc_stream_id

    @property
    def udp_ingress(self) -> tuple[str, int] | None:
        """The UDP ingress channel (port 0 in the config resolved to a free port) and stream."""
        channel = self._udp_channel
        return None if channel is None else (channel, self.config.ingress_udp_stream_id)

    def endpoints(self, grpc_address: str | None = None) -> common_pb2.BrokerEndpoints:
        """How clients reach this broker (the route's ``BrokerEndpoints``)."""
        config = self.config
        udp = self.udp_ingress
        return common_pb2.BrokerEndpoints(
            grpc_address=self.grpc_address if grpc_address is None else grpc_address,
            ipc_channel=config.ingress_ipc_channel,
            ipc_stream_id=config.ingress_ipc_stream_id,
            udp_channel=udp[0] if udp else "",
            udp_stream_id=udp[1] if udp else 0,
            aeron_dir=self.aeron_dir,
            hostname=socket.gethostname(),
            broker_id=self.broker_id,
        )

    def stats(self) -> dict[str, int]:
        """The data plane's counters: sessions, sends, pulls and holds (a fixed set of names,
        published as gauges of the control plane's stats registry)."""
        values: dict[str, int] = {}
        agent = self.session_agent
        if agent is not None:
            values.update({f"session.{k}": v for k, v in agent.counters.snapshot().items()})
            values["session.live"] = agent.table.live_count
        send = self.send_processor
        if send is not None:
            values["send.requests"] = send.requests
            values["send.messages"] = send.messages_stored
            values["send.inflight"] = send.inflight_sends
            values["send.errors"] = sum(send.errors.values())
            for code in _ERROR_CODES:
                values[f"send.errors.{code.name.lower()}"] = send.errors.get(code, 0)
        pull = self.pull_processor
        if pull is not None:
            values["pull.requests"] = pull.pulls
            values["pull.messages"] = pull.messages_out
            values["pull.held"] = pull.held
            values["pull.local"] = pull.local_answers
            values["pull.errors"] = sum(pull.errors.values())
            for code in _ERROR_CODES:
                values[f"pull.errors.{code.name.lower()}"] = pull.errors.get(code, 0)
        if self.hold is not None:
            values["pull.woken_by_arrival"] = self.hold.woken_by_arrival
            values["pull.woken_by_timeout"] = self.hold.woken_by_timeout
        if self.timer is not None:
            values["timer.held"] = self.timer.redirector.messages
            values["timer.pending"] = self.timer.pending
            values["timer.delivered"] = self.timer.delivered
            values["timer.dropped"] = self.timer.dropped
        transactions = self.transactions
        if transactions is not None:
            values["transaction.halves"] = transactions.redirector.messages
            values["transaction.pending"] = transactions.pending
            values["transaction.committed"] = transactions.committed
            values["transaction.rolled_back"] = transactions.rolled_back
            values["transaction.checks"] = transactions.checks
            values["transaction.discarded"] = transactions.discarded
        if self.group is not None:
            values.update(self.group.stats())
        return values

    def _stat(self, name: str) -> Callable[[], int]:
        return lambda: self.stats().get(name, 0)

    # -- errors off the caller's thread --------------------------------------------------

    def _on_agent_error(self, error: Exception) -> None:
        _log.error("session agent error: %s", error, exc_info=error)

    def _on_transport_error(self, error: BaseException) -> None:
        _log.error("transport error: %s", error, exc_info=error)
        aeron = self.aeron
        if (
            self.failure is None
            and isinstance(error, TransportError)
            and aeron is not None
            and aeron.is_closed
            and self._running
        ):
            self.failure = error
            _log.critical("transport client stopped, no more sessions: restart the broker")


def _resolve_udp_channel(endpoint: str | None) -> str | None:
    """``aeron:udp?endpoint=host:port``; port 0 takes a free UDP port of the host now."""
    if endpoint is None:
        return None
    host, _, port = endpoint.rpartition(":")
    if port == "0":
        port = str(_free_port(socket.SOCK_DGRAM, host))
    return f"aeron:udp?endpoint={host}:{port}"


def _free_port(kind: socket.SocketKind, host: str) -> int:
    """A port of ``host`` free now (bound and let go: another process may take it first)."""
    return free_ports(kind, host, 1)[0]
