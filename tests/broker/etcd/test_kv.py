"""The key-value calls against a real etcd: get, get_prefix, put, delete, transactions and
compare-and-swap, including writers racing from threads."""

from __future__ import annotations

import threading

import pytest

from aeromq.broker import BrokerStateError
from aeromq.broker.etcd import (
    EtcdClient,
    EtcdServer,
    create_revision_equals,
    delete_op,
    get_op,
    mod_revision_equals,
    put_op,
    value_equals,
    version_equals,
)


def test_should_read_back_what_was_put(etcd: EtcdClient) -> None:
    revision = etcd.put("/g/a", b"one")

    kv = etcd.get("/g/a")

    assert kv is not None
    assert (kv.key, kv.value, kv.version, kv.lease_id) == ("/g/a", b"one", 1, 0)
    assert kv.create_revision == kv.mod_revision == revision


def test_should_answer_none_for_a_missing_key(etcd: EtcdClient) -> None:
    assert etcd.get("/g/missing") is None


def test_should_give_each_put_a_higher_revision(etcd: EtcdClient) -> None:
    first = etcd.put("/g/a", b"1")
    second = etcd.put("/g/a", b"2")

    kv = etcd.get("/g/a")

    assert second > first
    assert kv is not None
    assert (kv.create_revision, kv.mod_revision, kv.version) == (first, second, 2)


def test_should_read_every_key_under_a_prefix_sorted(etcd: EtcdClient) -> None:
    for key in ("/g/members/2", "/g/members/0", "/g/membersX", "/g/state", "/h/members/1"):
        last = etcd.put(key, key.encode())

    result = etcd.get_prefix("/g/members/")

    assert [kv.key for kv in result.kvs] == ["/g/members/0", "/g/members/2"]
    assert result.revision == last


def test_should_delete_a_key(etcd: EtcdClient) -> None:
    etcd.put("/g/a", b"1")

    assert etcd.delete("/g/a") == 1
    assert etcd.get("/g/a") is None
    assert etcd.delete("/g/a") == 0


def test_should_create_a_key_once(etcd: EtcdClient) -> None:
    created = etcd.compare_and_swap("/g/state", b"first", mod_revision=0)
    again = etcd.compare_and_swap("/g/state", b"second", mod_revision=0)

    assert created.succeeded
    assert not again.succeeded
    assert [(kv.value, kv.mod_revision) for kv in again.kvs] == [(b"first", created.revision)]
    kv = etcd.get("/g/state")
    assert kv is not None
    assert kv.value == b"first"


def test_should_swap_only_on_the_revision_read(etcd: EtcdClient) -> None:
    read = etcd.put("/g/state", b"epoch=1")
    etcd.put("/g/state", b"epoch=2")  # another writer in between

    stale = etcd.compare_and_swap("/g/state", b"epoch=3 from stale", mod_revision=read)
    current = stale.kvs[0].mod_revision
    fresh = etcd.compare_and_swap("/g/state", b"epoch=3", mod_revision=current)

    assert not stale.succeeded
    assert stale.kvs[0].value == b"epoch=2"
    assert fresh.succeeded
    kv = etcd.get("/g/state")
    assert kv is not None
    assert (kv.value, kv.mod_revision) == (b"epoch=3", fresh.revision)


def test_should_let_one_of_racing_writers_win_a_swap(etcd: EtcdClient) -> None:
    read = etcd.put("/g/state", b"epoch=0")
    writers = 8
    barrier = threading.Barrier(writers)
    wins: list[int] = []

    def write(writer: int) -> None:
        barrier.wait()
        result = etcd.compare_and_swap("/g/state", f"leader={writer}".encode(), mod_revision=read)
        if result.succeeded:
            wins.append(writer)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert len(wins) == 1
    kv = etcd.get("/g/state")
    assert kv is not None
    assert kv.value == f"leader={wins[0]}".encode()


def test_should_lose_no_update_when_writers_retry_their_swaps(etcd: EtcdClient) -> None:
    etcd.put("/g/counter", b"0")
    writers, increments = 4, 10
    swaps: list[int] = []
    lock = threading.Lock()

    def increment() -> None:
        for _ in range(increments):
            while True:
                kv = etcd.get("/g/counter")
                assert kv is not None
                value = str(int(kv.value) + 1).encode()
                result = etcd.compare_and_swap("/g/counter", value, mod_revision=kv.mod_revision)
                if result.succeeded:
                    with lock:
                        swaps.append(result.revision)
                    break

    threads = [threading.Thread(target=increment) for _ in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    kv = etcd.get("/g/counter")
    assert kv is not None
    assert int(kv.value) == writers * increments
    assert len(set(swaps)) == writers * increments  # every winning swap its own revision


def test_should_run_the_branch_the_compares_choose(etcd: EtcdClient) -> None:
    etcd.put("/g/a", b"x")
    compares = [value_equals("/g/a", b"x"), version_equals("/g/a", 1)]

    taken = etcd.transaction(compares, [put_op("/g/b", b"1"), delete_op("/g/a")], [get_op("/g/a")])
    refused = etcd.transaction(compares, [put_op("/g/c", b"1")], [get_op("/g/b")])

    assert taken.succeeded
    assert etcd.get("/g/a") is None
    assert not refused.succeeded
    assert [(kv.key, kv.value) for kv in refused.kvs] == [("/g/b", b"1")]
    assert etcd.get("/g/c") is None


def test_should_compare_creation_revisions(etcd: EtcdClient) -> None:
    created = etcd.put("/g/a", b"1")
    etcd.put("/g/a", b"2")

    same = etcd.transaction([create_revision_equals("/g/a", created)], [put_op("/g/b", b"")])
    other = etcd.transaction([mod_revision_equals("/g/a", created)], [put_op("/g/c", b"")])

    assert same.succeeded
    assert not other.succeeded


def test_should_refuse_calls_once_closed(etcd_server: EtcdServer) -> None:
    client = EtcdClient(etcd_server.endpoint)
    client.close()

    with pytest.raises(BrokerStateError, match="operation='Range'"):
        client.get("/g/a")
