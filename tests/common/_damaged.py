"""Damaged bytes for the tests of the native envelope readers (``test_pull_envelope``,
``test_stored_send``): a message cut short, a byte flipped, bytes appended, or random bytes."""

from __future__ import annotations

from hypothesis import strategies as st


def damaged(whole: bytes, data: st.DataObject) -> bytes:
    """``whole`` damaged one way that ``data`` draws (see module)."""
    kind = data.draw(st.sampled_from(["cut", "flip", "append", "random"]))
    if kind == "cut":
        return whole[: data.draw(st.integers(0, len(whole)))]
    if kind == "flip":
        flipped = bytearray(whole)
        at = data.draw(st.integers(0, len(whole) - 1))
        flipped[at] ^= data.draw(st.integers(1, 255))
        return bytes(flipped)
    if kind == "append":
        return whole + data.draw(st.binary(min_size=1, max_size=12))
    return data.draw(st.binary(max_size=64))
