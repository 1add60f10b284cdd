"""etcd v3's gRPC API, trimmed to what aeromq uses: packages ``etcdserverpb`` (the ``KV``, ``Watch``
and ``Lease`` services, ``rpc.proto``) and ``mvccpb`` (``KeyValue``, ``Event``, ``kv.proto``), from
the etcd project (Apache-2.0; where they came from and what was cut: ``README.md`` here), compiled
by ``python -m aeromq.proto.generate``. The client over them is :mod:`aeromq.broker.etcd`.
"""
