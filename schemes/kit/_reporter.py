"""A reporter base with the defaults most schemes want."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._base import PacketBook, Setup
from ._checks import Liveness
from ._wire import int_from_wire, int_to_wire

__all__ = ["BaseReporter", "int_from_wire", "int_to_wire", "sum_columns", "split_dup"]

def sum_columns(rows: Sequence[Sequence[Any]]) -> list[Any]:
    """Element-wise sums of equal-length rows (the shards' per-node lists: each node's figure
    is nonzero in its own shard's only, so the sums are that shard's figures).

    Example:
        >>> sum_columns([(1, 0, 0), (0, 2, 3)])
        [1, 2, 3]
    """
    return [sum(col) for col in zip(*rows)]


def split_dup(lost: Mapping[str, int]) -> tuple[dict[str, int], int]:
    """The fault ledger a reporter's ``invariants`` gets, split: messages lost by cause, and
    the copies ``dup`` faults added (the ledger counts those as ``"dup"``, negative, so that
    its sum is the net number of messages gone).

    Example:
        >>> split_dup({"loss": 3, "dup": -2})
        ({'loss': 3}, 2)
    """
    return {cause: n for cause, n in lost.items() if cause != "dup"}, (-lost["dup"] if "dup" in lost else 0)


class BaseReporter:
    """Defaults for every :class:`slotnet.schemes.Reporter` member but ``handlers`` and ``metrics``.

    Subclasses set ``events`` (kind -> field names, the trace schema) and implement
    :meth:`handlers` and :meth:`metrics`; the rest may be overridden where it means
    something for the scheme. The orchestrator calls every member, the end-of-run hooks
    (:meth:`run_ended`, :meth:`crash_losses`) included, so a default here is what a
    reporter that has nothing to say there means.
    """

    events: Mapping[str, tuple[str, ...]] = {}
    #: the reporter's state merges across shards (:class:`slotnet.schemes.ShardMerging`).
    #: Declared by the class that keeps the state, never inherited: a subclass that adds
    #: state of its own declares it again once it merges that state too (else its sharded
    #: runs replay every event at the coordinator, as for any reporter).
    merges_shards: bool = False

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.lost_messages = 0
        #: the kit's ``liveness`` check (messages that reached a node whose run() had returned)
        self.liveness = Liveness(bool(getattr(setup, "faults", False)))
        #: how the run ended (:meth:`run_ended`); until told otherwise, a run that did all it owed
        self.run_last_slot = setup.slots - 1
        self.run_complete = True

    def run_ended(self, slot: int, complete: bool) -> None:
        """The run's last slot, and whether its task completed (False only for a one-shot
        task cut short: by its slot count, its safety cap or the stability monitor).

        The orchestrator calls this before :meth:`invariants`. A run cut short owes only
        what was due by ``slot``: its invariants count packets in flight, queued or waiting
        as accounted for, never as lost, and judge a deadline only once :meth:`due`.
        """
        self.run_last_slot = slot
        self.run_complete = complete

    def due(self, deadline: int) -> bool:
        """Whether what must be done by slot ``deadline`` (a theorem's window, a bound, a
        schedule's end; in the run's slots, i.e. fabric ticks) is owed now: the task
        completed, or the run went on to that slot. Before then a missing result is
        pending, not a violation.

        Example:
            >>> from slotnet.schemes import Setup
            >>> r = BaseReporter(Setup(None, {}, {}, 100, 0, 0))
            >>> r.run_ended(9, complete=False)
            >>> r.due(9), r.due(10)
            (True, False)
            >>> r.run_ended(9, complete=True)
            >>> r.due(10)
            True
        """
        return self.run_complete or self.run_last_slot >= deadline

    def handlers(self) -> Mapping[str, Callable[..., None]]:
        raise NotImplementedError

    def on_lost(self, slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
        """A message a fault destroyed; cause ``dup`` is no loss but a copy a fault added.

        A subclass that overrides it calls it too, or at least :meth:`Liveness.lost` of
        :attr:`liveness`, so that ``node_finished`` losses are seen.
        """
        if cause != "dup":
            self.lost_messages += 1
        self.liveness.lost(slot, receiver, message, cause)

    def end_slot(self, slot: int) -> None:
        pass

    def shard_state(self) -> dict[str, Any]:
        """What this base keeps (lost messages, the liveness book), as plain data: a subclass
        that declares :attr:`merges_shards` adds its own state to it (see
        :class:`slotnet.schemes.ShardMerging`)."""
        return {"lost_messages": self.lost_messages, "liveness": self.liveness.shard_state()}

    def merge_shards(self, states: Sequence[Any]) -> None:
        """Add the shards' :meth:`shard_state` to this base's (a subclass calls it too)."""
        self.lost_messages += sum(st["lost_messages"] for st in states)
        self.liveness.merge_shards([st["liveness"] for st in states])

    def backlog(self) -> int:
        return 0

    def holdings(self, per_node: Sequence[Any]) -> None:
        pass

    def crash_losses(self, losses: Sequence[tuple[int, int, Sequence[Any]]]) -> None:
        """``(slot, node, packets)`` for each crash that destroyed packets a node held, in
        slot and node order, before :meth:`invariants`. The fault ledger books those by count
        (``crash``); a reporter that keeps books by kind of packet counts them here. Default:
        nothing to add."""

    def packet_books(self) -> Sequence[PacketBook]:
        """The invariants that keep the books of the scheme's packets, read by a fault run's
        ``fault_impact.packets``. Default: none (the kit's broadcast and unicast reporters
        declare theirs)."""
        return ()

    def metrics(self) -> dict[str, Any]:
        raise NotImplementedError

    def per_node(self) -> dict[str, list[Any]]:
        return {}

    def series(self) -> list[dict[str, Any]]:
        return []

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        """Checks of the run, each a dict with ``ok``.

        ``lost`` is the fault ledger: as a mapping, the net messages each cause took out of
        the network (losses positive; ``dup`` minus the copies it added), so
        ``created == delivered + in_flight + held + sum(lost.values())`` closes under faults.
        """
        return {}
