"""A broker group of real processes for the system tests: one etcd on loopback and N ``aeromq
broker`` processes of one group, each with its own data directory and ports; what etcd says
(the leader, the epoch, the ISR), faults (SIGKILL, SIGSTOP and SIGCONT, a restart), and a
sender that records a history (``tests/faults/history.py``) while it follows the leader."""

from __future__ import annotations

import os
import signal
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Final, Protocol

from aeromq.broker.etcd import EtcdClient, EtcdUnavailableError
from aeromq.broker.replication import GroupKeys, GroupState, MemberInfo
from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.client import (
    ClientError,
    Message,
    MessageQueue,
    NotEnoughReplicasError,
    NotLeaderError,
)
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.common import ResponseCode
from aeromq.common.record_batch import BATCH_MAGIC, RecordBatch
from aeromq.producer import Producer, ProducerConfig, StaticRoute
from aeromq.proto import messages_pb2
from aeromq.transport.client import Aeron, AeronContext
from tests._pulled import pulled
from tests.faults.history import Delivery, History
from tests.faults.netns import NetLab

GROUP: Final = "broker-g"
SEND_TIMEOUT_MS: Final = 1500
"""A send's timeout: a send in flight to a leader that dies or pauses waits this long."""
CLIENT_SEND_TIMEOUT_MS: Final = 10_000
"""A send's deadline with the clients' own failover (it spans an election and its retries)."""
START_S: Final = 60.0
"""How long a member may take to print its ready line (a 2-core machine loaded by other suites
took more than 30 s)."""
TOPIC: Final = "replicated"
QUEUES: Final = 2


class Etcd(Protocol):
    """An etcd the group uses: the repository's ``EtcdServer`` on loopback, or a ``LabEtcd``
    in a namespace of its own."""

    @property
    def endpoint(self) -> str:
        """``HOST:PORT`` of its client port."""


def _group_args(etcd: str, member_id: int, size: int, min_isr: int, lease_ttl: str) -> list[str]:
    return [
        "--etcd-endpoints", etcd, "--member-id", str(member_id), "--group-size", str(size),
        "--min-isr", str(min_isr), "--lease-ttl", lease_ttl, "--replica-lag-max", "1s",
        "--replication-endpoint", "127.0.0.1:0", "--ingress-udp-endpoint", "none",
        "--rocketmq-enabled", "false", "--metrics-port", "none", "--index-enabled", "false",
        "--auto-create-topic", "true", "--default-queue-count", str(QUEUES),
        "--commit-log-segment-bytes", "16MiB", "--replication-timeout", "3s",
    ]  # fmt: skip


