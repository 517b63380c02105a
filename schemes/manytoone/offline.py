"""``m2o-offline`` -- CENTRALISED: nodes follow the §3 schedule computed in ``prepare``.

This is not a local algorithm. ``prepare`` runs :func:`._offline_schedule.offline_schedule`
on the whole instance (a max-flow over the extended grid, Theorem 3.1; both stages timed
by the greedy rule of :mod:`._offline_schedule`) and hands every node its own part of the result:
``plan[v]``, the list of ``[step, source, port, last]`` sends node v makes (``last``:
the move ends the packet's trajectory at its destination, where it is consumed). A node
only replays its list; the run checks that the fabric carries the plan (one message per
link direction per step, every packet delivered once) and measures it like the local
schemes, as the reference they are compared with. Beside the run it reports the
instance's bounds and the plan's own length (:func:`theory`).

It runs on meshes of any sides, until quiescence, with the instance of :mod:`._inputs`.

Faults: every kind runs; the plan is not repaired. A send whose packet is not there at
its step (lost, held back, destroyed by a crash) is skipped and recorded (``missing``);
a packet that arrives after its send step, a second copy of one (a ``dup`` fault's), or
one whose send a stall made late stays where it is, stranded (:mod:`._engine`); a
destination waits for its packets until the run is quiescent. A restarted node replays
the rest of its plan with nothing (its own packet is gone with the crash). The reporter
books every packet and reports the damage beside the books (:mod:`.reporter`).
"""

from __future__ import annotations

from typing import Any

from .._base import Inputs, Scheme, Setup
from ._engine import ABSORB, SRC, EngineNode, Gen, Program, packet
from ._inputs import OfflineInputs, instance_of, prepare_instance, record_fields
from ._offline_schedule import offline_schedule
from .instances import Instance
from .reporter import M2OReporter
from .theory import instance_bounds, instance_claims

__all__ = ["SCHEME", "OfflineNode", "node_plans", "prepare", "theory"]


def node_plans(instance: Instance) -> tuple[list[list[list[int]]], int]:
    """Per node, its sends ``[step, source, port, last]`` in step order, and the schedule's T_loc.

    A node also waits for the packets bound for it; how many, it knows as a destination
    (the count of ``last`` moves into it, ``expected`` in the node parameters).

    A trajectory entry ``(t, v)`` (the packet is at v from step t) is a send at step
    ``t - 1`` from the previous node on the port towards v.
    """
    sched = offline_schedule(instance)
    sides = instance.sides
    strides = [1]
    for s in sides[:-1]:
        strides.append(strides[-1] * s)
    plans: list[list[list[int]]] = [[] for _ in range(instance.n_nodes)]
    for (src, _), traj in zip(instance.packets, sched.trajectories):
        for k in range(1, len(traj)):
            (_, u), (t, v) = traj[k - 1], traj[k]
            diff = v - u
            dim = next(i for i, st in enumerate(strides) if abs(diff) == st and (u // st) % sides[i] != (v // st) % sides[i])
            port = 2 * dim + (0 if diff > 0 else 1)
            plans[u].append([t - 1, src, port, int(k == len(traj) - 1)])
    for p in plans:
        p.sort()
    return plans, sched.length


class OfflineProgram(Program):
    """Replays the node's part of the centralised plan."""

    def __init__(self, node: OfflineNode) -> None:
        super().__init__(node, 0)
        self.incoming: list[list[Any]] = []

    def dispatch(self, msg: list[Any]) -> None:
        if msg[0] == "p" and msg[ABSORB] != 2:
            self.incoming.append(msg)

    def body(self) -> Gen:
        node = self.node
        assert isinstance(node, OfflineNode)
        held: dict[int, list[Any]] = {}
        if node.own is not None:
            held[node.own[SRC]] = node.own
        for step, src, port, last in node.plan:
            yield from self.reach(step, lambda: True, step)
            self.file(held)
            pkt = held.pop(src, None)
            if pkt is None:  # lost, late or destroyed (faults only): this send has nothing to send
                node.off_schedule(0, "missing", src)
                continue
            pkt[ABSORB] = last
            self.send_packet(port, pkt, 1, step)  # late after a stall: stranded here
        while True:
            self.file(held)
            for pkt in held.values():  # (faults only) a packet whose planned send has passed: it stays here
                self.strand(pkt, "late arrival")
            held.clear()
            if node.delivered_here >= node.expected:
                return
            yield from self.pause(None)  # stay until every packet bound here has arrived

    def file(self, held: dict[int, list[Any]]) -> None:
        """Take the packets that ended their move here; a second copy of one (a dup fault's) stays here."""
        for pkt in self.incoming:
            if pkt[SRC] in held:
                self.strand(pkt, "extra copy")
            else:
                held[pkt[SRC]] = pkt
        self.incoming = []


class OfflineNode(EngineNode):
    """A node replaying its part of the §3 schedule (centralised)."""

    def start(self) -> None:
        ctx = self.ctx
        me = ctx.node
        prm: OfflineInputs = ctx.params
        self.plan = prm.plan[me]
        self.expected = prm.expected[me]
        self.own: list[Any] | None = None
        dest = prm.dest[me]
        if dest < 0 or ctx.incarnation:  # restarted after a crash: its packet is gone
            return
        if dest == me and not any(entry[1] == me for entry in self.plan):
            self.home()
            return
        self.own = packet(0, me, dest, 0 if dest == me else -1)
        self.hold(self.own)

    def programs(self) -> list[Program]:
        return [OfflineProgram(self)]


def prepare(topology: Any, params: dict[str, Any], load: dict[str, float]) -> Inputs[OfflineInputs]:
    """CENTRALISED: the instance, then the §3 schedule of the whole of it, split into per-node plans."""
    out = prepare_instance(topology, params, "m2o-offline")
    inst = instance_of(topology, out)
    plans, length = node_plans(inst)
    expected = [0] * inst.n_nodes
    for p in plans:
        for _, src, _, last in p:
            if last:
                expected[out.dest[src]] += 1
    return Inputs(OfflineInputs(out.dest, out.n_packets, plans, expected, length))


def plan_bound(inst: Instance, params: OfflineInputs) -> int:
    """The slot a fault-free run ends by: the planned schedule's length (Theorem 1.1's
    O(D + W), computed in :func:`prepare`), plus the step its last arrival is seen in."""
    return int(params.offline_length) + 1


def theory(setup: Setup) -> dict[str, Any]:
    """The instance's bounds, and the planned schedule's own T_loc beside the run."""
    prm: OfflineInputs = setup.params
    inst = instance_of(setup.topology, prm)
    return {**instance_bounds(inst), "completion_time": prm.offline_length}


SCHEME = Scheme(
    name="m2o-offline",
    summary="CENTRALISED: the offline §3 schedule (max-flow paths, Theorem 3.1) replayed by the nodes",
    node=OfflineNode,
    reporter=M2OReporter,
    prepare=prepare,
    theory=theory,
    claims=lambda setup, th: instance_claims(th, exact=("completion_time",)),
    theory_label="plan",  # completion_time beside the run is the §3 schedule's own length
    **record_fields(plan_bound),  # every fault kind: see the module docstring
)
