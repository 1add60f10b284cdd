"""RocketMQ 5's gRPC protocol, package ``apache.rocketmq.v2`` (the ``.proto`` files of Apache
RocketMQ, Apache-2.0; where they came from: ``README.md`` here), compiled by
``python -m aeromq.proto.generate``. The broker's ``MessagingService`` endpoint
(:mod:`aeromq.broker.rocketmq`) serves it.
"""
