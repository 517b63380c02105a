"""Sharded runs: the nodes of one run spread over shards.

``_coordinator`` (the coordinator: reporter, trace, slot decisions, the merge), ``_shard``
(one shard's slot loop), ``_link`` (the protocol between them), ``_mqtt_link`` (that link
over an MQTT broker, one process per shard) and ``_memory_link`` (in one process, every
shard a Trio task), ``_wire`` (the spec, faults and ledger as plain data), ``_broker`` (a
private mosquitto, or the one the user names), ``_mqtt`` (a Trio client for it).
"""

from ._link import CoordinatorLink, ShardLink
from ._memory_link import run_sharded_in_memory

# The public face of the two links: a run with ``shards > 1`` goes over MQTT (``slotnet.run``);
# ``run_sharded_in_memory`` runs the same protocol with every shard a task of this process
# (the verified fake: tests/contract/test_shard_links.py holds both links to one result).
__all__ = ["CoordinatorLink", "ShardLink", "run_sharded_in_memory"]
