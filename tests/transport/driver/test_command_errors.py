"""ON_ERROR for every kind of bad command: Aeron's code and a text naming the bad value.

Nothing a client writes may crash the conductor: each failure is also counted on the Errors
system counter and recorded in the cnc error log, and the driver goes on answering.
"""

from __future__ import annotations

import os
import random
import struct

import pytest

from aeromq.transport.command import (
    ADD_DESTINATION,
    ADD_PUBLICATION,
    ADD_SUBSCRIPTION,
    ON_ERROR,
    ON_EXCLUSIVE_PUBLICATION_READY,
    ON_PUBLICATION_READY,
    ErrorCode,
)
from aeromq.transport.concurrent.error_log_reader import read as read_error_log
from aeromq.transport.driver import MediaDriver
from aeromq.transport.testing.driver_client import DriverClient, DriverResponse
from tests.transport.driver.support import wait_until

ERRORS_COUNTER_ID = 15


def _error(client: DriverClient, correlation_id: int) -> DriverResponse:
    response = client.await_correlated(correlation_id)
    assert response.type_id == ON_ERROR, response
    assert response.message.offending_command_correlation_id == correlation_id
    return response


def _logged(client: DriverClient) -> list[str]:
    texts: list[str] = []
    read_error_log(client.cnc.error_log_buffer, lambda count, first, last, text: texts.append(text))
    return texts


@pytest.mark.parametrize(
    ("channel", "code", "fragments"),
    [
        ("aeron:bogus", ErrorCode.INVALID_CHANNEL, ["aeron:bogus", "media"]),
        ("ipc", ErrorCode.INVALID_CHANNEL, ["must start with 'aeron:'"]),
        ("aeron:ipc?term-length=3000", ErrorCode.INVALID_CHANNEL, ["term-length", "3000"]),
        ("aeron:ipc?mtu=100", ErrorCode.INVALID_CHANNEL, ["mtu", "100"]),
        ("aeron:ipc?init-term-id=5", ErrorCode.INVALID_CHANNEL, ["term-id"]),
        ("aeron:ipc?session-id=abc", ErrorCode.INVALID_CHANNEL, ["session-id", "abc"]),
        ("aeron:ipc?session-id=tag:5", ErrorCode.INVALID_CHANNEL, ["network publication"]),
        (
            "aeron:udp?control=localhost:40123|control-mode=dynamic",
            ErrorCode.NOT_SUPPORTED,
            ["control-mode=dynamic"],
        ),
    ],
)
def test_should_refuse_a_bad_publication_channel(
    client: DriverClient, channel: str, code: ErrorCode, fragments: list[str]
) -> None:
    error = _error(client, client.add_publication(channel, 10)).message
    assert error.error_code == code
    for fragment in fragments:
        assert fragment in error.error_message


def test_should_refuse_a_bad_subscription_channel(client: DriverClient) -> None:
    bad = _error(client, client.add_subscription("aeron:ipc?tether=maybe", 10)).message
    assert bad.error_code == ErrorCode.INVALID_CHANNEL
    assert "tether" in bad.error_message and "maybe" in bad.error_message
    mdc = "aeron:udp?endpoint=localhost:40124|control-mode=manual"
    udp = _error(client, client.add_subscription(mdc, 10))
    assert udp.message.error_code == ErrorCode.NOT_SUPPORTED
    spy = _error(client, client.add_subscription("aeron-spy:aeron:udp?endpoint=localhost:1", 10))
    assert spy.message.error_code == ErrorCode.NOT_SUPPORTED
    assert "spy" in spy.message.error_message


@pytest.mark.parametrize(
    ("remove", "code", "what"),
    [
        ("remove_publication", ErrorCode.UNKNOWN_PUBLICATION, "unknown publication"),
        ("remove_subscription", ErrorCode.UNKNOWN_SUBSCRIPTION, "unknown subscription"),
        ("remove_counter", ErrorCode.UNKNOWN_COUNTER, "unknown counter"),
    ],
)
def test_should_refuse_an_unknown_registration_id(
    client: DriverClient, remove: str, code: ErrorCode, what: str
) -> None:
    client.await_correlated(client.add_subscription("aeron:ipc", 10))
    error = _error(client, getattr(client, remove)(987654)).message
    assert error.error_code == code
    assert what in error.error_message
    assert "registration_id=987654" in error.error_message
    assert f"client_id={client.client_id}" in error.error_message


def test_should_refuse_a_malformed_command_with_its_correlation_id(client: DriverClient) -> None:
    payload = struct.pack("<qqii", client.client_id, 4242, 10, 500) + b"aeron:ipc"
    client.send_raw(ADD_PUBLICATION, payload)
    error = _error(client, 4242).message
    assert error.error_code == ErrorCode.MALFORMED_COMMAND
    assert "channel" in error.error_message
    assert "length" in error.error_message


