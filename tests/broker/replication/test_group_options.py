"""The group options of ``BrokerConfig`` (checked like every other option, whatever the mode),
what they make of the store's config, and the leader's self-fence on its own."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from aeromq.broker import BrokerConfigError
from aeromq.broker.config import BrokerConfig
from aeromq.broker.replication import GroupMember, GroupSettings, SelfFence
from aeromq.broker.replication.group_member import etcd_target
from aeromq.broker.replication.replicated_log import ReplicatedLog
from aeromq.transport.client import Aeron


def test_should_be_a_group_member_once_etcd_is_named(tmp_path: Path) -> None:
    single = BrokerConfig(data_dir=tmp_path)
    member = BrokerConfig.load(
        ["--etcd-endpoints", "127.0.0.1:2379, 127.0.0.1:2380", "--member-id", "2",
         "--replication-timeout", "3s", "--data-dir", str(tmp_path)],
        environ={},
    )  # fmt: skip

    assert not single.group_mode and single.etcd_endpoint_list == ()
    assert not single.to_store_config().replicated
    assert member.group_mode
    assert member.etcd_endpoint_list == ("127.0.0.1:2379", "127.0.0.1:2380")
    store = member.to_store_config()
    assert store.replicated and store.replication_timeout_ms == 3000


def test_should_give_the_leader_fsync_option_to_the_member_replication(tmp_path: Path) -> None:
    default = BrokerConfig(data_dir=tmp_path)
    threaded = BrokerConfig.load(
        ["--etcd-endpoints", "127.0.0.1:2379", "--data-dir", str(tmp_path)],
        environ={"AEROMQ_BROKER_LEADER_FSYNC_INLINE": "false"},
    )

    def member(inline: bool) -> GroupMember:
        settings = GroupSettings(("127.0.0.1:2379",), "g", 0, leader_fsync_inline=inline)
        return GroupMember(settings, cast(Aeron, None), cast(ReplicatedLog, None), tmp_path)

    assert default.leader_fsync_inline and not threaded.leader_fsync_inline
    assert GroupSettings(("127.0.0.1:2379",), "g", 0).leader_fsync_inline
    assert member(True).replication.leader_fsync_inline
    assert not member(False).replication.leader_fsync_inline


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"etcd_endpoints": "localhost"}, "etcd_endpoints"),
        ({"etcd_endpoints": " , "}, "etcd_endpoints"),
        ({"member_id": 3}, "member_id"),
        ({"group_size": 0}, "group_size"),
        ({"min_isr": 4}, "min_isr"),
        ({"replication_endpoint": "127.0.0.1"}, "replication_endpoint"),
        ({"lease_ttl_ms": 1500}, "lease_ttl_ms"),
        ({"lease_ttl_ms": 500}, "lease_ttl_ms"),
        ({"replica_lag_max_ms": 10}, "replica_lag_max_ms"),
        ({"replication_timeout_ms": 0}, "replication_timeout_ms"),
    ],
)
def test_should_refuse_a_bad_group_option(
    tmp_path: Path, values: dict[str, object], key: str
) -> None:
    with pytest.raises(BrokerConfigError, match=f"key='{key}'"):
        BrokerConfig(data_dir=tmp_path).with_overrides(**values)


def test_should_name_several_etcd_addresses_as_one_grpc_target() -> None:
    assert etcd_target(["127.0.0.1:2379"]) == "127.0.0.1:2379"
    assert etcd_target(["127.0.0.1:1", "127.0.0.2:2"]) == "ipv4:127.0.0.1:1,127.0.0.2:2"
    assert etcd_target(["etcd-a:2379", "etcd-b:2379"]) == "etcd-a:2379"


def test_should_fence_once_the_lease_is_not_surely_valid_and_again_after_arming() -> None:
    valid = [True]
    fence = SelfFence(lambda now: valid[0], clock_s=lambda: 0.0)

    assert fence.may_act() and not fence.check()

    valid[0] = False

    assert not fence.may_act()
    assert fence.check() and fence.fenced
    assert not fence.check()  # fires once a term
    valid[0] = True
    assert not fence.may_act()  # still fenced: the term is over

    fence.arm()

    assert fence.may_act() and fence.times_fenced == 1
