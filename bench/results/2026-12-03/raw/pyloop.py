"""``python pyloop.py``: the best of five runs of a loop of plain Python work (an object made, a
method called, a dict set and an int formatted per step, 300,000 steps), to compare two builds of
one interpreter (round.md, "The interpreter")."""

from __future__ import annotations

import time


class _Pair:
    __slots__ = ("x", "y")

    def __init__(self, x: int, y: int) -> None:
        self.x = x
        self.y = y

    def plus(self, z: int) -> int:
        return self.x + z


def _loop(steps: int) -> int:
    table: dict[int, _Pair] = {}
    total = 0
    for i in range(steps):
        pair = _Pair(i, 2)
        total += pair.plus(i)
        table[i & 255] = pair
        total += len(str(i))
    return total


def main() -> None:
    best_s = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        _loop(300_000)
        best_s = min(best_s, time.perf_counter() - started)
    print(f"{best_s * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
