"""``TlsConfig``: the gRPC server's certificate and key (PEM files), and, for mutual TLS, the
CA whose certificates clients must present.

``server_credentials`` reads the files when the server starts; a missing or unreadable file is a
:class:`ConfigError` naming the field and the path.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc

from aeromq.broker._errors import ConfigError

__all__ = ["TlsConfig", "server_credentials"]


@dataclass(frozen=True)
class TlsConfig:
    """``cert_file`` and ``key_file`` (PEM): the server's chain and private key;
    ``client_ca_file`` (PEM) set: clients must present a certificate it signed (mTLS)."""

    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None

    @property
    def mutual(self) -> bool:
        """Whether clients must present a certificate (``client_ca_file`` is set)."""
        return self.client_ca_file is not None

    def describe(self) -> str:
        """``"mtls"`` or ``"tls"``, for the server's start-up log line."""
        return "mtls" if self.mutual else "tls"


def _read(field: str, path: Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(
            "cannot read a TLS file", field=field, path=str(path), reason=exc.strerror
        ) from exc


def server_credentials(tls: TlsConfig) -> grpc.ServerCredentials:
    """The server credentials of ``tls`` (the client certificate required when mutual)."""
    chain = _read("tls_cert_file", tls.cert_file)
    key = _read("tls_key_file", tls.key_file)
    client_ca = (
        None if tls.client_ca_file is None else _read("tls_client_ca_file", tls.client_ca_file)
    )
    return grpc.ssl_server_credentials(
        [(key, chain)], root_certificates=client_ca, require_client_auth=client_ca is not None
    )
