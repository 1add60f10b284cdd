"""aeromq for asyncio: :class:`AsyncLitePullConsumer` and :class:`AsyncProducer`.

Each wraps its threaded counterpart (``aeromq.consumer.DefaultLitePullConsumer``,
``aeromq.producer.Producer``) and shares its machinery: an awaited poll is woken by the same
delivery path as the threaded ``poll``, and an awaited send is the producer's asynchronous
send; neither holds a thread while it waits. Above ``producer``, ``consumer`` and ``client`` in
the layers (``tests/meta/test_layering.py``).
"""

from aeromq.aio._consumer import AsyncLitePullConsumer
from aeromq.aio._producer import AsyncProducer

__all__ = ["AsyncLitePullConsumer", "AsyncProducer"]
