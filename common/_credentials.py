"""How credentials travel on a gRPC call: the metadata keys of an ACL user's name and secret,
written by the clients and read by the broker's ACL interceptor."""

from __future__ import annotations

from typing import Final

__all__ = ["SECRET_METADATA", "USER_METADATA"]

USER_METADATA: Final = "x-aeromq-user"
"""The call metadata key of the ACL user's name."""
SECRET_METADATA: Final = "x-aeromq-secret"
"""The call metadata key of the user's secret (send it over TLS only)."""
