"""etcd for broker groups: a client over etcd's v3 gRPC API and a real etcd process to run.

- :class:`EtcdClient`: ``get``, ``get_prefix``, ``put`` (with a lease), ``delete``,
  ``transaction`` and ``compare_and_swap`` (on ``mod_revision``; ``0`` creates once),
  ``grant_lease``, ``keep_alive_once``, ``revoke``, ``time_to_live``; every call has a deadline.
- :class:`LeaseKeeper` (``EtcdClient.keep_lease_alive``): renews a lease every TTL/4 from a thread
  and knows until when it is surely valid (``deadline_s``).
- :class:`PrefixWatcher` (``EtcdClient.watch_prefix``): a prefix's changes to a callback, in
  order, watching again from the next revision after a broken stream.
- :class:`EtcdServer`: Debian's ``etcd`` on 127.0.0.1 with free ports and a data directory,
  tuned for one member (lease TTLs from 1 s); stop, kill, restart.
- the transaction builders (:func:`mod_revision_equals`, :func:`put_op`, ...) and the values
  handed back (:class:`KeyValue`, :class:`TxnResult`, :class:`WatchEvent`, ...);
- the errors, rooted at :class:`EtcdError` under the broker's ``BrokerError`` (tree in
  ``_errors.py``).

The protobuf schema is etcd's own, trimmed: ``aeromq.proto.etcd``.
"""

from aeromq.broker.etcd._client import DEFAULT_TIMEOUT_MS, EtcdClient
from aeromq.broker.etcd._errors import (
    EtcdCompactedError,
    EtcdError,
    EtcdLeaseNotFoundError,
    EtcdNotInstalledError,
    EtcdRequestError,
    EtcdServerError,
    EtcdTimeoutError,
    EtcdUnavailableError,
    error_from_rpc,
)
from aeromq.broker.etcd._lease_keeper import LeaseKeeper
from aeromq.broker.etcd._server import EtcdServer, etcd_binary, min_lease_ttl_s
from aeromq.broker.etcd._types import (
    EventType,
    KeyValue,
    Lease,
    LeaseStatus,
    RangeResult,
    TxnResult,
    WatchEvent,
    create_revision_equals,
    delete_op,
    encode_key,
    get_op,
    mod_revision_equals,
    prefix_range_end,
    put_op,
    value_equals,
    version_equals,
)
from aeromq.broker.etcd._watcher import PrefixWatcher

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "EtcdClient",
    "EtcdCompactedError",
    "EtcdError",
    "EtcdLeaseNotFoundError",
    "EtcdNotInstalledError",
    "EtcdRequestError",
    "EtcdServer",
    "EtcdServerError",
    "EtcdTimeoutError",
    "EtcdUnavailableError",
    "EventType",
    "KeyValue",
    "Lease",
    "LeaseKeeper",
    "LeaseStatus",
    "PrefixWatcher",
    "RangeResult",
    "TxnResult",
    "WatchEvent",
    "create_revision_equals",
    "delete_op",
    "encode_key",
    "error_from_rpc",
    "etcd_binary",
    "get_op",
    "min_lease_ttl_s",
    "mod_revision_equals",
    "prefix_range_end",
    "put_op",
    "value_equals",
    "version_equals",
]
