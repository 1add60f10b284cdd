"""``bench cluster``'s topics: created on the member that leads, following a ``NotLeaderError``'s
hint when the leadership moved after the ready lines (the gRPC client faked: the bench's own
rule, not the broker's, is under test)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

import aeromq.client
from aeromq.common import NotLeaderError
from bench.suites.cluster import _create_topics

_MEMBERS = [{"grpc": "127.0.0.1:1", "role": "leader"}, {"grpc": "127.0.0.1:2", "role": "follower"}]


class _Client:
    """A ``GrpcClient`` whose member ``127.0.0.1:1`` no longer leads (it names ``127.0.0.1:2``)."""

    created: list[tuple[str, str]] = []

    def __init__(self, address: str, timeout_s: float) -> None:
        self.address = address

    def __enter__(self) -> _Client:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def create_topic(self, topic: str, **_: Any) -> None:
        if self.address == "127.0.0.1:1":
            raise NotLeaderError("not the leader", leader_address="127.0.0.1:2")
        self.created.append((self.address, topic))


def test_should_create_the_topics_on_the_member_a_not_leader_answer_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(aeromq.client, "GrpcClient", _Client)
    monkeypatch.setattr(_Client, "created", [])
    cluster = SimpleNamespace(members=_MEMBERS, leader=_MEMBERS[0])
    leader = _create_topics(cluster, ["A", "B"])  # type: ignore[arg-type]
    assert leader["grpc"] == "127.0.0.1:2"
    assert _Client.created == [("127.0.0.1:2", "A"), ("127.0.0.1:2", "B")]


def test_should_raise_a_not_leader_answer_that_names_no_member(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(aeromq.client, "GrpcClient", _Client)
    cluster = SimpleNamespace(members=_MEMBERS[:1], leader=_MEMBERS[0])
    with pytest.raises(NotLeaderError):
        _create_topics(cluster, ["A"])  # type: ignore[arg-type]
