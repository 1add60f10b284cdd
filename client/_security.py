"""What a client presents to a secured broker: ``Credentials`` (an ACL user's name and secret,
sent as call metadata on every gRPC call and in a transport session's CONNECT) and ``ClientTls``
(the CA that signed the broker's certificate, and for mutual TLS the client's own certificate and
key, all PEM files). :func:`open_channel` makes the gRPC channel of both.

From the environment (:meth:`Credentials.from_env`, :meth:`ClientTls.from_env`):
``AEROMQ_USER``, ``AEROMQ_SECRET``, ``AEROMQ_TLS_CA_FILE``, ``AEROMQ_TLS_CERT_FILE``,
``AEROMQ_TLS_KEY_FILE``; the command-line tools read them too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import grpc

from aeromq.common import SECRET_METADATA, USER_METADATA, IllegalArgumentError

if TYPE_CHECKING:  # the stubs' names of a call's future and of a stream's answers
    from grpc import _CallFuture, _CallIterator

_Request = TypeVar("_Request")
_Response = TypeVar("_Response")

__all__ = ["ClientTls", "Credentials", "open_channel"]

_CHANNEL_OPTIONS: Final = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1_000),
)
"""gRPC's reconnect backoff grows to 120 s by default: a client would find a restarted broker
only seconds after it came back. Capped at 1 s, a channel tries again at least once a second.
(``grpc.min_reconnect_backoff_ms`` is left alone: gRPC also takes it as the connect timeout,
20 s by default, and a short one fails handshakes on a loaded machine.)"""


@dataclass(frozen=True)
class Credentials:
    """An ACL user: ``user`` and ``secret``."""

    user: str
    secret: str

    def __post_init__(self) -> None:
        if not self.user:
            raise IllegalArgumentError("credentials need a user name", user=self.user)

    def __repr__(self) -> str:  # never print the secret
        return f"Credentials(user={self.user!r}, secret=***)"

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The ``(key, value)`` pairs of gRPC call metadata that carry the user and secret."""
        return ((USER_METADATA, self.user), (SECRET_METADATA, self.secret))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Credentials | None:
        """``AEROMQ_USER`` and ``AEROMQ_SECRET`` (default empty) of ``environ`` (default
        :data:`os.environ`), or None when no user is set."""
        env = os.environ if environ is None else environ
        user = env.get("AEROMQ_USER")
        return cls(user, env.get("AEROMQ_SECRET", "")) if user else None


@dataclass(frozen=True)
class ClientTls:
    """``ca_file``: the CA to trust (None: the system's roots); ``cert_file`` and ``key_file``:
    this client's certificate and key, for a broker that asks for one (mutual TLS)."""

    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None

    def __post_init__(self) -> None:
        if (self.cert_file is None) != (self.key_file is None):
            raise IllegalArgumentError(
                "a client certificate needs its key",
                cert_file=self.cert_file,
                key_file=self.key_file,
            )

    def channel_credentials(self) -> grpc.ChannelCredentials:
        """gRPC's TLS credentials of these files, read now; raises
        :class:`IllegalArgumentError` naming a file that cannot be read."""
        return grpc.ssl_channel_credentials(
            root_certificates=_read(self.ca_file),
            private_key=_read(self.key_file),
            certificate_chain=_read(self.cert_file),
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ClientTls | None:
        """The files named by ``AEROMQ_TLS_CA_FILE``, ``AEROMQ_TLS_CERT_FILE`` and
        ``AEROMQ_TLS_KEY_FILE`` of ``environ`` (default :data:`os.environ`), or None when
        neither a CA nor a certificate is named; raises :class:`IllegalArgumentError` for a
        certificate without its key (or a key without its certificate, beside a CA)."""
        env = os.environ if environ is None else environ
        names = ("AEROMQ_TLS_CA_FILE", "AEROMQ_TLS_CERT_FILE", "AEROMQ_TLS_KEY_FILE")
        ca, cert, key = (Path(env[n]) if env.get(n) else None for n in names)
        return cls(ca, cert, key) if ca or cert else None


def _read(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise IllegalArgumentError(
            "cannot read a TLS file", path=str(path), reason=exc.strerror
        ) from exc


class _WithCredentials(
    grpc.UnaryUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds the credentials' metadata to every call of the channel."""

    def __init__(self, credentials: Credentials) -> None:
        self._metadata = credentials.metadata

    def _details(self, details: Any) -> Any:  # grpc's namedtuple: its stub type has no _replace
        return details._replace(metadata=(*(details.metadata or ()), *self._metadata))

    def intercept_unary_unary(
        self,
        continuation: Callable[[grpc.ClientCallDetails, _Request], _CallFuture[_Response]],
        details: grpc.ClientCallDetails,
        request: _Request,
    ) -> _CallFuture[_Response]:
        return continuation(self._details(details), request)

    def intercept_stream_stream(
        self,
        continuation: Callable[
            [grpc.ClientCallDetails, Iterator[_Request]], _CallIterator[_Response]
        ],
        details: grpc.ClientCallDetails,
        requests: Iterator[_Request],
    ) -> _CallIterator[_Response]:
        return continuation(self._details(details), requests)


def open_channel(
    address: str, *, tls: ClientTls | None = None, credentials: Credentials | None = None
) -> grpc.Channel:
    """A channel to ``address``: TLS with ``tls``, the credentials on every call, and a
    reconnect backoff of at most 1 s."""
    if tls is None:
        channel = grpc.insecure_channel(address, options=_CHANNEL_OPTIONS)
    else:
        channel = grpc.secure_channel(address, tls.channel_credentials(), options=_CHANNEL_OPTIONS)
    if credentials is not None:
        channel = grpc.intercept_channel(channel, _WithCredentials(credentials))
    return channel
