"""``Subscription``: a (channel, stream id) a client reads, and the images it currently has.

The client conductor adds an :class:`~transport.client.Image` for each publication session the
driver reports (ON_AVAILABLE_IMAGE) and removes it when the session goes (ON_UNAVAILABLE_IMAGE).
The image list is a tuple replaced on each change, so a poll on the application's thread reads a
consistent list without a lock.

``poll`` and ``controlled_poll`` share the fragment limit among the images round-robin, as
Aeron's ``Subscription.controlledPoll``: each call starts one image further along
(``start = round_robin_index++``, back to 0 past the end), reads from there to the end of the
list, then from the beginning up to the start, while the limit is not reached. So every image
gets its turn to go first and none starves. Control actions (``BREAK``, ``ABORT``) apply to the
image that returned them: the other images are still read.

``poll`` and ``controlled_poll`` call the poll that fits the current image list, which the
conductor's changes of the list set: with one image that image's ``poll_call`` and
``controlled_poll_call`` (the native reader's polls where built); with none or several, the
round robin over the images' ``poll_call`` s, in one native call where built
(:class:`~transport.logbuffer.term_io.ImageRoundRobin`), else :meth:`Subscription.round_robin_poll`
and :meth:`Subscription.round_robin_controlled_poll`, the Python references. They are methods,
one Python frame around that call, not the call itself bound as an attribute: a caller that
keeps ``subscription.poll`` (as Aeron's users keep a method reference) must see images that
join later; an attribute rebound on each change left such a caller polling the list it was
taken with (a subscriber that took it before its first image read nothing, ever).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from aeromq.transport.client.image import BlockHandler, Image
from aeromq.transport.logbuffer.handlers import ControlledFragmentHandler, FragmentHandler
from aeromq.transport.logbuffer.term_io import ImageRoundRobin

if TYPE_CHECKING:
    from aeromq.transport.client.client_conductor import ClientConductor
    from aeromq.transport.client.context import ImageHandler

__all__ = ["Subscription"]


class Subscription:
    """Reads the images of one (channel, stream id); made by ``Aeron.add_subscription``.

    ``poll(handler, fragment_limit) -> int`` reads up to ``fragment_limit`` fragments across the
    images, round-robin, giving each to ``handler(buffer, offset, length, header)``;
    ``controlled_poll(handler, fragment_limit) -> int`` does the same with each image applying
    the handler's :class:`~transport.concurrent.action.Action` (see ``Image``). Both return the
    fragments read.
    """

    __slots__ = (
        "_conductor",
        "_controlled_poll",
        "_images",
        "_is_closed",
        "_native_round_robin",
        "_poll",
        "_round_robin",
        "_round_robin_index",
        "available_image_handler",
        "channel",
        "channel_status_id",
        "registration_id",
        "stream_id",
        "unavailable_image_handler",
    )

    _poll: Callable[[FragmentHandler, int], int]
    _controlled_poll: Callable[[ControlledFragmentHandler, int], int]

    def __init__(
        self,
        conductor: ClientConductor,
        channel: str,
        stream_id: int,
        registration_id: int,
        available_image_handler: ImageHandler | None,
        unavailable_image_handler: ImageHandler | None,
    ) -> None:
        self._conductor = conductor
        self._images: tuple[Image, ...] = ()
        self._is_closed = False
        self._round_robin_index = 0
        self._round_robin: ImageRoundRobin | None = None
        self._native_round_robin = ImageRoundRobin is not None
        self.channel = channel
        self.stream_id = stream_id
        self.registration_id = registration_id
        self.channel_status_id = 0
        self.available_image_handler = available_image_handler
        self.unavailable_image_handler = unavailable_image_handler
        self._set_images(())

    # ----------------------------------------------------------------------------------------
    # Polls (application thread, no lock)

    def poll(self, handler: FragmentHandler, fragment_limit: int) -> int:
        """Read up to ``fragment_limit`` fragments across the images, round-robin (see the
        module): the poll that fits the current image list, looked up on every call, so that a
        caller holding this bound method sees images that come and go."""
        return self._poll(handler, fragment_limit)

    def controlled_poll(self, handler: ControlledFragmentHandler, fragment_limit: int) -> int:
        """:meth:`poll` with each image applying the handler's actions (see ``Image``)."""
        return self._controlled_poll(handler, fragment_limit)

    def round_robin_poll(self, handler: FragmentHandler, fragment_limit: int) -> int:
        """``poll`` over the image list in Python: what ``poll`` is but with one image."""
        # controlled_poll repeats this round robin on purpose, measured: one shared method
        # taking the image's poll made a poll of 2 (stub) images ~0.35 us slower (~0.86 -> ~1.2).
        images = self._images
        length = len(images)
        if length == 1:
            return images[0].poll_call(handler, fragment_limit)
        fragments_read = 0
        starting_index = self._round_robin_index
        self._round_robin_index = starting_index + 1
        if starting_index >= length:
            self._round_robin_index = starting_index = 0
        for i in range(starting_index, length):
            if fragments_read >= fragment_limit:
                return fragments_read
            fragments_read += images[i].poll_call(handler, fragment_limit - fragments_read)
        for i in range(starting_index):
            if fragments_read >= fragment_limit:
                return fragments_read
            fragments_read += images[i].poll_call(handler, fragment_limit - fragments_read)
        return fragments_read

    def round_robin_controlled_poll(
        self, handler: ControlledFragmentHandler, fragment_limit: int
    ) -> int:
        """``controlled_poll`` over the image list in Python, as :meth:`round_robin_poll`."""
        images = self._images
        length = len(images)
        if length == 1:
            return images[0].controlled_poll_call(handler, fragment_limit)
        fragments_read = 0
        starting_index = self._round_robin_index
        self._round_robin_index = starting_index + 1
        if starting_index >= length:
            self._round_robin_index = starting_index = 0
        for i in range(starting_index, length):
            if fragments_read >= fragment_limit:
                return fragments_read
            fragments_read += images[i].controlled_poll_call(
                handler, fragment_limit - fragments_read
            )
        for i in range(starting_index):
            if fragments_read >= fragment_limit:
                return fragments_read
            fragments_read += images[i].controlled_poll_call(
                handler, fragment_limit - fragments_read
            )
        return fragments_read

    def block_poll(self, handler: BlockHandler, block_length_limit: int) -> int:
        """A block poll of every image in turn; returns the bytes consumed in all."""
        bytes_consumed = 0
        for image in self._images:
            bytes_consumed += image.block_poll(handler, block_length_limit)
        return bytes_consumed

    # ----------------------------------------------------------------------------------------
    # Images

    @property
    def images(self) -> tuple[Image, ...]:
        """The current images (a snapshot: the conductor replaces the tuple on changes)."""
        return self._images

    @property
    def image_count(self) -> int:
        """How many images the subscription has now."""
        return len(self._images)

    @property
    def has_no_images(self) -> bool:
        """True when the subscription has no image."""
        return not self._images

    @property
    def is_connected(self) -> bool:
        """Whether at least one image is open."""
        return any(not image.is_closed for image in self._images)

    def image_by_session_id(self, session_id: int) -> Image | None:
        """The image of the publication with ``session_id``, or None."""
        for image in self._images:
            if image.session_id == session_id:
                return image
        return None

    def image_at_index(self, index: int) -> Image:
        """The image at ``index`` in :attr:`images` (``IndexError`` outside)."""
        return self._images[index]

    def contains_image(self, correlation_id: int) -> bool:
        """Whether an image of registration ``correlation_id`` is among the images."""
        return any(image.correlation_id == correlation_id for image in self._images)

    def add_image(self, image: Image) -> None:
        """Conductor only: publish a new image to the pollers."""
        self._set_images((*self._images, image))

    def remove_image(self, correlation_id: int) -> Image | None:
        """Conductor only: take the image away from the pollers and close it."""
        for image in self._images:
            if image.correlation_id == correlation_id:
                self._set_images(tuple(other for other in self._images if other is not image))
                image.close()
                return image
        return None

    def remove_all_images(self) -> tuple[Image, ...]:
        """Conductor only: take every image away (closing them); return them."""
        images = self._images
        self._set_images(())
        for image in images:
            image.close()
        return images

    def _set_images(self, images: tuple[Image, ...]) -> None:
        """Publish ``images`` to the pollers, and the polls that fit their number."""
        self._images = images
        if len(images) == 1:
            self._poll = images[0].poll_call
            self._controlled_poll = images[0].controlled_poll_call
        elif self._native_round_robin:
            previous = self._round_robin
            round_robin = ImageRoundRobin(
                tuple(image.poll_call for image in images),
                tuple(image.controlled_poll_call for image in images),
                self._round_robin_index if previous is None else previous.index,
            )
            self._round_robin = round_robin
            self._poll = round_robin.poll
            self._controlled_poll = round_robin.controlled_poll
        else:
            self._poll = self.round_robin_poll
            self._controlled_poll = self.round_robin_controlled_poll

    # ----------------------------------------------------------------------------------------
    # Lifecycle

    @property
    def is_closed(self) -> bool:
        """True once closed by the application, or by the client closing or stopping."""
        return self._is_closed

    def close(self) -> None:
        """Release the subscription (REMOVE_SUBSCRIPTION to the driver) and its images."""
        if not self._is_closed:
            self._conductor.release_subscription(self)

    def internal_close(self) -> None:
        """Mark closed without telling the driver (the conductor's side of a close)."""
        self._is_closed = True

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"Subscription(channel={self.channel!r}, stream_id={self.stream_id}, "
            f"registration_id={self.registration_id}, images={len(self._images)}, "
            f"closed={self._is_closed})"
        )
