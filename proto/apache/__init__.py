"""Schemas of Apache projects that aeromq speaks (see ``rocketmq/v2/README.md``)."""