class BrokerGroup:
    """Members of the group :data:`GROUP` on ``etcd`` (see module), all killed at the end.

    With a ``lab``, member ``i`` runs in the lab's node ``b<i>`` (its gRPC port and replication
    endpoint on the node's address; clients still reach its driver over IPC)."""

    def __init__(
        self,
        root: Path,
        etcd: Etcd,
        size: int = 3,
        min_isr: int = 2,
        lease_ttl: str = "1s",
        lab: NetLab | None = None,
    ) -> None:
        self.root = root
        self.etcd = etcd
        self.size = size
        self.min_isr = min_isr
        self.lease_ttl = lease_ttl
        self.lab = lab
        self.members: dict[int, ServerProcess] = {}
        self._grpc_ports: dict[int, int] = {}
        self._on_close: list[Callable[[], None]] = []
        self.client = EtcdClient(etcd.endpoint)
        self.keys = GroupKeys(GROUP)

    def data_dir(self, member_id: int) -> Path:
        """Member ``member_id``'s data directory (kept across its restarts)."""
        return self.root / f"member-{member_id}"

    def start(self, member_id: int) -> ServerProcess:
        """Start (or restart) member ``member_id``; returns once it printed its ready line."""
        args = _group_args(self.etcd.endpoint, member_id, self.size, self.min_isr, self.lease_ttl)
        port = self._grpc_ports.get(member_id)
        if port is not None:  # a restart keeps its address: clients were given it
            args += ["--grpc-port", str(port)]
        if self.lab is None:
            process = start_broker_process(self.data_dir(member_id), GROUP, args, timeout_s=START_S)
        else:
            node = node_of(member_id)
            address = self.lab.address(node)
            args += ["--grpc-host", address, "--replication-endpoint", f"{address}:0"]
            with self.lab.inside(node):
                process = start_broker_process(
                    self.data_dir(member_id), GROUP, args, timeout_s=START_S
                )
        self.members[member_id] = process
        self._grpc_ports[member_id] = int(process.grpc_address.rsplit(":", 1)[1])
        return process

    def start_all(self) -> None:
        """Start every member (member 0 first, so that it leads; the others together), then
        wait until the ISR holds them all."""
        self.start(0)
        self.start_many(range(1, self.size))
        self.wait_for(lambda s: s.leader is not None and len(s.isr) == self.size, "a full ISR")

    def start_many(self, member_ids: Iterable[int]) -> None:
        """Start (or restart) ``member_ids`` together; returns once each printed its ready
        line."""
        errors: list[BaseException] = []

        def start(member_id: int) -> None:
            try:
                self.start(member_id)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=start, args=(m,)) for m in member_ids]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]

    def state(self) -> GroupState | None:
        """The group's state in etcd."""
        kv = self.client.get(self.keys.state)
        return None if kv is None else GroupState.from_json(kv.value)

    def live(self) -> set[int]:
        """The members whose key exists."""
        found = self.client.get_prefix(self.keys.members_prefix)
        return {int(kv.key.rsplit("/", 1)[1]) for kv in found.kvs}

    def leader(self) -> int | None:
        """The leader etcd names while its key exists."""
        state = self.state()
        if state is None or state.leader is None or state.leader not in self.live():
            return None
        return state.leader

    def wait_for(
        self, condition: Callable[[GroupState], bool], what: str, timeout_s: float = 20.0
    ) -> GroupState:
        """Wait until the state in etcd meets ``condition``; returns it."""
        deadline = time.monotonic() + timeout_s
        while True:
            state = self.state()
            if state is not None and condition(state):
                return state
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}: state={state}")
            time.sleep(0.02)

    def wait_for_leader(self, other_than: int | None = None, timeout_s: float = 20.0) -> int:
        """Wait for a live leader (not ``other_than``); returns its id."""
        deadline = time.monotonic() + timeout_s
        while True:
            leader = self.leader()
            if leader is not None and leader != other_than:
                return leader
            if time.monotonic() > deadline:
                raise AssertionError(f"no new leader: state={self.state()} live={self.live()}")
            time.sleep(0.02)

    def leader_info(self) -> MemberInfo | None:
        """The endpoints of the leader etcd names, while its key exists."""
        leader = self.leader()
        kv = None if leader is None else self.client.get(self.keys.member(leader))
        return None if kv is None else MemberInfo.from_json(kv.value)

    def grpc(self, member_id: int) -> str:
        """Member ``member_id``'s gRPC address (of its last start)."""
        return self.members[member_id].grpc_address

    def kill(self, member_id: int) -> None:
        """SIGKILL member ``member_id`` (no flush, no checkpoint)."""
        self.members[member_id].kill()

    def kill_all(self) -> None:
        """SIGKILL every member at once."""
        for process in self.members.values():
            if process.process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
        for member_id in self.members:
            self.kill(member_id)

    def pause(self, member_id: int) -> None:
        """SIGSTOP member ``member_id``."""
        os.kill(self.members[member_id].pid, signal.SIGSTOP)

    def resume(self, member_id: int) -> None:
        """SIGCONT member ``member_id``."""
        os.kill(self.members[member_id].pid, signal.SIGCONT)

    def on_close(self, action: Callable[[], None]) -> None:
        """Run ``action`` first thing in :meth:`close` (stop the senders of a failed test)."""
        self._on_close.append(action)

    def close(self) -> None:
        """Kill every member still running and close the etcd client."""
        for action in self._on_close:
            action()
        for process in self.members.values():
            if process.process.poll() is None:
                os.kill(process.pid, signal.SIGCONT)
            process.kill()
        self.client.close()

    def log(self, member_id: int) -> str:
        """Member ``member_id``'s output so far."""
        return "\n".join(self.members[member_id].log)

    def stored_bodies(self, member_id: int) -> set[bytes]:
        """Every message body in member ``member_id``'s commit log files, read from the files
        (while it runs: what it has written, committed or not)."""
        bodies: set[bytes] = set()
        directory = self.data_dir(member_id) / "commitlog"
        for path in sorted(directory.iterdir()):
            data = path.read_bytes()
            position = 0
            while position + 8 <= len(data):
                length, magic = _PREFIX.unpack_from(data, position)
                if magic != BATCH_MAGIC or length <= 0:
                    break  # a blank filler (the segment's end) or the end of what was written
                batch = RecordBatch(data, position)
                bodies.update(batch.body(i) for i in range(batch.count))
                position += length
        return bodies

    def drain(self, member_id: int, history: History, process: str) -> int:
        """Pull every queue of :data:`TOPIC` from member ``member_id`` (the leader) to its end,
        recording each pull's deliveries in ``history``; returns the messages delivered."""
        endpoints = self.members[member_id].ready
        delivered = 0
        with (
            Aeron.connect(AeronContext(aeron_dir=endpoints["aeron_dir"])) as aeron,
            ClientSession.connect(aeron, SessionConfig(request_timeout_ms=10_000)) as session,
        ):
            for queue_id in range(QUEUES):
                offset = 0
                while True:
                    op = history.invoke_poll(process, queue_of(queue_id))
                    response = session.request(
                        messages_pb2.PullMessageRequest(
                            consumer_group="group-check",
                            topic=TOPIC,
                            queue_id=queue_id,
                            queue_offset=offset,
                            max_msg_nums=256,
                            commit_offset=-1,
                        ),
                        10_000,
                    )
                    code = response.status.code
                    if code not in (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND):
                        history.fail(op, f"code={code}")  # an incomplete drain is no loss
                        raise AssertionError(f"drain of member {member_id}: {response.status}")
                    messages = pulled(response, TOPIC, queue_id, offset, broker_name=GROUP)
                    history.ok(
                        op,
                        deliveries=[
                            Delivery(m.body.decode(), queue_of(queue_id), m.queue_offset)
                            for m in messages
                        ],
                    )
                    delivered += len(messages)
                    if not messages:
                        assert offset >= response.max_offset, (offset, response)
                        break
                    offset = response.next_begin_offset
        return delivered


