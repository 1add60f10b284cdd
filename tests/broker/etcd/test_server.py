"""The etcd process helper (start, stop, kill, restart on the same data and ports, pause) and the
typed errors a client gets from an etcd that is down or hung."""

from __future__ import annotations

import time
from pathlib import Path

import grpc
import pytest

from aeromq.broker import BrokerError
from aeromq.broker.etcd import (
    EtcdClient,
    EtcdError,
    EtcdLeaseNotFoundError,
    EtcdNotInstalledError,
    EtcdRequestError,
    EtcdServer,
    EtcdServerError,
    EtcdTimeoutError,
    EtcdUnavailableError,
    error_from_rpc,
    etcd_binary,
    min_lease_ttl_s,
)


def test_should_serve_on_free_loopback_ports(etcd_server: EtcdServer, shm_dir: Path) -> None:
    other = EtcdServer(shm_dir / "other")
    other.start()
    try:
        assert etcd_server.endpoint.startswith("127.0.0.1:")
        assert other.endpoint != etcd_server.endpoint
        with EtcdClient(other.endpoint) as client:
            client.put("/x", b"1")
        with EtcdClient(etcd_server.endpoint) as client:
            assert client.get("/x") is None
    finally:
        other.stop()


def test_should_keep_keys_and_endpoint_across_a_kill_and_restart(
    etcd_server: EtcdServer, etcd: EtcdClient
) -> None:
    revision = etcd.put("/g/state", b"epoch=1")
    endpoint, first_pid = etcd_server.endpoint, etcd_server.pid

    etcd_server.kill()
    assert etcd_server.pid is None
    etcd_server.start()

    kv = etcd.get("/g/state")  # the same client reconnects
    assert etcd_server.endpoint == endpoint
    assert etcd_server.pid not in (None, first_pid)
    assert kv is not None
    assert (kv.value, kv.mod_revision) == (b"epoch=1", revision)


def test_should_stop_on_sigterm_and_start_again(etcd_server: EtcdServer, etcd: EtcdClient) -> None:
    etcd.put("/g/a", b"1")

    started = time.monotonic()
    etcd_server.stop()
    stopped_s = time.monotonic() - started
    etcd_server.start()

    assert stopped_s < 10
    assert etcd.get("/g/a") is not None
    assert etcd_server.starts == 2


def test_should_grant_the_ttls_it_was_tuned_for(etcd: EtcdClient, etcd_server: EtcdServer) -> None:
    assert etcd_server.min_lease_ttl_s == 1
    assert [etcd.grant_lease(ttl_s).ttl_s for ttl_s in (1, 2)] == [1, 2]


def test_should_derive_the_lease_floor_from_the_election_timeout() -> None:
    assert min_lease_ttl_s(500) == 1
    assert min_lease_ttl_s(1000) == 2  # etcd's default election timeout: 1 s TTLs become 2 s
    assert min_lease_ttl_s(2000) == 3


def test_should_refuse_an_election_timeout_under_five_heartbeats(shm_dir: Path) -> None:
    with pytest.raises(EtcdServerError, match="election_timeout_ms=400"):
        EtcdServer(shm_dir / "etcd", heartbeat_interval_ms=100, election_timeout_ms=400)


def test_should_name_the_package_when_etcd_is_missing(shm_dir: Path) -> None:
    missing = str(shm_dir / "no-etcd")

    with pytest.raises(EtcdNotInstalledError, match="etcd-server") as caught:
        EtcdServer(shm_dir / "etcd", binary=missing).start()

    assert caught.value.path == missing  # type: ignore[attr-defined]
    assert etcd_binary().endswith("etcd")


def test_should_report_an_etcd_that_cannot_start_with_its_output(
    etcd_server: EtcdServer, shm_dir: Path
) -> None:
    port = int(etcd_server.endpoint.rpartition(":")[2])
    clash = EtcdServer(shm_dir / "clash", client_port=port)

    with pytest.raises(EtcdServerError, match="did not start") as caught:
        clash.start(timeout_s=10)

    assert caught.value.exit_code not in (None, 0)
    assert any("address already in use" in line for line in caught.value.output)


def test_should_raise_unavailable_naming_endpoint_and_key_when_etcd_is_down(
    etcd_server: EtcdServer, etcd: EtcdClient
) -> None:
    etcd_server.kill()

    with pytest.raises(EtcdUnavailableError) as caught:
        etcd.get("/g/state")

    error = caught.value
    assert isinstance(error, EtcdError) and isinstance(error, BrokerError)
    assert error.retriable
    assert (error.endpoint, error.operation, error.key) == (  # type: ignore[attr-defined]
        etcd_server.endpoint,
        "Range",
        "/g/state",
    )
    assert f"endpoint='{etcd_server.endpoint}'" in str(error)
    for call in (
        lambda: etcd.put("/g/a", b"1"),
        lambda: etcd.compare_and_swap("/g/a", b"1", mod_revision=0),
        lambda: etcd.grant_lease(1),
        lambda: etcd.keep_alive_once(1),
        lambda: etcd.revoke(1),
        lambda: etcd.time_to_live(1),
    ):
        with pytest.raises(EtcdUnavailableError):
            call()


def test_should_time_out_on_a_hung_etcd(etcd_server: EtcdServer, etcd: EtcdClient) -> None:
    etcd.get("/g/a")  # connected
    etcd_server.pause()
    try:
        started = time.monotonic()
        with pytest.raises(EtcdTimeoutError, match="key='/g/a'") as caught:
            etcd.get("/g/a", timeout_ms=300)
        waited_s = time.monotonic() - started
    finally:
        etcd_server.resume()

    assert isinstance(caught.value, TimeoutError)
    assert 0.25 <= waited_s < 5
    assert etcd.get("/g/a") is None  # serves again


class _FailedCall(grpc.RpcError, grpc.Call):
    """A failed gRPC call as grpcio raises it (an RpcError that is also a Call)."""

    def __init__(self, status: grpc.StatusCode, details: str) -> None:
        self._status = status
        self._details = details

    def code(self) -> grpc.StatusCode:
        return self._status

    def details(self) -> str:
        return self._details

    def initial_metadata(self) -> tuple[()]:
        return ()

    def trailing_metadata(self) -> tuple[()]:
        return ()

    def add_callback(self, callback: object) -> bool:
        return False

    def cancel(self) -> bool:
        return False

    def is_active(self) -> bool:
        return False

    def time_remaining(self) -> float:
        return 0.0


@pytest.mark.parametrize(
    ("status", "details", "expected"),
    [
        (grpc.StatusCode.UNAVAILABLE, "etcdserver: no leader", EtcdUnavailableError),
        (grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded", EtcdTimeoutError),
        (
            grpc.StatusCode.NOT_FOUND,
            "etcdserver: requested lease not found",
            EtcdLeaseNotFoundError,
        ),
        (grpc.StatusCode.INVALID_ARGUMENT, "etcdserver: key is not provided", EtcdRequestError),
    ],
)
def test_should_translate_grpc_statuses_to_typed_errors(
    status: grpc.StatusCode, details: str, expected: type[EtcdError]
) -> None:
    error = error_from_rpc(_FailedCall(status, details), "Put", "127.0.0.1:1", key="/k")

    assert type(error) is expected
    assert "endpoint='127.0.0.1:1'" in str(error) and "key='/k'" in str(error)
    if expected is EtcdRequestError:
        assert error.status == "INVALID_ARGUMENT"  # type: ignore[attr-defined]
        assert not error.retriable
