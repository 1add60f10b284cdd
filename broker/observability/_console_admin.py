"""The web console's admin actions: create a topic, reset a group's offsets.

They exist only on a broker with an ACL (the security guide): without one the console stays
read-only, and a POST is refused. Each action is an HTTP POST to ``/console/actions/<name>``
with a form body and HTTP Basic credentials of an ACL user; it is authenticated and checked by
the very table the gRPC calls are (``security.RPC_PERMISSIONS``: creating a topic takes admin
on the topic, a reset admin on the group and the topic), then made through the control plane as
the same gRPC call would be. Basic credentials are readable on the wire: the console listens on
loopback by default; put it behind TLS before exposing it.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs

from aeromq.common import ResponseCode
from aeromq.proto import admin_pb2, common_pb2

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

    from aeromq.broker.broker import Broker
    from aeromq.broker.processor.admin import ControlPlane

__all__ = ["ACTIONS", "ConsoleAdmin"]

_log = logging.getLogger(__name__)

_MAX_BODY_BYTES: Final = 16 * 1024
_Request = admin_pb2.CreateTopicRequest | admin_pb2.ResetOffsetRequest
_RESET_TARGETS: Final = {
    "earliest": admin_pb2.RESET_EARLIEST,
    "latest": admin_pb2.RESET_LATEST,
    "time": admin_pb2.RESET_BY_TIME,
}

Answer = tuple[str, str]
"""(HTTP status line, a one-line text for the person who asked)."""


def _create_topic(form: Mapping[str, str]) -> admin_pb2.CreateTopicRequest:
    queues = int(form.get("queues", "4"))
    if not 1 <= queues <= 1024:
        raise ValueError(f"queues must be 1 to 1024: queues={queues}")
    config = common_pb2.TopicConfig(
        topic_name=form["topic"], read_queue_nums=queues, write_queue_nums=queues
    )
    return admin_pb2.CreateTopicRequest(topic=config)


def _reset_offset(form: Mapping[str, str]) -> admin_pb2.ResetOffsetRequest:
    target = form.get("target", "earliest")
    if target not in _RESET_TARGETS:
        raise ValueError(f"target must be earliest, latest or time: target={target!r}")
    return admin_pb2.ResetOffsetRequest(
        consumer_group=form["group"],
        topic=form["topic"],
        target=_RESET_TARGETS[target],
        timestamp_ms=int(form.get("timestamp_ms", "0")),
        queue_id=-1,
    )


ACTIONS: Final[Mapping[str, tuple[str, Callable[[Mapping[str, str]], _Request], str]]] = {
    "create-topic": ("/aeromq.v1.BrokerAdmin/CreateTopic", _create_topic, "create_topic"),
    "reset-offset": ("/aeromq.v1.BrokerAdmin/ResetOffset", _reset_offset, "reset_offset"),
}
"""Action name -> (the gRPC call it stands for, its request from the form, the control plane's
method)."""


class ConsoleAdmin:
    """The admin actions of ``broker``'s console (Caller: ``ConsoleApp``, on a POST)."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    @property
    def enabled(self) -> bool:
        return self._broker.acl is not None

    def handle(self, action: str, environ: WSGIEnvironment) -> Answer:
        """Do ``action`` for the request ``environ`` (WSGI), or say why not."""
        acl, control = self._broker.acl, self._broker.control_plane
        if acl is None or control is None:
            return "403 Forbidden", "read-only: admin actions need the broker's ACL"
        entry = ACTIONS.get(action)
        if entry is None:
            return "404 Not Found", f"no such action: action={action!r}"
        method, build, call = entry
        user, secret = _basic_credentials(environ)
        why = acl.authenticate(user, secret)
        if why is not None:
            return "401 Unauthorized", why
        try:
            request = build(_form(environ))
        except KeyError as exc:
            return "400 Bad Request", f"missing field: {exc.args[0]}"
        except ValueError as exc:
            return "400 Bad Request", str(exc)
        # imported here: broker.security imports the broker's config, which imports this
        # package (through the send processor's meter)
        from aeromq.broker.security import RPC_PERMISSIONS

        for kind, name, permission in RPC_PERMISSIONS[method](request):
            refusal = acl.refusal(user, kind, name, permission)
            if refusal is not None:
                _log.warning("console: %s", refusal)
                return "403 Forbidden", refusal
        return _made(control, call, request, user, action)


# request: the action's, create-topic's or reset-offset's (only the first names a TopicConfig)
def _made(control: ControlPlane, call: str, request: Any, user: str, action: str) -> Answer:
    response = getattr(control, call)(request)
    if response.status.code != ResponseCode.SUCCESS:
        return "409 Conflict", f"{action} refused: {response.status.message}"
    _log.info("console: user=%s %s: %s", user, action, str(request).replace("\n", " "))
    if call == "reset_offset":
        moved = ", ".join(f"queue {o.queue_id} -> {o.offset}" for o in response.offsets)
        return "200 OK", f"offsets reset: {moved or 'no queue'}"
    return "200 OK", f"topic created: {request.topic.topic_name}"


def _basic_credentials(environ: WSGIEnvironment) -> tuple[str, str]:
    """(user, secret) of an ``Authorization: Basic`` header; ("", "") without a valid one."""
    header = str(environ.get("HTTP_AUTHORIZATION", ""))
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return "", ""
    try:
        user, _, secret = base64.b64decode(encoded, validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return "", ""
    return user, secret


def _form(environ: WSGIEnvironment) -> dict[str, str]:
    """The url-encoded form of a POST body (at most 16 KiB), each field's first value."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > _MAX_BODY_BYTES:
        raise ValueError(f"form too large: bytes={length}")
    body = environ["wsgi.input"].read(length).decode() if length > 0 else ""
    return {key: values[0].strip() for key, values in parse_qs(body).items()}
