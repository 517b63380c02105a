"""Sharded runs: the nodes of one run spread over worker processes.

``_coordinator`` (the coordinator and the shard loop), ``_broker`` (a private mosquitto,
or the one the user names), ``_mqtt`` (a Trio client for it).
"""
