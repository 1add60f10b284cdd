"""``aeromq admin`` in a subprocess against a real broker, and against a name server with two
brokers behind it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from aeromq.broker.namesrv import NameServer, NameServerConfig, NameServerRegistrar
from aeromq.broker.store import InboundMessage
from aeromq.client.grpc_client import GrpcClient
from tests.broker.control.conftest import RunningBroker, put_messages


def admin(server: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aeromq", "admin", "--endpoints", server, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def rows(output: str) -> list[list[str]]:
    """The table's rows under its header line, split on whitespace."""
    lines = [line.split() for line in output.strip().splitlines()]
    header = next(i for i, line in enumerate(lines) if line and line[0].isupper())
    return [line for line in lines[header + 1 :] if line and not line[0].startswith("group")]


def test_should_manage_topics_groups_and_offsets_of_a_broker(broker: RunningBroker) -> None:
    created = admin(broker.address, "topic", "create", "orders", "--queues", "2")
    assert created.returncode == 0, created.stderr
    assert rows(created.stdout) == [["broker-a", "orders", "2", "2"]]

    listed = admin(broker.address, "topic", "list")
    assert rows(listed.stdout) == [["orders", "2", "2", "rw", "False"]]

    put_messages(broker.store, "orders", 0, 5)
    put_messages(broker.store, "orders", 1, 2)
    with GrpcClient(broker.address) as grpc_client:
        grpc_client.commit_offset("billing", "orders", 0, 1)

    groups = admin(broker.address, "group", "list")
    assert rows(groups.stdout) == [["billing", "0", "CLUSTERING", "orders"]]

    progress = admin(broker.address, "group", "progress", "billing")
    assert progress.returncode == 0, progress.stderr
    assert rows(progress.stdout) == [
        ["orders", "broker-a", "0", "5", "1", "4"],
        ["orders", "broker-a", "1", "2", "-", "-"],  # never committed: no lag, as in Kafka
    ]
    assert "total lag 4, queues never committed 1" in progress.stdout
    as_json = admin(broker.address, "--json", "group", "progress", "billing")
    assert [json.loads(line) for line in as_json.stdout.splitlines()] == [
        {
            "topic": "orders",
            "broker": "broker-a",
            "queue": 0,
            "broker_offset": 5,
            "consumer_offset": 1,
            "lag": 4,
        },
        {
            "topic": "orders",
            "broker": "broker-a",
            "queue": 1,
            "broker_offset": 2,
            "consumer_offset": None,
            "lag": None,
        },
    ]

    latest = admin(broker.address, "offset", "reset", "billing", "orders", "--latest")
    assert rows(latest.stdout) == [["broker-a", "0", "5"], ["broker-a", "1", "2"]]
    earliest = admin(
        broker.address, "offset", "reset", "billing", "orders", "--earliest", "--queue", "1"
    )
    assert rows(earliest.stdout) == [["broker-a", "1", "0"]]
    by_time = admin(broker.address, "offset", "reset", "billing", "orders", "--time", str(2**62))
    assert rows(by_time.stdout) == [["broker-a", "0", "5"], ["broker-a", "1", "2"]]
    assert "total lag 0" in admin(broker.address, "group", "progress", "billing").stdout

    clusters = admin(broker.address, "cluster", "list")
    assert rows(clusters.stdout)[0][:3] == ["DefaultCluster", "broker-a", broker.address]

    updated = admin(broker.address, "topic", "update", "orders", "--write-queues", "1")
    assert updated.returncode == 0, updated.stderr
    assert rows(updated.stdout) == [["broker-a", "orders", "2", "1", "rw", "False"]]
    read_only = admin(broker.address, "topic", "update", "orders", "--perm", "r", "--order")
    assert rows(read_only.stdout) == [["broker-a", "orders", "2", "1", "r-", "True"]]
    listed_json = admin(broker.address, "topic", "list", "--json")
    assert [json.loads(line) for line in listed_json.stdout.splitlines()] == [
        {"topic": "orders", "read": 2, "write": 1, "perm": "r-", "order": True}
    ]

    deleted = admin(broker.address, "topic", "delete", "orders")
    assert deleted.returncode == 0
    assert rows(admin(broker.address, "topic", "list").stdout) == []


def test_should_look_messages_up_by_offset_id_and_by_key(broker: RunningBroker) -> None:
    assert admin(broker.address, "topic", "create", "orders", "--queues", "2").returncode == 0
    stored = broker.store.put_messages(
        [
            InboundMessage("orders", 1, b"first", {"KEYS": "order-42 vip", "UNIQ_KEY": "U1"}),
            InboundMessage("orders", 1, b"second", {"KEYS": "order-7", "TAGS": "paid"}),
        ]
    )
    assert stored.ok
    first_id, second_id = stored.message_ids

    by_id = admin(broker.address, "message", "id", second_id)
    assert by_id.returncode == 0, by_id.stderr
    (row,) = rows(by_id.stdout)
    assert row[:4] == ["orders", "broker-a", "1", "1"]
    assert row[6:] == [second_id, "order-7", "paid", "second"]

    by_key = admin(broker.address, "--json", "message", "key", "orders", "vip")
    (found,) = [json.loads(line) for line in by_key.stdout.splitlines()]
    assert (found["offset_msg_id"], found["msg_id"], found["body"]) == (first_id, "U1", "first")
    unique = admin(broker.address, "message", "key", "orders", "U1")
    assert first_id in unique.stdout and second_id not in unique.stdout  # a unique id is a key
    assert "1 message(s) of topic orders with key U1" in unique.stdout

    ghost = "7F000001" + first_id[8:16] + "00000000000FFFFF"  # this broker, no record there
    missing = admin(broker.address, "message", "id", ghost)
    assert missing.returncode == 1 and "no stored message has this id" in missing.stderr
    none = admin(broker.address, "--json", "message", "key", "orders", "nobody")
    assert none.returncode == 0 and none.stdout == ""