_PREFIX: Final = struct.Struct("<iI")


def node_of(member_id: int) -> str:
    """Member ``member_id``'s node in a lab (``b<id>``)."""
    return f"b{member_id}"


def queue_of(queue_id: int) -> str:
    """A queue's name in the histories."""
    return f"{TOPIC}:{queue_id}"


class GroupSender:
    """Sends numbered messages one at a time to queue ``queue_id`` of :data:`TOPIC` and records
    each in ``history`` as ``process``; on a refusal or a failure it finds the leader again
    (asking each live member's route) and goes on. Runs on its own thread until :meth:`stop`.

    Outcomes: an answer is ``ok`` with its queue offset; ``NOT_LEADER`` and
    ``NOT_ENOUGH_REPLICAS`` are certain refusals (``fail``); anything else (timeouts,
    ``REPLICATION_TIMEOUT``, a lost session) is ``info``: the outcome is unknown.

    ``client_failover`` instead keeps one idempotent producer given every member's gRPC address
    for the whole run: it finds the leader and retries by itself (the clients' failover, its
    idempotent retries across it); the history records each message's final outcome."""

    def __init__(
        self,
        group: BrokerGroup,
        history: History,
        process: str,
        queue_id: int = 0,
        *,
        client_failover: bool = False,
    ) -> None:
        self._group = group
        self._client_failover = client_failover
        self._history = history
        self.process = process
        self._queue = MessageQueue(TOPIC, GROUP, queue_id)
        self._queue_name = queue_of(queue_id)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"sender-{process}", daemon=True)
        self.sent = 0
        self.acked = 0
        self.errors: list[str] = []

    def start(self) -> GroupSender:
        """Start sending."""
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop after the send in flight."""
        self._stop.set()
        self._thread.join(timeout_s)

    def wait_acked(self, count: int, timeout_s: float = 30.0) -> None:
        """Wait until ``count`` sends in all were acknowledged."""
        deadline = time.monotonic() + timeout_s
        while self.acked < count:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{self.process}: {self.acked} acks of {count} (errors {self.errors[-5:]})"
                )
            time.sleep(0.01)

    def _producers(self) -> Iterator[Producer]:
        """A producer of the leader etcd names, forever (a client finds it through routes and
        ``NOT_LEADER`` answers: that discovery is the clients' matter; these histories time
        the brokers' failover)."""
        group = self._group
        if self._client_failover:
            endpoints = [group.grpc(m) for m in sorted(group.members)]
            config = ProducerConfig(send_timeout_ms=CLIENT_SEND_TIMEOUT_MS)
            while not self._stop.is_set():
                yield Producer(f"group-{self.process}", endpoints, config=config).start()
            return
        config = ProducerConfig(  # one attempt a send, as long as the send: p0 times the brokers
            send_timeout_ms=SEND_TIMEOUT_MS,
            request_timeout_ms=SEND_TIMEOUT_MS,
            retry_times_when_send_failed=0,
        )
        while not self._stop.is_set():
            try:
                info = group.leader_info()
            except EtcdUnavailableError:  # etcd restarting (a fault of its own): ask again
                self.errors.append(EtcdUnavailableError.__name__)
                info = None
            if info is None:
                time.sleep(0.02)
                continue
            route = StaticRoute({GROUP: info.endpoints()}, QUEUES)
            yield Producer(f"group-{self.process}", route=route, config=config).start()

    def _run(self) -> None:
        producers = self._producers()
        producer: Producer | None = None
        try:
            while not self._stop.is_set():
                if producer is None:
                    producer = next(producers, None)
                    if producer is None:  # stopped while no leader was known
                        return
                message_id = f"{self.process}-{self.sent}"
                self.sent += 1
                op = self._history.invoke_send(self.process, message_id, self._queue_name)
                try:
                    result = producer.send(Message(TOPIC, message_id.encode()), queue=self._queue)
                except ClientError as exc:
                    # certain refusals, unless a retry of the client's followed an unknown try
                    refused = isinstance(exc, NotLeaderError | NotEnoughReplicasError)
                    if refused and not self._client_failover:
                        self._history.fail(op, str(exc))
                    else:
                        self._history.info(op, str(exc))
                    self.errors.append(type(exc).__name__)
                else:
                    self._history.ok(op, offset=result.queue_offset)
                    self.acked += 1
                    continue
                if self._client_failover:
                    continue  # the producer fails over by itself
                producer.shutdown()
                producer = None
                time.sleep(0.02)
        finally:
            if producer is not None:
                producer.shutdown()
