"""A broker group in this process for failover tests, with no transport: members that store
sends and answer pulls while they lead, refuse with ``NOT_LEADER`` (naming the leader, or not)
while they follow, and are unreachable once killed; a route resolver that asks the group, and
broker sessions whose requests reach it.

Answers come on a thread of the group's (as a session's poller completes futures), so async
callbacks never run inside the call that sent.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from aeromq.client import BrokerRoute, BrokerSessions, ClientSession
from aeromq.client.failover import error_for_status
from aeromq.common import (
    BrokerUnavailableError,
    ClientError,
    PullAnswer,
    PullRequestBody,
    RecordBatch,
    RequestTimeoutError,
    ResponseCode,
    SendRequest,
)
from aeromq.common.record_batch import ProducerState, patch_batch, read_producer_state
from aeromq.proto import common_pb2, messages_pb2
from tests.client._scripted import ScriptedClient, ScriptedResolver, member_endpoints, route_data

BROKER = "broker-a"


@dataclass
class Stored:
    """What a member stored in one queue: each batch's bytes and its first offset."""

    batches: list[bytes] = field(default_factory=list)
    next_offset: int = 0


class FakeGroup:
    """Members (gRPC addresses) of broker name ``broker-a``; ``leader`` leads (None: an
    election is under way); ``hint`` whether followers name it."""

    def __init__(self, *members: str, topic: str = "orders", queues: int = 2) -> None:
        self.members = list(members)
        self.topic = topic
        self.queues = queues
        self.leader: str | None = members[0]
        self.routed: str = members[0]
        """The member routes name (the last leader, while an election is under way)."""
        self.dead: set[str] = set()
        self.hint = True
        self.log: dict[int, Stored] = defaultdict(Stored)
        """The group's log per queue id (shared: what the leader stored, followers have)."""
        self.sends: list[tuple[str, int, bytes]] = []
        """Every send that reached a member: (member, queue id, batch)."""
        self.pulls: list[tuple[str, int, int]] = []
        """Every pull that reached a member: (member, queue id, offset)."""
        self.commits: list[tuple[str, int, int]] = []
        """Every commit a member took: (member, queue id, offset)."""
        self.pulled_from_leader = 0
        self.kill_after_pulls: int | None = None
        """The leader dies once it answered this many pulls (its answer still goes out), and
        ``next_leader`` is elected ``election_s`` later."""
        self.next_leader = members[-1]
        self.election_s = 0.2
        self.refuse: Callable[[str, messages_pb2.SendMessageRequest], int | None] = (
            lambda member, request: None
        )
        """A response code the leader answers a send with instead of storing it (None:
        store)."""
        self.lose_answers = 0
        """The next this many sends the leader stores but whose answer is lost (a timeout)."""
        self.replication_timeouts = 0
        """The next this many sends the leader stores but answers REPLICATION_TIMEOUT."""
        self.producers = Dedupe()
        """The leader's idempotent producers' last batches (the store's rules)."""
        self.lock = threading.Lock()
        self.answers = ThreadPoolExecutor(1, thread_name_prefix="fake-group")

    # -- faults ------------------------------------------------------------------------------

    def kill_leader(self) -> str:
        """The leader dies: no leader until :meth:`elect`; routes still name it."""
        assert self.leader is not None
        killed, self.leader = self.leader, None
        self.dead.add(killed)
        return killed

    def elect(self, member: str) -> None:
        self.leader = self.routed = member

    def elect_later(self, member: str, after_s: float) -> None:
        timer = threading.Timer(after_s, self.elect, (member,))
        timer.daemon = True
        timer.start()

    # -- control plane -----------------------------------------------------------------------

    def route(self) -> common_pb2.TopicRouteData:
        return route_data(self.topic, {BROKER: self.routed}, self.queues)

    def resolver(self, **kwargs: Any) -> ScriptedResolver:
        """A resolver whose endpoints are the members: the live ones answer the route, and
        the leader takes the control calls of :class:`MemberClient`."""
        return ScriptedResolver(*(MemberClient(self, m) for m in self.members), **kwargs)

    # -- data plane ----------------------------------------------------------------------------

    def answer_send(
        self, member: str, request: messages_pb2.SendMessageRequest | SendRequest
    ) -> Any:
        """What ``member`` answers ``request`` (a response, or raises)."""
        if isinstance(request, SendRequest):  # as the session would encode it
            request = request.message()
        with self.lock:
            self.sends.append((member, request.queue_id, request.batch))
            if member in self.dead:
                raise BrokerUnavailableError("the member's session failed", address=member)
            if member != self.leader:
                return messages_pb2.SendMessageResponse(status=self._not_leader())
            refusal = self.refuse(member, request)
            if refusal is not None:
                return messages_pb2.SendMessageResponse(
                    status=common_pb2.Status(code=refusal, message="refused by the test")
                )
            count = RecordBatch(request.batch).count
            producer = read_producer_state(request.batch)
            verdict = (
                None
                if producer is None
                else self.producers.check(producer, request.queue_id, count)
            )
            if verdict is OUT_OF_ORDER:
                return messages_pb2.SendMessageResponse(
                    status=common_pb2.Status(
                        code=ResponseCode.OUT_OF_ORDER_SEQUENCE,
                        message=f"out of order: queue_id={request.queue_id}",
                    )
                )
            stored = self.log[request.queue_id]
            if isinstance(verdict, int):  # a duplicate: its first result
                first = verdict
            else:
                first = stored.next_offset
                batch = bytearray(request.batch)
                patch_batch(batch, 0, first, first, 0, bytes(8), request.queue_id)
                stored.batches.append(bytes(batch))
                stored.next_offset += count
                if producer is not None:
                    self.producers.record(producer, request.queue_id, count, first)
            if self.lose_answers:
                self.lose_answers -= 1
                raise RequestTimeoutError("the answer was lost", queue_id=request.queue_id)
            if self.replication_timeouts:
                self.replication_timeouts -= 1
                return messages_pb2.SendMessageResponse(
                    status=common_pb2.Status(
                        code=ResponseCode.REPLICATION_TIMEOUT, message="not acknowledged in time"
                    )
                )
            return messages_pb2.SendMessageResponse(
                status=common_pb2.Status(code=ResponseCode.SUCCESS),
                send_status=messages_pb2.SEND_OK,
                queue_id=request.queue_id,
                base_queue_offset=first,
                message_count=count,
                base_commit_log_offset=first,
                store_host="127.0.0.1:1",
                broker_name=BROKER,
            )

    def answer_pull(
        self, member: str, request: messages_pb2.PullMessageRequest | PullRequestBody
    ) -> PullAnswer:
        """What ``member`` answers a pull: no new message from the leader (the offset is the
        queue's end), NOT_LEADER from a follower; raises for a dead member."""
        with self.lock:
            self.pulls.append((member, request.queue_id, request.queue_offset))
            if member in self.dead:
                raise BrokerUnavailableError("the member's session failed", address=member)
            if member != self.leader:
                return PullAnswer(messages_pb2.PullMessageResponse(status=self._not_leader()))
            stored = self.log[request.queue_id]
            end = stored.next_offset
            found, next_offset = [], request.queue_offset
            for batch in stored.batches:
                view = RecordBatch(batch)
                batch_end = view.base_queue_offset + view.count
                if batch_end > request.queue_offset:
                    found.append(batch)
                    next_offset = batch_end
                if next_offset - request.queue_offset >= request.max_msg_nums:
                    break
            pulled = self.pulled_from_leader = self.pulled_from_leader + 1
            if self.kill_after_pulls is not None and pulled >= self.kill_after_pulls:
                self.kill_after_pulls = None
                self.dead.add(member)
                self.leader = None
                self.elect_later(self.next_leader, self.election_s)
            return PullAnswer(
                messages_pb2.PullMessageResponse(
                    pull_status=messages_pb2.FOUND if found else messages_pb2.NO_NEW_MSG,
                    next_begin_offset=next_offset if found else end,
                    min_offset=0,
                    max_offset=end,
                ),
                b"".join(found),
            )

    def answer_control(self, member: str, rpc: str) -> None:
        """A gRPC control call on ``member``: raises as a dead member or a follower would."""
        if member in self.dead:
            raise BrokerUnavailableError(
                "connection refused", address=member, rpc=rpc, grpc_code="UNAVAILABLE"
            )
        if member != self.leader:
            raise error_for_status(self._not_leader(), address=member, rpc=rpc)

    def _not_leader(self) -> common_pb2.Status:
        status = common_pb2.Status(code=ResponseCode.NOT_LEADER, message="a follower")
        if self.hint and self.leader is not None:
            status.leader.CopyFrom(member_endpoints(self.leader))
        return status

    def stored_bodies(self, queue_id: int | None = None) -> list[bytes]:
        """Every body the group stored (in one queue, or all), in log order per queue."""
        bodies = []
        for qid in sorted(self.log) if queue_id is None else [queue_id]:
            for batch in self.log[qid].batches:
                bodies += bodies_of([batch])
        return bodies

    def sessions(self) -> GroupSessions:
        return GroupSessions(self)

    def close(self) -> None:
        self.answers.shutdown(wait=True)