def test_should_fail_with_clear_messages_and_exit_codes(broker: RunningBroker) -> None:
    missing = admin(broker.address, "topic", "delete", "ghost")
    assert missing.returncode == 1
    assert "topic='ghost'" in missing.stderr
    exists = admin(broker.address, "topic", "create", "x")
    again = admin(broker.address, "topic", "create", "x")
    assert (exists.returncode, again.returncode) == (0, 1)
    assert "topic exists already" in again.stderr
    assert admin(broker.address, "topic").returncode == 2
    assert admin(broker.address, "offset", "reset", "g", "x", "--time", "soon").returncode == 2
    unreachable = admin("127.0.0.1:1", "--timeout", "500ms", "--broker", "topic", "list")
    assert unreachable.returncode == 1
    assert "BrokerUnavailableError" in unreachable.stderr
    assert admin(broker.address, "topic", "update", "ghost", "--queues", "2").returncode == 1
    assert admin(broker.address, "--timeout", "5 fortnights", "topic", "list").returncode == 2


def test_should_still_accept_the_old_server_and_timeout_s_spellings(broker: RunningBroker) -> None:
    old = subprocess.run(
        [
            sys.executable,
            "-m",
            "aeromq",
            "admin",
            "--server",
            broker.address,
            "--timeout-s",
            "5",
            "topic",
            "create",
            "legacy",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert old.returncode == 0, old.stderr
    assert rows(old.stdout) == [["broker-a", "legacy", "8", "8"]]


def test_should_take_the_address_from_aeromq_endpoints(broker: RunningBroker) -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "aeromq", "admin", "topic", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "AEROMQ_ENDPOINTS": broker.address},
    )
    assert listed.returncode == 0, listed.stderr
    assert rows(listed.stdout) == []


@pytest.fixture
def two_brokers_behind_a_namesrv(
    broker_factory: Callable[..., RunningBroker],
) -> Iterator[tuple[NameServer, list[RunningBroker]]]:
    namesrv = NameServer(NameServerConfig(port=0))
    namesrv.start()
    brokers = [
        broker_factory("b1", broker_name="broker-1", default_queue_count=2),
        broker_factory("b2", broker_name="broker-2", default_queue_count=1),
    ]
    registrars = [
        NameServerRegistrar(
            b.control, namesrv.address, interval_ms=100, heartbeat_timeout_ms=10_000
        )
        for b in brokers
    ]
    for registrar in registrars:
        registrar.start()
    yield namesrv, brokers
    for registrar in registrars:
        registrar.stop()
    namesrv.stop(grace_s=0.5)


def test_should_act_on_every_broker_behind_a_name_server(
    two_brokers_behind_a_namesrv: tuple[NameServer, list[RunningBroker]],
) -> None:
    namesrv, brokers = two_brokers_behind_a_namesrv
    created = admin(namesrv.address, "topic", "create", "spread")
    assert created.returncode == 0, created.stderr
    assert rows(created.stdout) == [
        ["broker-1", "spread", "2", "2"],
        ["broker-2", "spread", "1", "1"],
    ]
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:  # the registrars re-register on the change
        listed = admin(namesrv.address, "topic", "list")
        if rows(listed.stdout):
            break
    assert rows(listed.stdout) == [["spread", "3", "3", "rw", "False"]]
    route = admin(namesrv.address, "topic", "route", "spread")
    assert [r[0] for r in rows(route.stdout)] == ["broker-1", "broker-2"]

    put_messages(brokers[0].store, "spread", 1, 4)
    put_messages(brokers[1].store, "spread", 0, 3)
    progress = admin(namesrv.address, "group", "progress", "g", "--topic", "spread")
    assert progress.returncode == 0, progress.stderr
    assert rows(progress.stdout) == [
        ["spread", "broker-1", "0", "0", "-", "-"],
        ["spread", "broker-1", "1", "4", "-", "-"],
        ["spread", "broker-2", "0", "3", "-", "-"],
    ]
    reset = admin(namesrv.address, "offset", "reset", "g", "spread", "--latest")
    assert rows(reset.stdout) == [
        ["broker-1", "0", "0"],
        ["broker-1", "1", "4"],
        ["broker-2", "0", "3"],
    ]

    clusters = admin(namesrv.address, "cluster", "list")
    assert [r[1] for r in rows(clusters.stdout)] == ["broker-1", "broker-2"]
