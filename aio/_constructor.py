"""``built_from``: an asyncio face takes the constructor arguments of the class it wraps.

An asyncio face (``AsyncProducer``) wraps a threaded object made from the same arguments as
its own. Rather than writing that parameter list a second time, its ``__init__(self, sync)``
takes the object already made, and ``@built_from(Producer)`` turns it into an ``__init__`` with
``Producer``'s parameters (for mypy, through a ``ParamSpec``, and for ``inspect.signature``):
one list of parameters, checked for both.

Caller: the asyncio faces of this package, once per class, at import.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

__all__ = ["built_from"]

_P = ParamSpec("_P")
_Sync = TypeVar("_Sync")
_Face = TypeVar("_Face")


def built_from(
    sync: Callable[_P, _Sync],
) -> Callable[[Callable[[_Face, _Sync], None]], Callable[Concatenate[_Face, _P], None]]:
    """Decorate ``__init__(self, made)``: the decorated ``__init__`` takes the arguments of
    ``sync`` (a class), makes ``sync(...)`` of them and passes it on as ``made``."""

    def decorate(init: Callable[[_Face, _Sync], None]) -> Callable[Concatenate[_Face, _P], None]:
        @functools.wraps(init)  # the face's own name and docstring
        def init_face(self: _Face, /, *args: _P.args, **kwargs: _P.kwargs) -> None:
            init(self, sync(*args, **kwargs))

        # inspect.signature follows __wrapped__: it shows the parameters of the wrapped class
        functools.update_wrapper(init_face, sync.__init__, assigned=(), updated=())
        return init_face

    return decorate
