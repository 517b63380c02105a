"""The one-pass assignment rule of §II-A, as pure functions (no Trio, no network).

"The packets are considered one at a time, in random order, with all orders being
equally likely. When a given packet is considered, the node examines which outgoing
links are on shortest paths to the packet's destination [...] If at least one preferred
link is free, the packet is assigned to a preferred, free link at random [...].
Otherwise, the packet is assigned to a free (but not preferred) link [...] and we say
the packet is deflected." (Greenberg & Hajek, §II-A)

On a hypercube the preferred links of a packet at node ``x`` bound for ``y`` are the set
bits of ``x ^ y``; ports are dimensions, so link sets are bit masks.

Under faults (not in the paper) a node may know some of its links dead: the rule then
treats them as taken, so a packet whose preferred links are all dead is deflected onto a
live one -- deflection routes around a dead link. A node has no buffer, so if more
packets must leave than it has live links, the rest leave on links it believes dead.

:func:`absorb` and :func:`transmit` are steps 1 and 4 of the node's slot (see
:mod:`.node`), here so that the per-packet loops sit in one module that is tested
without Trio and compiled (``slotnet/_build.py``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence

from slotnet.nodes._philox import stream_of

__all__ = ["absorb", "admit", "one_pass", "pick_bit", "transmit"]


def pick_bit(mask: int, u: float) -> int:
    """The set bit of ``mask`` with rank ``floor(u * popcount)`` (uniform for u ~ U[0,1)).

    Example:
        >>> pick_bit(0b10110, 0.0), pick_bit(0b10110, 0.99)
        (1, 4)
    """
    k = int(u * mask.bit_count())
    while k:
        mask &= mask - 1
        k -= 1
    return (mask & -mask).bit_length() - 1


def _shuffled(items: list[int], rand: Callable[[], float]) -> list[int]:
    """Fisher-Yates in place: all orders equally likely."""
    for i in range(len(items) - 1, 0, -1):
        j = int(rand() * (i + 1))
        items[i], items[j] = items[j], items[i]
    return items


def _popcount(x: int) -> int:
    """The number of set bits of ``x >= 0`` (``x.bit_count()``, as a loop the compiled
    module runs on a C integer: a mask has at most 24 bits)."""
    count = 0
    while x:
        x &= x - 1
        count += 1
    return count


def one_pass(
    node: int, dests: Sequence[int], d: int, rand: Callable[[], float], first: int = 0, live: int | None = None
) -> list[tuple[int, bool]]:
    """Assign every packet at ``node`` a distinct out-port by the one-pass rule.

    Args:
        node: the node's id in the d-cube.
        dests: destinations of the packets to transmit this slot (all != node).
        d: the cube's dimension; at most ``d`` packets may be assigned.
        rand: a uniform [0, 1) source (the node's stream).
        first: 0 for the paper's rule (one uniformly random order over all packets).
            A positive value considers ``dests[:first]`` (in random order) before the
            rest (in random order) -- a variant, not the paper's rule, kept to study
            precedence for continuing packets.
        live: bit mask of the ports the node sees alive; None: all of them (the paper's
            rule, and the same random draws). Dead ports are used only once every live
            port is taken.

    Returns:
        ``(port, deflected)`` for each packet, aligned with ``dests``.

    Raises:
        ValueError: if there are more packets than ports or a packet is already home.
    """
    codes = _assign(node, dests, d, rand, first, live)
    codes.pop()  # the packet considered first
    return [(code >> 1, bool(code & 1)) for code in codes]


def _assign(node: int, dests: Sequence[int], d: int, rand: Callable[[], float], first: int, live: int | None
            ) -> list[int]:
    """:func:`one_pass`, each packet's assignment as one int: ``port << 1 | deflected``
    (the per-packet hot path: no tuple per packet), then one more: the index of the packet
    considered first (0 for no packet)."""
    n = len(dests)
    if n > d:
        raise ValueError(f"node {node}: {n} packets for {d} ports")
    ps = stream_of(rand)  # compiled: draws from a node's philox stream are C calls
    if first:
        order = _shuffled(list(range(first)), rand) + _shuffled(list(range(first, n)), rand)
    else:  # _shuffled(list(range(n)), rand), inlined: this is the per-packet hot path
        order = [0] * n
        for i in range(1, n):
            order[i] = i
        for i in range(n - 1, 0, -1):
            u = rand() if ps is None else ps.random()
            j = int(u * (i + 1))
            order[i], order[j] = order[j], order[i]
    free = (1 << d) - 1
    spare = 0
    if live is not None:
        free, spare = live & free, free & ~live
    out = [0] * (n + 1)
    if n:
        out[n] = order[0]
    for k in order:
        diff = node ^ dests[k]
        if not diff:
            raise ValueError(f"node {node}: packet for itself cannot be routed")
        if not free:  # more packets than live ports: no buffer, so the rest take the dead ones
            free, spare = spare, 0
        mask = diff & free
        deflected = not mask
        if deflected:
            mask = free
        # pick_bit(mask, rand()), inlined (the same draw, the same bit)
        u = rand() if ps is None else ps.random()
        r = int(u * _popcount(mask))
        while r:
            mask &= mask - 1
            r -= 1
        bit = mask & -mask
        out[k] = _popcount(bit - 1) << 1 | deflected  # the bit's index, then the flag
        free &= ~bit
    return out


def absorb(node: int, inbox: Iterable[tuple[int, Sequence[int]]], queueing: bool
           ) -> tuple[list[Sequence[int]], list[int], list[int], list[int]]:
    """Step 1 of §II-A: split what arrived into packets that continue and stamps of those home.

    Returns:
        ``(continuing, entered, arrived, ends)``: the packets not yet home, in inbox order;
        the ``entered_slot`` of each packet absorbed; (input queueing only) its
        ``arrived_slot``; and its origin and destination, two entries per packet (what the
        observer checks the absorption against).
    """
    continuing: list[Sequence[int]] = []
    entered: list[int] = []
    arrived: list[int] = []
    ends: list[int] = []
    for _, pkt in inbox:
        if pkt[0] == node:
            entered.append(pkt[1])
            ends.append(pkt[2])
            ends.append(pkt[0])
            if queueing:
                arrived.append(pkt[3])
        else:
            continuing.append(pkt)
    return continuing, entered, arrived, ends


def admit(node: int, n: int, slot: int, count: int, rand: Callable[[], float], pkts: list[Sequence[int]],
          queue: deque[int] | None) -> None:
    """Step 3 of §II-A: ``count`` new packets enter at ``node``, appended to ``pkts``.

    Each is bound for a destination uniform over the other ``n - 1`` nodes (one draw of
    ``rand`` each, in order); it is ``(dest, slot, node)``, or with input queueing
    ``(dest, slot, node, arrived)``, ``arrived`` taken from the head of ``queue``.
    """
    ps = stream_of(rand) if count else None
    for _ in range(count):
        u = rand() if ps is None else ps.random()
        dest = int(u * (n - 1))
        dest += dest >= node
        if queue is None:
            pkts.append((dest, slot, node))
        else:
            pkts.append((dest, slot, node, queue.popleft()))


def transmit(node: int, pkts: Sequence[Sequence[int]], d: int, rand: Callable[[], float],
             send: Callable[[int, Sequence[int]], None], first: int = 0, live: int | None = None
             ) -> tuple[int, int, int, list[int], int]:
    """Step 4 of §II-A: assign ports by :func:`one_pass` and send every packet.

    Args:
        pkts: the packets to transmit (destination first), continuing ones first.
        send: ``send(port, packet)``, the node's outlet.
        node, d, rand, first, live: as for :func:`one_pass`.

    Returns:
        ``(deflected, dist_after, n_after, deflect_dists, lead)``: how many packets were
        deflected; the sum of the distances still to go after this hop and how many
        packets still have some; each deflected packet's distance at deflection; and the
        index in ``pkts`` of the packet the rule considered first (what the node records
        as its ``first_of_N`` choice).
    """
    dests = [pkt[0] for pkt in pkts]
    codes = _assign(node, dests, d, rand, first, live)
    lead = codes.pop()
    deflected = dist_after = n_after = 0
    ddists: list[int] = []
    for i in range(len(codes)):
        code = codes[i]
        port = code >> 1
        send(port, pkts[i])
        after = _popcount(node ^ (1 << port) ^ dests[i])
        if after:
            dist_after += after
            n_after += 1
        if code & 1:
            deflected += 1
            ddists.append(after - 1)
    return deflected, dist_after, n_after, ddists, lead
