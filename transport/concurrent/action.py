"""``Action``: what a controlled handler tells the reader to do after a message or fragment.

Shared by Agrona-style ``RingBuffer.controlled_read`` and Aeron-style ``controlled_poll``:

========  =====================================================================================
ABORT     do not consume this fragment: the position stays before it and it is delivered again
          on the next poll; the poll stops.
BREAK     consume this fragment and stop the poll here (the position moves past it).
COMMIT    consume this fragment and make the position (and everything consumed so far in this
          poll) visible at once; the poll goes on.
CONTINUE  consume this fragment and go on; positions are published when the poll ends.
========  =====================================================================================
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["Action"]


class Action(IntEnum):
    """What a controlled handler returns for each fragment (see the module's table)."""

    ABORT = 1
    BREAK = 2
    COMMIT = 3
    CONTINUE = 4
