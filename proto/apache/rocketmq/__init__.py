"""Apache RocketMQ's schemas."""