OUT_OF_ORDER = object()


class Dedupe:
    """The store's rules for idempotent producers, per (producer id, queue): the last 5
    batches' (base sequence, count, first offset) of the producer's epoch; a duplicate is
    answered with its first offset, the next sequence (or a new producer or epoch) is taken,
    anything else is OUT_OF_ORDER."""

    def __init__(self) -> None:
        self.entries: dict[tuple[int, int], tuple[int, deque[tuple[int, int, int]]]] = {}

    def check(self, state: ProducerState, queue_id: int, count: int) -> int | object | None:
        entry = self.entries.get((state.producer_id, queue_id))
        if entry is None or state.producer_epoch > entry[0]:
            return None
        epoch, batches = entry
        if state.producer_epoch < epoch:
            return OUT_OF_ORDER
        for base, stored_count, first in batches:
            if base == state.base_sequence and stored_count == count:
                return first
        base, stored_count, _first = batches[-1]
        return None if state.base_sequence == base + stored_count else OUT_OF_ORDER

    def record(self, state: ProducerState, queue_id: int, count: int, first: int) -> None:
        key = (state.producer_id, queue_id)
        entry = self.entries.get(key)
        if entry is None or state.producer_epoch > entry[0]:
            entry = self.entries[key] = (state.producer_epoch, deque(maxlen=5))
        entry[1].append((state.base_sequence, count, first))