def test_should_refuse_a_command_too_short_for_a_correlation_id(client: DriverClient) -> None:
    client.send_raw(ADD_SUBSCRIPTION, b"\x01\x02\x03")
    error = client.await_response(ON_ERROR).message
    assert error.offending_command_correlation_id == 0
    assert error.error_code == ErrorCode.MALFORMED_COMMAND


def test_should_refuse_an_unknown_command_type(client: DriverClient) -> None:
    client.send_raw(0x77, struct.pack("<qq", client.client_id, 31337))
    error = _error(client, 31337).message
    assert error.error_code == ErrorCode.UNKNOWN_COMMAND_TYPE_ID
    assert "msg_type_id=119" in error.error_message


def test_should_refuse_a_command_this_driver_does_not_support(client: DriverClient) -> None:
    client.send_raw(ADD_DESTINATION, struct.pack("<qqqi", client.client_id, 555, 1, 0))
    error = _error(client, 555).message
    assert error.error_code == ErrorCode.NOT_SUPPORTED
    assert "ADD_DESTINATION" in error.error_message


def test_should_refuse_a_pinned_session_id_in_exclusive_use(client: DriverClient) -> None:
    exclusive = client.add_publication("aeron:ipc?session-id=5000", 10, exclusive=True)
    client.await_correlated(exclusive, ON_EXCLUSIVE_PUBLICATION_READY)
    for is_exclusive in (True, False):
        error = _error(
            client, client.add_publication("aeron:ipc?session-id=5000", 10, exclusive=is_exclusive)
        )
        assert error.message.error_code == ErrorCode.GENERIC_ERROR
        assert "already in exclusive use" in error.message.error_message
        assert "session_id=5000" in error.message.error_message
    other_stream = client.add_publication("aeron:ipc?session-id=5000", 11)
    assert client.await_correlated(other_stream).type_id == ON_PUBLICATION_READY


@pytest.mark.parametrize(
    ("channel", "key"),
    [
        ("aeron:ipc?term-length=128k", "term-length"),
        ("aeron:ipc?mtu=4096", "mtu"),
        ("aeron:ipc?session-id=77", "session-id"),
    ],
)
def test_should_refuse_joining_a_shared_publication_with_other_parameters(
    client: DriverClient, channel: str, key: str
) -> None:
    client.await_correlated(client.add_publication("aeron:ipc", 10), ON_PUBLICATION_READY)
    error = _error(client, client.add_publication(channel, 10)).message
    assert error.error_code == ErrorCode.GENERIC_ERROR
    assert f"existing publication has different '{key}'" in error.error_message


def test_should_count_and_log_every_refused_command(client: DriverClient) -> None:
    _error(client, client.add_publication("aeron:nope", 10))
    _error(client, client.remove_subscription(1))
    assert client.counters.get_counter_value(ERRORS_COUNTER_ID) == 2
    logged = _logged(client)
    assert any("invalid channel" in text for text in logged)
    assert any("unknown subscription" in text for text in logged)


def test_should_survive_random_garbage_on_the_to_driver_buffer(client: DriverClient) -> None:
    rng = random.Random(7)
    for index in range(300):
        if index % 25 == 0:
            wait_until(lambda: client.to_driver.size() == 0, what="the driver to drain its ring")
            client.poll()
        type_id = rng.choice([1, 2, 3, 4, 5, 6, 9, 10, 11, 14, rng.randint(1, 0x7FFF)])
        length = rng.randint(0, 200)
        payload = bytearray(rng.getrandbits(8) for _ in range(length))
        if length >= 8 and rng.random() < 0.5:
            payload[0:8] = client.client_id.to_bytes(8, "little", signed=True)
        if type_id == 14:
            type_id = 0x0E + 0x100  # never a real TERMINATE_DRIVER with an accepted token
        client.send_raw(type_id, bytes(payload))
    correlation_id = client.add_publication("aeron:ipc", 99)
    assert client.await_correlated(correlation_id).type_id == ON_PUBLICATION_READY
    assert client.counters.get_counter_value(ERRORS_COUNTER_ID) > 0


def test_should_count_and_log_a_failing_publication_and_keep_the_others_going(
    driver: MediaDriver, client: DriverClient
) -> None:
    broken = client.await_correlated(client.add_publication("aeron:ipc", 10)).message
    healthy = client.await_correlated(client.add_publication("aeron:ipc", 11)).message
    publications = {p.registration_id: p for p in driver.conductor.ipc.publications}

    def boom(now_ns: int) -> None:
        raise RuntimeError("publication timer broke")

    publications[broken.registration_id].on_time_event = boom  # type: ignore[method-assign]
    wait_until(
        lambda: any("publication timer broke" in text for text in _logged(client)),
        what="the error to be logged",
    )
    assert client.counters.get_counter_value(ERRORS_COUNTER_ID) >= 1
    client.await_correlated(client.remove_publication(healthy.correlation_id))
    wait_until(lambda: not os.path.exists(healthy.log_file_name), what="the healthy one's end")
    assert os.path.exists(broken.log_file_name)
