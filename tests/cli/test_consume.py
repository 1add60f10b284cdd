from __future__ import annotations

import pytest

from aeromq._cli.consume import format_message, main
from aeromq.client import MessageExt


def test_should_format_a_message_on_one_line() -> None:
    message = MessageExt(
        "T",
        b"a\tb\nc",
        {"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "ID1"},
        queue_id=3,
        queue_offset=42,
    )
    assert format_message(message, 200) == "3 42 TagA k1,k2 ID1 a\\tb\\nc"


def test_should_cut_a_long_body() -> None:
    message = MessageExt("T", b"x" * 50, {"UNIQ_KEY": "ID"}, queue_offset=1)
    assert format_message(message, 10) == "0 1 - - ID " + "x" * 10 + "..."


@pytest.mark.parametrize(
    "argv",
    [
        ["--endpoints", "127.0.0.1:1", "--topic", "T", "--queue", "no-id"],
        ["--endpoints", "127.0.0.1:1", "--topic", "T", "--count", "-1"],
        ["--endpoints", "127.0.0.1:1", "--topic", "T", "--group", "DEFAULT_CONSUMER"],
        ["--endpoints", "127.0.0.1:1"],
        ["--topic", "T", "--idle", "5 parsecs"],
    ],
)
def test_should_exit_2_on_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