class MemberClient(ScriptedClient):
    """A member's gRPC client: routes, and the consumer's offset calls."""

    def __init__(self, group: FakeGroup, member: str) -> None:
        super().__init__(member, self._route)
        self.group = group

    def _route(self) -> common_pb2.TopicRouteData:
        if self.address in self.group.dead:
            self.group.answer_control(self.address, "QueryRoute")
        return self.group.route()

    def commit_offset(
        self, group: str, topic: str, queue_id: int, offset: int, *, timeout_s: float | None = None
    ) -> None:
        self.group.answer_control(self.address, "UpdateOffset")
        self.group.commits.append((self.address, queue_id, offset))

    def query_offset(
        self, group: str, topic: str, queue_id: int, *, timeout_s: float | None = None
    ) -> int:
        self.group.answer_control(self.address, "QueryOffset")
        committed = [o for m, q, o in self.group.commits if q == queue_id]
        return committed[-1] if committed else -1

    def max_offset(self, topic: str, queue_id: int, *, timeout_s: float | None = None) -> int:
        self.group.answer_control(self.address, "GetMaxOffset")
        return self.group.log[queue_id].next_offset

    def min_offset(self, topic: str, queue_id: int, *, timeout_s: float | None = None) -> int:
        self.group.answer_control(self.address, "GetMinOffset")
        return 0


class MemberSession:
    """A session with one member: requests answered by the group on its thread."""

    def __init__(self, group: FakeGroup, member: BrokerRoute) -> None:
        self.group = group
        self.member = member.grpc_address
        self.is_open = True
        self.pending_count = 0

    local_read_dir = ""
    local_read_file_bytes = 0
    local_read_dir_id = (0, 0)

    def request(
        self, body: messages_pb2.SendMessageRequest | SendRequest, timeout_ms: int | None = None
    ) -> Any:
        return self.group.answer_send(self.member, body)

    def wait(self, future: Future[Any], timeout_ms: int | None = None) -> Any:
        return future.result((timeout_ms or 5_000) / 1000)

    def request_async(
        self,
        body: messages_pb2.SendMessageRequest
        | SendRequest
        | messages_pb2.PullMessageRequest
        | PullRequestBody,
        timeout_ms: int | None = None,
        *,
        wait_offer: bool = True,
        lazy: bool = False,
    ) -> Future[Any]:
        future: Future[Any] = Future()

        def answer() -> None:
            try:
                if isinstance(body, (messages_pb2.PullMessageRequest, PullRequestBody)):
                    future.set_result(self.group.answer_pull(self.member, body))
                else:
                    future.set_result(self.group.answer_send(self.member, body))
            except ClientError as error:
                future.set_exception(error)

        self.group.answers.submit(answer)
        return future

    def request_callback(
        self,
        body: messages_pb2.PullMessageRequest | PullRequestBody,
        timeout_ms: int,
        callback: Callable[[Any, BaseException | None], None],
        *,
        wait_offer: bool = True,
        lazy: bool = False,
    ) -> None:
        def done(future: Future[Any]) -> None:
            error = future.exception()
            callback(None, error) if error is not None else callback(future.result(), None)

        self.request_async(body, timeout_ms, wait_offer=wait_offer, lazy=lazy).add_done_callback(
            done
        )

    def send_oneway(self, body: messages_pb2.SendMessageRequest | SendRequest) -> None:
        self.request_async(body)

    def close(self) -> None:
        self.is_open = False


class GroupSessions(BrokerSessions):
    """Broker sessions whose sessions reach the fake group (a dead member cannot be
    connected)."""

    def __init__(self, group: FakeGroup) -> None:
        super().__init__(client_id="test", request_timeout_ms=3_000, offer_timeout_ms=1_000)
        self.group = group
        self.connects: list[str] = []

    def _connect(self, broker: BrokerRoute) -> ClientSession:
        self.connects.append(broker.grpc_address)
        if broker.grpc_address in self.group.dead:
            raise BrokerUnavailableError("the media driver is not running", broker=BROKER)
        return MemberSession(self.group, broker)  # type: ignore[return-value]  # duck-typed


def bodies_of(batches: Sequence[bytes]) -> list[bytes]:
    """The bodies of stored batches, in order."""
    out = []
    for batch in batches:
        view = RecordBatch(batch)
        out += [view.body(i) for i in range(view.count)]
    return out
