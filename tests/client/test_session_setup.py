"""The session set-up's channel rules (no driver needed)."""

from __future__ import annotations

from aeromq.client._session_setup import with_term_length


def test_should_give_udp_session_channels_a_term_length_unless_they_name_one() -> None:
    assert with_term_length("aeron:udp?endpoint=h:1", 1 << 26) == (
        "aeron:udp?endpoint=h:1|term-length=67108864"
    )
    assert with_term_length("aeron:udp?endpoint=h:1|term-length=1m", 1 << 26).endswith("=1m")
    assert with_term_length("aeron:ipc", 1 << 26) == "aeron:ipc"
    assert with_term_length("aeron:udp?endpoint=h:1", 0) == "aeron:udp?endpoint=h:1"
