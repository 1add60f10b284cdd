"""The fixes of the command line, each driving the real ``aeromq`` in a subprocess against a real
broker process."""

from __future__ import annotations

import json

from aeromq.broker.testing import ServerProcess
from aeromq.client.grpc_client import GrpcClient

from .conftest import data_dir, run_aeromq

ADMIN_TIMEOUT_S = 30.0


def _create_topic(broker: ServerProcess, topic: str, queues: int) -> None:
    with GrpcClient(broker.grpc_address, timeout_s=ADMIN_TIMEOUT_S) as admin:
        admin.create_topic(topic, read_queue_nums=queues, write_queue_nums=queues)


def _produce(broker: ServerProcess, topic: str, count: int) -> None:
    sent = run_aeromq(
        "produce", "--topic", topic, "--count", str(count), "--batch", "50", "--json",
        endpoints=broker.grpc_address,
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    assert json.loads(sent.stdout)["sent"] == count


def _committed(broker: ServerProcess, group: str, topic: str) -> int:
    with GrpcClient(broker.grpc_address, timeout_s=ADMIN_TIMEOUT_S) as admin:
        progress = admin.consumer_progress(group, topic)
    return sum(max(q.consumer_offset, 0) for q in progress.queues)


def test_should_print_and_commit_exactly_the_count(broker: ServerProcess) -> None:
    _create_topic(broker, "counted", 2)
    _produce(broker, "counted", 40)
    first = run_aeromq(
        "consume", "--topic", "counted", "--group", "counters", "--from", "first", "--count", "5",
        endpoints=broker.grpc_address,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    printed = first.stdout.splitlines()
    assert len(printed) == 5
    assert "consumed=5 group=counters" in first.stderr
    assert _committed(broker, "counters", "counted") == 5

    second = run_aeromq(
        "consume", "--topic", "counted", "--group", "counters", "--count", "35", "--json",
        endpoints=broker.grpc_address,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    records = [json.loads(line) for line in second.stdout.splitlines()]
    assert len(records) == 35
    seen = {(r["queue_id"], r["offset"]) for r in records}
    seen |= {(int(line.split()[0]), int(line.split()[1])) for line in printed}
    assert len(seen) == 40  # the second run began where the first committed: none twice
    assert _committed(broker, "counters", "counted") == 40


def test_should_give_each_run_a_group_of_its_own_unless_one_is_given(
    broker: ServerProcess,
) -> None:
    _create_topic(broker, "shared", 1)
    _produce(broker, "shared", 10)
    runs = [
        run_aeromq(
            "consume",
            "--topic",
            "shared",
            "--from",
            "first",
            "--count",
            "10",
            endpoints=broker.grpc_address,
        )
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert len(run.stdout.splitlines()) == 10  # each run saw the whole topic
    groups = [run.stderr.split("group=")[1].split()[0] for run in runs]
    assert groups[0] != groups[1]
    assert all(group.startswith("aeromq-consume-") for group in groups)


def test_should_exit_1_with_one_line_when_the_topic_does_not_exist(broker: ServerProcess) -> None:
    missing = run_aeromq(
        "consume", "--topic", "no-such-topic", endpoints=broker.grpc_address,
    )  # fmt: skip
    assert missing.returncode == 1
    assert missing.stdout == ""
    assert missing.stderr.count("\n") == 1, missing.stderr
    assert missing.stderr.startswith("aeromq consume: TopicNotFoundError")
    assert "no-such-topic" in missing.stderr


def test_should_exit_1_with_one_line_when_the_broker_is_unreachable() -> None:
    unreachable = run_aeromq("consume", "--topic", "orders", endpoints="127.0.0.1:1")
    assert unreachable.returncode == 1
    assert unreachable.stderr.count("\n") == 1, unreachable.stderr
    assert unreachable.stderr.startswith("aeromq consume: BrokerUnavailableError")
    assert "127.0.0.1:1" in unreachable.stderr


def test_should_find_a_running_brokers_media_driver_with_stat_broker(
    broker: ServerProcess,
) -> None:
    assert any("aeromq stat --broker" in line for line in broker.log)  # the broker says where
    run_file = json.loads((data_dir(broker) / "broker.json").read_text())
    assert run_file["pid"] == broker.pid
    assert run_file["aeron_dir"] == broker.ready["aeron_dir"]
    stat = run_aeromq("stat", "--broker", str(data_dir(broker)), "--once")
    assert stat.returncode == 0, stat.stderr
    assert f"pid {broker.pid}," in stat.stdout.splitlines()[0]
    assert "\x1b[" not in stat.stdout


def test_should_take_old_option_spellings_as_hidden_aliases(broker: ServerProcess) -> None:
    _create_topic(broker, "legacy", 1)
    sent = run_aeromq(
        "produce", "--endpoints", broker.grpc_address, "--topic", "legacy", "--timeout-ms", "5000"
    )
    assert sent.returncode == 0, sent.stderr
    consumed = run_aeromq(
        "consume", "--endpoints", broker.grpc_address, "--topic", "legacy", "--from", "first",
        "--idle-s", "60", "--count", "1",
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    assert len(consumed.stdout.splitlines()) == 1


def test_should_print_one_json_record_per_broker_with_admin_stats_json(
    broker: ServerProcess,
) -> None:
    done = run_aeromq("admin", "stats", "--json", endpoints=broker.grpc_address)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(records) == 1
    assert records[0]["broker"] == "broker-a"
    assert "send.messages" in records[0]["counters"]


def test_should_show_group_none_for_a_single_broker_with_admin_replication(
    broker: ServerProcess,
) -> None:
    done = run_aeromq("admin", "replication", endpoints=broker.grpc_address)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "broker broker-a: group=none role=single (not a broker group)\n"
    as_json = run_aeromq("admin", "replication", "--json", endpoints=broker.grpc_address)
    assert json.loads(as_json.stdout) == {"broker": "broker-a", "group": None, "role": "single"}
