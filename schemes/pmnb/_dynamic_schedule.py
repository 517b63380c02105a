"""The timetable of one PMNB interval of the dynamic scheme (§6), in steps and ticks.

§6 repeats the PMNB of §4.1 (Theorem 6, packets split into d mini-packets). One
interval, on a p^d torus (gamma = 2) or array (gamma = 1), is a fixed sequence of steps
that every node computes alone once it knows M (which the prefix tells it):

* prefix, steps ``0 .. P-1`` with ``P = 2 d (p - 1)``, each ``t_p`` long: the d rank
  prefixes on the rotated trees ``P^c`` run together, class c on dimension
  ``(k + c) mod d`` in subphase k (footnote 3), so no link carries two;
* packing, ``K = d (p - 1)`` steps of ``1/d`` (a mini-packet): class c corrects digit
  ``(k + c) mod d`` in phase k (Theorem 3 on the rotated order);
* broadcast, subphases ``l = 1 .. d``, subphase l of class c along dimension
  ``(d - l + c) mod d``, in ``R_l = ceil(M / p^(d-l+1))`` rounds (Lemma 1's
  ``max_s |W_l(s)|``) of ``p - 1`` steps of ``1/(gamma d)``: every node sends its j-th
  mini-packet along its line in round j (an array sends it whole both ways, a ring
  sends one half each way round, the Remark after Theorem 2).

Its length, ``2d(p-1)t_p + (p-1) + (p-1)/(gamma d) sum_l R_l``, is at most
``V + M X`` with X, V of (9), (10) (Lemma 1: ``(p-1) sum_l ceil(M/p^(d-l+1)) <= (p-1)d +
M (N-1)/N``), which is what Theorem 7 needs. An interval with M = 0 is its prefix alone
(every node learns there that nobody is active). Reading: §6 draws the interval as a
reservation interval of length V and a broadcast interval of length MX; that split is
a bound, and "each [PMNB] starting when the previous one has finished" is what the
scheme does, so an interval here lasts exactly its timetable.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from ._prefix import check_sides

__all__ = ["IntervalSchedule", "Plan", "saturation_load"]


@dataclass(frozen=True)
class Plan:
    """The M-dependent part of an interval's timetable.

    Attributes:
        rounds: ``R_l`` for l = 1..d.
        starts: first step of subphase l at index l - 1; ``starts[d]`` is the end.
        n_steps: steps of the interval; length_ticks: its ticks.
    """

    rounds: tuple[int, ...]
    starts: tuple[int, ...]
    n_steps: int
    length_ticks: int


@dataclass(frozen=True)
class IntervalSchedule:
    """Steps and tick offsets of one interval on a p^d mesh.

    Attributes:
        p, d, gamma: the shape (gamma 2 on a torus, 1 on an array).
        quantum: ticks per time unit.
        prefix_ticks, packing_ticks, broadcast_ticks: ticks per step of each phase
            (t_p q, q/d, q/(gamma d)).
    """

    p: int
    d: int
    gamma: int
    quantum: int
    prefix_ticks: int
    packing_ticks: int
    broadcast_ticks: int
    #: P = 2 d (p - 1) prefix steps and K = d (p - 1) packing steps
    prefix_steps: int = 0
    packing_steps: int = 0
    _plans: dict[int, Plan] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def build(cls, sides: Sequence[int], wrap: bool, tp_ticks: int, quantum: int) -> IntervalSchedule:
        """The timetable for ``sides`` (equal), ``wrap`` and the durations in ticks.

        Raises:
            ValueError: on unequal sides or durations that are not whole ticks.
        """
        s = check_sides(sides)
        if len(set(s)) != 1:
            raise ValueError(f"the dynamic scheme needs a p^d mesh, got sides {s}")
        d, g = len(s), 2 if wrap else 1
        if quantum % (g * d) or tp_ticks < 1:
            raise ValueError(f"quantum {quantum} must be a multiple of {g * d} and t_p at least one tick")
        p = s[0]
        return cls(p, d, g, quantum, tp_ticks, quantum // d, quantum // (g * d), 2 * d * (p - 1), d * (p - 1))

    # -- steps ------------------------------------------------------------------------
    def plan(self, m: int) -> Plan:
        """The timetable's M-dependent part (computed once per M)."""
        got = self._plans.get(m)
        if got is None:
            rounds = tuple(-(-m // self.p ** (self.d - l + 1)) for l in range(1, self.d + 1))
            first = self.prefix_steps + self.packing_steps
            starts = [first]
            for r in rounds:
                starts.append(starts[-1] + r * (self.p - 1))
            n = starts[-1] if m else self.prefix_steps
            got = Plan(rounds, tuple(starts), n, self.offset(n))
            self._plans[m] = got
        return got

    def rounds(self, m: int) -> tuple[int, ...]:
        """``R_l = ceil(M / p^(d-l+1))`` for l = 1..d."""
        return self.plan(m).rounds

    def n_steps(self, m: int) -> int:
        """Steps of an interval with M active nodes (the prefix alone when M = 0)."""
        return self.plan(m).n_steps

    # -- ticks --------------------------------------------------------------------------
    def offset(self, step: int) -> int:
        """Ticks from the interval's start to the start of ``step``."""
        pre, pack = self.prefix_steps, self.packing_steps
        if step <= pre:
            return step * self.prefix_ticks
        if step <= pre + pack:
            return pre * self.prefix_ticks + (step - pre) * self.packing_ticks
        return pre * self.prefix_ticks + pack * self.packing_ticks + (step - pre - pack) * self.broadcast_ticks

    def step_containing(self, offset: int) -> tuple[int, bool]:
        """``(step, starts)``: the step running ``offset`` ticks in, and whether it starts there."""
        base, start, per = self._phase_of(offset)
        step, rest = divmod(offset - start, per)
        return base + step, rest == 0

    def _phase_of(self, offset: int) -> tuple[int, int, int]:
        pre, pack = self.prefix_steps, self.packing_steps
        end_pre = pre * self.prefix_ticks
        end_pack = end_pre + pack * self.packing_ticks
        if offset < end_pre:
            return 0, 0, self.prefix_ticks
        if offset < end_pack:
            return pre, end_pre, self.packing_ticks
        return pre + pack, end_pack, self.broadcast_ticks

    def length_ticks(self, m: int) -> int:
        """Ticks of a whole interval with M active nodes."""
        return self.plan(m).length_ticks

    def length(self, m: int) -> float:
        """The interval's length in time units."""
        return self.length_ticks(m) / self.quantum

    def duration(self, step: int) -> int:
        """Ticks of ``step`` (the duration of every message sent in it)."""
        return self.offset(step + 1) - self.offset(step)

    # -- where a step is ----------------------------------------------------------------
    def phase(self, step: int) -> str:
        """``"prefix"``, ``"packing"`` or ``"broadcast"``."""
        if step < self.prefix_steps:
            return "prefix"
        if step < self.prefix_steps + self.packing_steps:
            return "packing"
        return "broadcast"

    def broadcast_position(self, step: int, m: int) -> tuple[int, int, int]:
        """``(l, j, t)`` of a broadcast step: subphase l (1..d), round j, step t in the round.

        Raises:
            ValueError: if ``step`` is not a broadcast step of an interval with M actives.
        """
        plan = self.plan(m)
        starts = plan.starts
        if m == 0 or not starts[0] <= step < starts[-1]:
            raise ValueError(f"step {step} is not a broadcast step (M = {m})")
        l = bisect_right(starts, step)
        j, t = divmod(step - starts[l - 1], self.p - 1)
        return l, j, t

    def subphase_start(self, l: int, m: int) -> int:
        """First step of broadcast subphase l (1..d; d + 1 gives the interval's end)."""
        return self.plan(m).starts[l - 1]


def saturation_load(sides: Sequence[int], wrap: bool, tp: float) -> float:
    """The load (12) past which this scheme cannot keep up; our derivation, not the paper's.

    An interval serves at most N packets and its time per packet, ``length(M)/M``, falls
    with M, so the scheme carries at most ``N / length(N)`` packets per time unit, with
    ``length`` this timetable (at most ``V + N X``). Arrivals are ``lam N`` per unit, so
    past ``lam = 1/length(N)``, i.e. rho = ``(N - 1)/(gamma d length(N))`` by (12), the
    queues grow without bound. Below it and above (14) Theorem 7 no longer applies but
    the scheme may be stable.

    Raises:
        ValueError: on unequal sides, or a t_p that is no whole number of ticks.
    """
    from ._inputs import quantum_for, tp_ticks  # the prepare side's quantum; imported here to keep this module pure

    s = check_sides(sides)
    g, d = (2 if wrap else 1), len(s)
    q = quantum_for(tp, g * d)
    sched = IntervalSchedule.build(s, wrap, tp_ticks(tp, q), q)
    n = math.prod(s)
    return (n - 1) / (g * d * sched.length(n))
