"""The in-process transport: the embedded default fabric.

A node sends through its :class:`Outlet`; the outlet enforces link capacity, encodes the
message to msgpack bytes (through :mod:`._codec`) and parks it with the receiver. At the
start of the slot it is due, :meth:`InProcessTransport.exchange` applies link and node
state and the message-fault pipeline, decodes, orders each inbox by in-port (so inboxes
never depend on the order in which Trio ran the senders) and hands the inboxes over.

Durations. Slots are ticks of the run's *quantum* (``q`` ticks per paper time unit,
default 1). A message of size ``s`` (paper units) needs ``u = s·q`` ticks of its link:
``u <= 1`` shares one tick with others up to a total of 1 and arrives next tick; a whole
``u > 1`` holds the link for ``u`` ticks and arrives ``u`` ticks later (:class:`TimedOutlet`).
At ``q = 1`` this is the plain slot model: at most one unit per link per slot, delivery
at ``t + 1``.

Faults. Link and node state (links down, partitions, crashed and stalled nodes) and the
message-fault pipeline of the schedule (:mod:`._pipeline`: loss, corrupt, dup, delay) are
applied at delivery, where the receiver is, from the bytes the message carries — so a
shard judges the messages it receives exactly as one process would. A message a ``dup``
or ``delay`` fault holds back waits in the pipeline, at the receiving end of its link,
and is handed over in the first slot, from its due slot on, in which the link carries
nothing new (one held message per link and slot). Runs without faults take none of
these paths: the per-message cost of :meth:`Outlet.send` and
:meth:`InProcessTransport.exchange` is the fault-free one, and frames carry a checksum
only when a corrupt fault is scheduled.

Pending messages. A receiver's messages of the next slot are held either as a list of
pairs (one bytes object per message: :func:`_pair`), or, in a run without any fault at
quantum 1 (:attr:`InProcessTransport.packed`), as one ``bytearray`` per receiver: the
msgpack array of its pairs, whose header counts them as they are appended
(:func:`_append_pair`). The bytearray is the inbox's msgpack as it is, decoded in one
call, and takes about a third of the memory of the list and its bytes objects (42
bytes less a message: a bytes object's header and the list's slot).
"""

from __future__ import annotations

from array import array
from operator import itemgetter
from typing import Any, ClassVar, overload

from ._clock import SlotClock
from ._codec import CHECKSUM_BYTES, DECODE_ERRORS, checked_packer, decode, packer, split_values, unpackb
from ._errors import CapacityError, FabricError
from ._faults import FaultSchedule
from ._in_flight import InFlight, Part
from ._ledger import AVOIDABLE, FaultLedger
from ._pipeline import MessagePipeline
from ._topology import Topology

__all__ = ["Frames", "InProcessTransport", "LostCallback", "Outlet", "TimedOutlet", "add_pairs", "take_remote"]

from collections.abc import Callable, Iterator, Sequence

#: Called for every message a fault destroys: (slot, sender, port, receiver, message, cause);
#: also, with a cause of :data:`~slotnet.fabric.NOTE_CAUSES`, for a copy a ``dup`` fault
#: added and a message a ``delay`` fault held back (``slot``: the slot it was sent in).
LostCallback = Callable[[int, int, int, int, Any, str], None]

_second_byte = itemgetter(1)
_EPS = 1e-9

#: Loss causes of a dead link or node: the sender may have known (see FaultLedger.avoidable).
_DEAD_CAUSES = frozenset({"link_down", "partition", "node_down", "stalled"})

#: Reverse-port tuples a transport keeps to share among its outlets.
_ROWS_KEPT = 64

#: msgpack array headers for 0..15 elements (fixarray)
_FIXARRAY = [bytes([0x90 | n]) for n in range(16)]
#: for each in-port below 128: a two-element array's header and the port, a positive
#: fixint -- put before a frame, the pair ``(in_port, message)`` in msgpack
_PORT_PAIR = [bytes([0x92, p]) for p in range(128)]
#: A packed inbox's start (:attr:`InProcessTransport.packed`): msgpack's array 16 header,
#: counting no element yet; :func:`_append_pair` counts each pair appended.
_PACKED_HEAD = b"\xdc\x00\x00"
#: a new packed inbox is a copy of this (a slice: calling ``bytearray`` costs four times as much)
_PACKED_EMPTY = bytearray(_PACKED_HEAD)
_first = itemgetter(0)
#: zero bytes by length: run as pure Python, a packed inbox grows by one of these, then a message
#: is written in place (:func:`_append_int_pair`: a pair's head, a fixarray's, and at most 15
#: ints of 9 bytes); compiled, it grows in C
_ZEROS = [bytes(k) for k in range(3 + 15 * 9 + 1)]
_I63 = 1 << 63
#: whether this module runs compiled (an extension module), where :func:`_append_int_pair`
#: beats the packer's call; the pure-Python build always packs through the packer
_COMPILED = not __file__.endswith(".py")


def _int_size(v: int) -> int:
    """Bytes of msgpack's shortest form of the int ``v`` (within 64 bits signed), tag included."""
    if v >= 0:
        return 1 if v < 0x80 else 2 if v <= 0xFF else 3 if v <= 0xFFFF else 5 if v <= 0xFFFFFFFF else 9
    return 1 if v >= -32 else 2 if v >= -0x80 else 3 if v >= -0x8000 else 5 if v >= -0x80000000 else 9


def _put_int(buf: Any, at: int, v: int) -> int:
    """Write msgpack's shortest form of the int ``v`` at ``buf[at:]`` (room made already:
    ``buf`` a bytearray, or compiled the address of its bytes); the index after it. The
    forms are msgpack's own: fixints, then uint 8/16/32/64 for positive values and int
    8/16/32/64 for negative ones."""
    if v >= 0:
        if v < 0x80:
            buf[at] = v
            return at + 1
        if v <= 0xFF:
            tag, width = 0xCC, 1
        elif v <= 0xFFFF:
            tag, width = 0xCD, 2
        elif v <= 0xFFFFFFFF:
            tag, width = 0xCE, 4
        else:
            tag, width = 0xCF, 8
    else:
        if v >= -32:
            buf[at] = v & 0xFF
            return at + 1
        if v >= -0x80:
            tag, width = 0xD0, 1
        elif v >= -0x8000:
            tag, width = 0xD1, 2
        elif v >= -0x80000000:
            tag, width = 0xD2, 4
        else:
            tag, width = 0xD3, 8
    buf[at] = tag
    for k in range(width):  # big-endian, two's complement for negative values
        buf[at + width - k] = (v >> (8 * k)) & 0xFF
    return at + 1 + width


def _append_int_pair(buf: bytearray, in_port: int, message: Any) -> bool:
    """Append the pair ``(in_port, message)`` to the packed inbox ``buf`` -- the bytes
    ``_PORT_PAIR`` and msgpack's packer make -- when ``message`` is a tuple of at most
    15 ints within 64 bits signed (the common shape of a scheme's packet); False, and
    ``buf`` untouched, for any other message, which then goes through the packer.

    Compiled, this writes the bytes in place after one resize in C (``PyByteArray_Resize``;
    an in-place add of zeros, with its buffer protocol, cost about 240 machine instructions
    more a message), where the packer's call, its type dispatch and a second append cost
    about twice as much (callgrind, deflection at d = 9). ``in_port`` is below 128 (a
    direct transport's)."""
    if type(message) is not tuple:
        return False
    t = message  # compiled: a tuple, so that an item is read without a type dispatch
    n = len(t)
    if n > 15:
        return False
    size = 3  # the pair's array header, the in-port (a fixint), the message's fixarray header
    for i in range(n):
        x = t[i]
        if type(x) is not int:  # not a bool either: msgpack packs those as true and false
            return False
        try:
            v = x  # compiled: a C long long, which raises past 64 bits signed
        except OverflowError:
            return False
        if not _COMPILED and not -_I63 <= v < _I63:
            return False
        size += _int_size(v)
    at = len(buf)
    if _COMPILED:  # grown in C, then written through the address of its bytes (_transport.pxd)
        PyByteArray_Resize(buf, at + size)  # type: ignore[name-defined]  # noqa: F821
        out = _bytes_of(buf)  # type: ignore[name-defined]  # noqa: F821
    else:
        buf += _ZEROS[size]
        out = buf
    out[at] = 0x92
    out[at + 1] = in_port
    out[at + 2] = 0x90 | n
    at += 3
    for i in range(n):
        at = _put_int(out, at, t[i])
    return True


def _packed_count(buf: bytes | bytearray) -> int:
    """How many pairs the packed inbox ``buf`` holds (its array header's count)."""
    if buf[0] == 0xDC:
        return buf[1] << 8 | buf[2]
    return int.from_bytes(buf[1:5], "big")  # array 32: see _append_pair


def _append_pair(buf: bytearray, pair: bytes) -> None:
    """Append the msgpack pair ``pair`` to the packed inbox ``buf`` and count it.

    The count is the array header's: 16 bits, or, past 65,535 pairs in one slot (tiny
    messages sharing links), the header is widened to an array 32 in place."""
    c = buf[2] + 1
    if c < 256 and buf[0] == 0xDC:
        buf[2] = c
    else:
        _set_count(buf, _packed_count(buf) + 1)
    buf += pair


def _set_count(buf: bytearray, n: int) -> None:
    """Make the packed inbox ``buf``'s header count ``n`` pairs (widened to an array 32 past 65,535)."""
    if buf[0] == 0xDC and n < 65536:
        buf[1] = n >> 8
        buf[2] = n & 0xFF
    elif buf[0] == 0xDC:
        buf[0:3] = b"\xdd" + n.to_bytes(4, "big")
    else:
        buf[1:5] = n.to_bytes(4, "big")


def _join_packed(buf: bytearray, other: bytes) -> int:
    """Append the pairs of the packed inbox ``other`` to ``buf``'s; how many were appended."""
    n = _packed_count(other)
    _set_count(buf, _packed_count(buf) + n)
    buf += memoryview(other)[3 if other[0] == 0xDC else 5:]
    return n


def _packed_pairs(buf: bytes | bytearray) -> list[bytes]:
    """The pairs of a packed inbox, each its own bytes (:func:`_pair`'s form), in order.

    Raises:
        FabricError: the inbox is not an array of well-formed msgpack values.
    """
    head = 3 if buf[0] == 0xDC else 5
    try:
        return split_values(bytes(buf[head:]), _packed_count(buf))
    except DECODE_ERRORS as exc:
        raise FabricError(f"an undecodable pending frame ({type(exc).__name__}: {exc})") from None


class _Packed(Sequence[bytes]):
    """A packed inbox read as its pairs, split only when read (:meth:`InProcessTransport.in_flight`)."""

    __slots__ = ("_buf",)

    def __init__(self, buf: bytearray) -> None:
        self._buf = buf

    def __len__(self) -> int:
        return _packed_count(self._buf)

    def __iter__(self) -> Iterator[bytes]:
        return iter(_packed_pairs(self._buf))

    @overload
    def __getitem__(self, index: int) -> bytes: ...
    @overload
    def __getitem__(self, index: slice) -> list[bytes]: ...
    def __getitem__(self, index: int | slice) -> bytes | list[bytes]:
        return _packed_pairs(self._buf)[index]


def _pair(in_port: int, data: bytes) -> bytes:
    """The msgpack pair ``(in_port, message)`` of the frame ``data`` of ``message``: how a
    receiver's pending messages are held (one bytes object each, no tuple around it)."""
    head = _PORT_PAIR[in_port] if in_port < 128 else b"\x92" + packer()(in_port)
    return head + data


def _split(pair: bytes) -> tuple[int, bytes]:
    """Inverse of :func:`_pair`: ``(in_port, frame)``."""
    tag = pair[1]
    if tag < 0x80:
        return tag, pair[2:]
    width = 1 if tag == 0xCC else 2 if tag == 0xCD else 4  # uint 8 / 16 / 32
    return int.from_bytes(pair[2:2 + width], "big"), pair[2 + width:]


def _in_port(pair: bytes) -> int:
    """The in-port of a pending pair (:func:`_pair`), any port number."""
    return _split(pair)[0]


def _decode_inbox(r: int, pend: list[bytes], slot: int) -> list[tuple[int, Any]]:
    """``[(in_port, message), ...]`` of the pairs ``pend`` (:func:`_pair`), in one msgpack call.

    Each pending message is already the msgpack pair of its in-port and its frame, so
    the pairs concatenated behind an array header are the whole inbox, and one
    ``unpackb`` decodes it. Well-formed frames give exactly the values decoding each
    would (msgpack objects are self-delimiting). The frames here are outlet packers'
    output, of this process or of another shard of the run (garbled ones were judged and
    dropped by the fault pipeline); should one be malformed anyway, the failing call falls
    back to frame-by-frame decoding, which names it.

    Raises:
        FabricError: a frame is not one well-formed msgpack message.
    """
    n = len(pend)
    try:
        if n == 1:
            return [unpackb(pend[0], use_list=False, strict_map_key=False)]
        head = _FIXARRAY[n] if n < 16 else b"\xdc" + n.to_bytes(2, "big")  # array 16 (n < 65536)
        return list(unpackb(head + b"".join(pend), use_list=False, strict_map_key=False))
    except DECODE_ERRORS:
        pass
    try:
        return [(p, decode(b)) for p, b in map(_split, pend)]
    except DECODE_ERRORS as exc:
        raise FabricError(f"node {r}: undecodable frame in slot {slot} ({type(exc).__name__}: {exc})") from None


def _decode_packed(r: int, buf: bytearray, slot: int) -> list[tuple[int, Any]]:
    """``[(in_port, message), ...]`` of the packed inbox ``buf``, by in-port (pairs that
    came in on one port keep their order: the order their link carried them).

    Raises:
        FabricError: a frame is not one well-formed msgpack message.
    """
    try:
        inbox = list(unpackb(buf, use_list=False, strict_map_key=False))
    except DECODE_ERRORS:
        try:
            pairs = _packed_pairs(buf)
        except FabricError as exc:
            raise FabricError(f"node {r}: {exc} in slot {slot}") from None
        inbox = _decode_inbox(r, pairs, slot)  # names the frame
    if len(inbox) > 1:
        inbox.sort(key=_first)
    return inbox


def take_remote(pending: list[Any], touched: list[int], lo: int, hi: int, block: int,
                shards: int) -> tuple[list[list[Any]], int, int]:
    """Take the pending pairs of receivers outside ``[lo, hi)`` (a shard's own block) out.

    Returns ``(remote, local, taken)``: for each shard ``j`` (blocks of ``block`` ids) the
    flat list ``[r, pairs, r, pairs, ...]`` of its receivers' pending pairs, in the order
    they were touched; the number of pairs left pending for ``[lo, hi)``; the number taken.
    ``touched`` keeps only ``[lo, hi)``'s receivers (in place: outlets hold the list). Compiled,
    this is a shard's per-slot scan of its touched receivers (a Python loop took about
    10 ms a slot of the 2**13-cube on 2 shards).
    """
    remote: list[list[Any]] = [[] for _ in range(shards)]
    kept = local = taken = 0
    for i in range(len(touched)):
        r = touched[i]
        pend = pending[r]
        if type(pend) is bytearray:  # _packed_count, inlined (compiled: C reads of the header)
            buf = pend
            n = buf[1] << 8 | buf[2] if buf[0] == 0xDC else _packed_count(buf)
        else:
            n = len(pend)
        if lo <= r < hi:
            touched[kept] = r
            kept += 1
            local += n
        else:
            pending[r] = None
            box = remote[r // block]
            box.append(r)
            box.append(pend)
            taken += n
    del touched[kept:]
    return remote, local, taken


def add_pairs(pending: list[Any], touched: list[int], pairs: list[Any], lo: int, hi: int) -> int:
    """Add another shard's ``[r, pairs, r, pairs, ...]`` (decoded as lists) to the pending
    pairs of receivers in ``[lo, hi)``; the number of pairs added. A packed inbox
    (:attr:`InProcessTransport.packed`) comes as bytes and joins as a bytearray.

    Raises:
        FabricError: a receiver outside ``[lo, hi)``.
    """
    added = 0
    for i in range(0, len(pairs), 2):
        r = pairs[i]
        if not lo <= r < hi:
            raise FabricError(f"a message for node {r}, hosted elsewhere")
        pend = pairs[i + 1]
        mine = pending[r]
        if type(pend) is bytes:  # a packed inbox
            theirs = pend  # compiled: C reads of its header
            n = theirs[1] << 8 | theirs[2] if theirs[0] == 0xDC else _packed_count(theirs)
            if mine is None:
                pending[r] = bytearray(theirs)
                touched.append(r)
            else:
                buf = mine
                total = (buf[1] << 8 | buf[2]) + n if buf[0] == 0xDC and theirs[0] == 0xDC else 65536
                if total < 65536:  # _join_packed, inlined: both headers array 16, and their sum
                    buf[1] = total >> 8
                    buf[2] = total & 0xFF
                    buf += theirs[3:]
                else:
                    _join_packed(buf, theirs)
        else:
            n = len(pend)
            if mine is None:
                pending[r] = pend
                touched.append(r)
            else:
                mine.extend(pend)
        added += n
    return added


class Frames:
    """One receiver's inbox of a slot, still as the frames that carried it.

    :meth:`decode` gives the inbox, ``[(in_port, message), ...]`` by in-port; iterating
    decodes too. :meth:`InProcessTransport.exchange` hands inboxes over this way, and the
    node runtime has each node's own task decode its inbox when it wakes: a slot's
    messages are then never all decoded at once (the decoded form is about twice the
    frames' size, and all of it together was the run's peak).
    """

    __slots__ = ("receiver", "slot", "_pend")

    def __init__(self, receiver: int, slot: int, pend: list[bytes] | bytearray) -> None:
        self.receiver = receiver
        self.slot = slot
        self._pend = pend

    def decode(self) -> list[tuple[int, Any]]:
        """The inbox.

        Raises:
            FabricError: a frame is not one well-formed msgpack message.
        """
        pend = self._pend
        if isinstance(pend, bytearray):
            return _decode_packed(self.receiver, pend, self.slot)
        return _decode_inbox(self.receiver, pend, self.slot)

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        return iter(self.decode())

    def __len__(self) -> int:
        pend = self._pend
        return _packed_count(pend) if type(pend) is bytearray else len(pend)


def _unwatched(*sent: Any) -> None:
    """An outlet's report before :meth:`Outlet.watch` (never called: nothing is followed)."""


class OutletsShared:
    """What every outlet of one transport reads: held once, not once per node."""

    __slots__ = ("park", "clock", "pack", "pending", "packed", "touched", "xor")

    def __init__(self, transport: InProcessTransport) -> None:
        #: ``park`` bound once for every outlet (a bound method is 64 bytes)
        self.park = transport.park
        self.clock = transport.clock
        self.pack = transport.pack
        #: the transport's pending pairs, where it takes them straight (``direct``: send then
        #: makes the pair ``(in_port, message)`` and parks it itself, see :func:`_pair`);
        #: None: send calls the transport's park
        self.pending: list[Any] | None = transport._pending if transport.direct else None
        #: the pending entries are packed inboxes (:attr:`InProcessTransport.packed`), not lists
        self.packed = transport.packed
        self.touched: list[int] = transport._touched
        #: the topology's ports are bit flips (``Topology.xor_ports``: its dimension), else 0
        self.xor = transport.topology.xor_ports


class Outlet:
    """A node's sending side at quantum 1: ``send(port, message, size=1.0)``.

    There is one per node, so it is kept small: what every outlet of the transport reads
    is one shared object (:class:`OutletsShared`); the neighbours are one C array (-1
    where the node has no port), or none where the topology's ports are bit flips (a
    d-cube: port ``p`` leads to ``node ^ (1 << p)``, computed); the reverse ports a tuple
    shared by every node that has the same ones; and the current slot's link loads a bit
    mask of the ports that carry something in slot ``_slot`` (ports number below 64: a
    topology has at most 2**24 nodes, a grid side at least 2). Per-port loads are kept
    only once a message smaller than a whole slot was sent; until then every load held is
    a whole slot.
    """

    __slots__ = ("node", "_me", "_nbrs", "_revs", "_slot", "_used", "_load", "_sh", "_follow", "_report")

    def __init__(self, transport: InProcessTransport, node: int) -> None:
        self.node = node
        self._me = node  # the node again, as a C integer where compiled: the bit flip's operand
        self._sh: OutletsShared = transport.outlets_shared
        self._nbrs: array[int] | None
        self._nbrs, self._revs = transport.links(node)
        self._slot = -1  # the slot _used describes
        self._used = 0  # bit p: port p carries something in slot _slot
        self._load: list[float] | None = None  # per-port load in slot _slot (of the ports in _used)
        #: the messages to report and where (:meth:`watch`); None: nothing is reported
        self._follow: Callable[[Any], tuple[Any, Any] | None] | None = None
        self._report: Callable[..., None] = _unwatched

    def _neighbours(self) -> list[int]:
        """The neighbour on each port (-1: none)."""
        if self._nbrs is None:
            return [self._me ^ (1 << p) for p in range(self._sh.xor)]
        return list(self._nbrs)

    def watch(self, follow: Callable[[Any], tuple[Any, Any] | None], report: Callable[..., None]) -> None:
        """From now on, report every message this outlet accepts that ``follow`` names.

        ``follow(message)`` gives a pair ``(a, b)``, or None for a message not reported;
        each send it names is reported, after the message is parked, as ``report(node,
        slot, port, a, b)``. A send the outlet refuses (an error) is never reported. The
        orchestrator's witness of a scheme's sends (``Scheme.follow``): here, in the
        send itself, it costs one call of each per message and no wrapper around it.
        """
        self._follow = follow
        self._report = report

    def _reported(self, slot: int, port: int, message: Any) -> None:
        """:meth:`watch`'s report of one accepted send (where one is asked for)."""
        if self._follow is not None:
            key = self._follow(message)
            if key is not None:
                self._report(self.node, slot, port, key[0], key[1])

    def _target(self, port: int, slot: int) -> tuple[int, int]:
        """(receiver, its in-port) of ``port``.

        Raises:
            FabricError: the node has no port ``port``.
        """
        try:
            nb = self._neighbours()[port] if port >= 0 else -1
        except (IndexError, TypeError):
            nb = -1
        if nb < 0:
            raise FabricError(f"node {self.node} has no port {port!r} (slot {slot})")
        return nb, self._revs[port]

    def _held(self, port: int, slot: int) -> float:
        """Units ``port`` carries in ``slot`` so far."""
        if self._slot != slot or not self._used >> port & 1:
            return 0.0
        return 1.0 if self._load is None else self._load[port]

    def _hold(self, port: int, slot: int, load: float) -> None:
        """From now on ``port`` carries ``load`` units in ``slot``."""
        if self._slot != slot:
            self._slot = slot
            self._used = 0
        self._used |= 1 << port
        if self._load is None:
            if load == 1.0:
                return
            self._load = [1.0] * len(self._revs)  # every load held so far is a whole slot
        self._load[port] = load

    def send(self, port: int, message: Any, size: float = 1.0) -> None:
        """Put ``message`` on out-port ``port`` for delivery at the next slot.

        Args:
            port: the out-port index (see ``ctx.ports``).
            message: msgpack-encodable data; the receiver gets a decoded copy.
            size: the share of the link's per-slot capacity it uses, in (0, 1].

        Raises:
            FabricError: if the node has no such port or ``size`` is out of range.
            CapacityError: if the port's load in this slot would exceed 1.
        """
        sh = self._sh
        slot = sh.clock.slot
        try:  # the per-message hot path: _target and _hold inlined
            p = port  # compiled: a C index (a non-integer or a huge one raises here, as the lookup would)
            if self._nbrs is None:  # a bit flip (a d-cube's port)
                nb = self._me ^ (1 << p) if 0 <= p < sh.xor else -1
            else:
                nb = self._nbrs[p] if p >= 0 else -1
        except (IndexError, TypeError, OverflowError):
            nb = -1
        if nb < 0:
            raise FabricError(f"node {self.node} has no port {port!r} (slot {slot})")
        if size == 1.0:
            one = 1
            bit = one << p
            if self._slot != slot:
                self._slot = slot
                self._used = 0
            elif self._used & bit:
                raise CapacityError(self.node, port, slot, self._held(port, slot) + 1.0)
            self._used |= bit
            if self._load is not None:
                self._load[p] = 1.0
        else:
            self._share(port, size, slot)
        pending = sh.pending
        if pending is None:
            sh.park(nb, self._revs[p], sh.pack(message))
        elif sh.packed:  # InProcessTransport.park, inlined: the pair appended to the receiver's packed inbox
            buf = pending[nb]
            if buf is None:
                pending[nb] = buf = _PACKED_EMPTY[:]
                sh.touched.append(nb)
            count = buf[2] + 1  # _append_pair, inlined
            if count < 256 and buf[0] == 0xDC:
                buf[2] = count
            else:
                _set_count(buf, _packed_count(buf) + 1)
            if not (_COMPILED and _append_int_pair(buf, self._revs[p], message)):
                buf += _PORT_PAIR[self._revs[p]]
                buf += sh.pack(message)
        else:
            pend = pending[nb]  # InProcessTransport.park, inlined
            if pend is None:
                pending[nb] = pend = []
                sh.touched.append(nb)
            # _pair(in_port, pack(message)), inlined: a direct transport's in-ports are below 128.
            # Not pack((in_port, message)): msgpack's checks of a tuple (an ExtType? a Timestamp?)
            # cost more than the concatenation (measured: 13,622 against 12,906 instructions a hop)
            pend.append(_PORT_PAIR[self._revs[p]] + sh.pack(message))
        follow = self._follow
        if follow is not None:  # _reported, inlined
            key = follow(message)
            if key is not None:
                self._report(self.node, slot, port, key[0], key[1])

    def _share(self, port: int, units: float, slot: int) -> None:
        if not 0.0 < units <= 1.0:
            raise FabricError(f"node {self.node}: message size must be in (0, 1], got {units!r} (slot {slot})")
        load = self._held(port, slot) + units
        if load > 1.0 + _EPS:
            raise CapacityError(self.node, port, slot, load)
        self._hold(port, slot, load)

    def started_ports(self, slot: int) -> list[int]:
        """The ports on which a message was started in ``slot`` (judged at the end of that slot)."""
        used = self._used if self._slot == slot else 0
        return [p for p in range(len(self._revs)) if used >> p & 1]

    def idle_ports(self, slot: int) -> list[int]:
        """The ports that carried nothing in ``slot`` (judged at the end of that slot)."""
        used = self._used if self._slot == slot else 0
        return [p for p, nb in enumerate(self._neighbours()) if nb >= 0 and not used >> p & 1]

    def capacity_left(self, port: int) -> float:
        """Units ``port`` can still take in the current slot."""
        slot = self._sh.clock.slot
        self._target(port, slot)
        if self._slot != slot or not self._used >> port & 1:
            return 1.0
        return 1.0 - self._held(port, slot)


class TimedOutlet(Outlet):
    """A node's sending side at a quantum ``q > 1`` (see the module docstring)."""

    __slots__ = ("_q", "_busy", "_later")

    def __init__(self, transport: InProcessTransport, node: int) -> None:
        super().__init__(transport, node)
        self._q = transport.quantum
        self._busy = [0] * len(self._revs)  # first tick at which the port is free again
        self._later = transport.park_later_to

    def send(self, port: int, message: Any, size: float = 1.0) -> None:
        """Put ``message`` (``size`` in paper time units) on ``port``.

        Raises:
            FabricError: no such port, or ``size·q`` neither <= 1 nor a whole number.
            CapacityError: the port is still busy, or this tick's share would exceed 1.
        """
        slot = self._sh.clock.slot
        target = self._target(port, slot)
        if not 0.0 < size <= 1.0:
            raise FabricError(f"node {self.node}: message size must be in (0, 1], got {size!r} (slot {slot})")
        if self._busy[port] > slot:
            raise CapacityError(self.node, port, slot, 1.0 + size * self._q)
        units = size * self._q
        if units <= 1.0 + _EPS:
            self._share(port, min(units, 1.0), slot)
            self._sh.park(target[0], target[1], self._sh.pack(message))
            self._reported(slot, port, message)
            return
        ticks = round(units)
        if abs(units - ticks) > 1e-6:
            raise FabricError(f"node {self.node}: a message of size {size!r} takes {units:g} ticks at quantum "
                              f"{self._q}; sizes must be multiples of 1/{self._q} (slot {slot})")
        held = self._held(port, slot)
        if held > 0.0:
            raise CapacityError(self.node, port, slot, held + units)
        self._hold(port, slot, 1.0)
        self._busy[port] = slot + ticks
        self._later(slot + ticks, target[0], target[1], self._sh.pack(message), slot)
        self._reported(slot, port, message)

    def idle_ports(self, slot: int) -> list[int]:
        """The ports that carried nothing in tick ``slot``: none started there, none still busy."""
        used = self._used if self._slot == slot else 0
        return [p for p, nb in enumerate(self._neighbours()) if nb >= 0 and not used >> p & 1 and self._busy[p] <= slot]

    def capacity_left(self, port: int) -> float:
        """Largest message size (paper units) ``port`` can start now: 0 while it is busy."""
        slot = self._sh.clock.slot
        self._target(port, slot)
        if self._busy[port] > slot:
            return 0.0
        if self._slot == slot and self._used >> port & 1:
            return (1.0 - self._held(port, slot)) / self._q
        return 1.0


class InProcessTransport:
    """All links of one topology, in one process."""

    #: a subclass that overrides :meth:`park` but takes the pairs its outlets park in
    #: ``_pending`` directly as its own (:class:`~._sharded.ShardTransport`) says so here
    collects_pairs: ClassVar[bool] = False

    def __init__(
        self,
        topology: Topology,
        clock: SlotClock,
        faults: FaultSchedule | None = None,
        seed: int = 0,
        on_lost: LostCallback | None = None,
        quantum: int = 1,
    ) -> None:
        self.topology = topology
        self.clock = clock
        self.faults = faults or FaultSchedule()
        self.seed = seed
        self.on_lost = on_lost
        self.quantum = quantum
        #: receiver -> the messages parked for it, each the msgpack pair of its in-port and
        #: its frame (:func:`_pair`: one bytes object a message), or where :attr:`packed`
        #: those pairs in one bytearray; None: nothing
        self._pending: list[Any] = [None] * topology.n_nodes
        #: a pending pair's in-port: its second byte where every port is below 128
        self._in_port: Callable[[bytes], int] = _second_byte if topology.n_ports <= 128 else _in_port
        self._touched: list[int] = []
        #: due slot -> (receiver, in_port, bytes, the slot its sender started it)
        self._later: dict[int, list[tuple[int, int, bytes, int]]] = {}
        #: (receiver, in_port) -> the slot its sender started the multi-tick message arriving
        #: there in the slot being handed over (a link carries one at a time)
        self._began: dict[tuple[int, int], int] = {}
        self.alive = [True] * topology.n_nodes
        self._n_dead = 0
        self.down_links: set[tuple[int, int]] = set()  # (receiver, in_port) of links out of service
        self._links_down: set[tuple[int, int]] = set()  # ... by link-down faults
        self._cut: dict[tuple[int, int], int] = {}  # ... by partitions (how many hold each)
        self.stalled: set[int] = set()
        #: frames end with a CRC-32 (a corrupt fault is scheduled)
        self.checksums = self.faults.checksums
        #: ``pack(message) -> bytes`` for every outlet of this transport. One packer, not
        #: one per outlet: each keeps its own buffer, and thousands of them spread the
        #: per-message writes over thousands of pages (measured: 200 against 307 ns a
        #: message for 4,096 packers, before any cache pressure from the rest of a run).
        #: Sharing is safe: a pack call never yields to another node task.
        self.pack = checked_packer() if self.checksums else packer()
        #: outlets park their messages' pairs in ``_pending`` themselves (:meth:`Outlet.send`), not
        #: through :meth:`park`: where park is this class's own (or a subclass collects the
        #: pairs itself, :attr:`collects_pairs`), frames carry no checksum and every in-port
        #: is below 128 (a pair's head is then two fixed bytes, ``_PORT_PAIR``)
        self.direct = ((type(self).park is InProcessTransport.park or self.collects_pairs)
                       and not self.checksums and topology.n_ports <= 128)
        #: each receiver's pending messages are one bytearray, the msgpack array of its pairs
        #: (the module docstring's "Pending messages"): where outlets park directly, at
        #: quantum 1, in a run without faults (whose delivery never splits an inbox up)
        self.packed = self.direct and quantum == 1 and self.faults.empty
        #: ``park_later`` bound once for every timed outlet (a bound method is 64 bytes a node)
        self.park_later_to = self.park_later
        #: reverse-port tuples, one of each (every node of a hypercube or a torus has the same;
        #: at most _ROWS_KEPT kept: on a mesh of many dimensions nearly every node has its own)
        self._reverse_rows: dict[tuple[int, ...], tuple[int, ...]] = {}
        #: what every outlet of this transport reads (made once the fields above are set)
        self.outlets_shared = OutletsShared(self)
        self.delivered = 0
        self.ledger = FaultLedger()
        #: the message faults: their stages, and the messages they hold back
        self._pipeline = MessagePipeline(self.faults.message_stages(), seed, self.checksums, self.ledger,
                                         self._state_cause, self._lose, self._note)
        #: (sender, slot) of senders that put a message on a port they saw dead in that slot
        #: while a port they saw alive stayed idle: only their losses there are avoidable. A
        #: node with more packets than live ports (a bufferless deflection node) must use a
        #: dead one; that send is forced, not avoidable.
        self.unforced: set[tuple[int, int]] = set()

    def describe(self) -> dict[str, Any]:
        return {"kind": "inprocess"}

    def outlet(self, node: int) -> Outlet:
        """The sending side of ``node``."""
        return Outlet(self, node) if self.quantum == 1 else TimedOutlet(self, node)

    def links(self, node: int) -> tuple[array[int] | None, tuple[int, ...]]:
        """``node``'s out-links: the neighbour on each port (-1: no such port; None where
        the topology's ports are bit flips, ``Topology.xor_ports``) and the port at which
        each arrives there (a shared tuple)."""
        out, revs = self.topology.out_links(node)
        nbrs = None if self.topology.xor_ports else array("i", out)  # node ids are below 2**24
        row = tuple(revs)
        shared = self._reverse_rows.get(row)
        if shared is None:
            if len(self._reverse_rows) >= _ROWS_KEPT:
                return nbrs, row
            self._reverse_rows[row] = shared = row
        return nbrs, shared

    def park(self, receiver: int, in_port: int, data: bytes) -> None:
        """Hold ``data`` for ``receiver`` until the next slot (outlets call this)."""
        pend = self._pending[receiver]
        if pend is None:
            self._pending[receiver] = pend = bytearray(_PACKED_HEAD) if self.packed else []
            self._touched.append(receiver)
        if self.packed:
            _append_pair(pend, _pair(in_port, data))
        else:
            pend.append(_pair(in_port, data))

    def _pairs(self, receiver: int) -> list[bytes]:
        """The pairs pending for ``receiver``, each its own bytes, in parking order."""
        pend = self._pending[receiver]
        if pend is None:
            return []
        return _packed_pairs(pend) if type(pend) is bytearray else pend

    def pending_frames(self, receiver: int) -> list[tuple[int, bytes]]:
        """``(in_port, frame)`` of each message parked for ``receiver`` now, in parking order."""
        return [_split(b) for b in self._pairs(receiver)]

    def park_later(self, due: int, receiver: int, in_port: int, data: bytes, began: int) -> None:
        """Hold ``data`` for ``receiver`` until slot ``due``; its sender started it in slot
        ``began`` (the slot whose view of the ports judges whether its loss was avoidable)."""
        self._later.setdefault(due, []).append((receiver, in_port, data, began))

    def mark_unforced(self, sender: int, slot: int) -> None:
        """``sender`` used a port it saw dead in ``slot`` while one it saw alive stayed idle."""
        self.unforced.add((sender, slot))

    # -- link and node state --------------------------------------------------------------
    def set_alive(self, node: int, alive: bool) -> None:
        """Mark a node up or down; messages to a down node are lost ("node_down")."""
        if self.alive[node] != alive:
            self.alive[node] = alive
            self._n_dead += -1 if alive else 1

    def is_alive(self, node: int) -> bool:
        return self.alive[node]

    def set_stalled(self, node: int, stalled: bool) -> None:
        """Mark a node stalled or not; messages to a stalled node are lost ("stalled")."""
        if stalled:
            self.stalled.add(node)
        else:
            self.stalled.discard(node)

    def lose_unread(self, node: int, message: Any, cause: str, in_port: int | None = None) -> None:
        """Account a delivered message its receiver never read (it crashed or finished); with
        the ``in_port`` it came in on, its sender and the sender's port are named (else -1)."""
        self.ledger.add("lost", cause)
        if self.on_lost is not None:
            sender = self.topology.neighbour(node, in_port) if in_port is not None else None
            if sender is None or in_port is None:
                self.on_lost(self.clock.slot, -1, -1, node, message, cause)
            else:
                self.on_lost(self.clock.slot, sender, self.topology.reverse_port(node, in_port), node, message, cause)

    def set_link(self, node: int, port: int, up: bool) -> None:
        """Take both directions of the link at (node, port) out of or into service."""
        nb = self.topology.neighbour(node, port)
        if nb is None:
            raise FabricError(f"node {node} has no port {port}")
        back = self.topology.reverse_port(node, port)
        for key in ((nb, back), (node, port)):
            if up:
                self._links_down.discard(key)
            else:
                self._links_down.add(key)
            self._refresh(key)

    def cut(self, nodes: frozenset[int], down: bool) -> None:
        """Take every link between ``nodes`` and the other nodes out of service (a partition
        begins), or give it back (it ends). Partitions and link faults combine: a link is
        down while any of them holds it down."""
        topo = self.topology
        for v in sorted(nodes):
            for p in topo.ports(v):
                if p.neighbour in nodes:
                    continue
                for key in ((p.neighbour, topo.reverse_port(v, p.index)), (v, p.index)):
                    n = self._cut.get(key, 0) + (1 if down else -1)
                    if n > 0:
                        self._cut[key] = n
                    else:
                        self._cut.pop(key, None)
                    self._refresh(key)

    def _refresh(self, key: tuple[int, int]) -> None:
        if key in self._links_down or key in self._cut:
            self.down_links.add(key)
        else:
            self.down_links.discard(key)

    # -- delivery -------------------------------------------------------------------------
    async def exchange(self, slot: int) -> list[tuple[int, Frames]]:
        """Hand over what is due at ``slot``: ``(receiver, inbox)`` pairs by receiver, each inbox
        still as its :class:`Frames` (decoded by the receiver when it wakes), ordered by
        in-port (messages that shared one link keep their send order)."""
        return self._hand_over(slot)

    def _hand_over(self, slot: int) -> list[tuple[int, Frames]]:
        began = self._began
        if began:
            began.clear()
        if self._later and slot in self._later:
            for r, p, data, start in self._later.pop(slot):
                InProcessTransport.park(self, r, p, data)  # not self.park: a shard counted it when it was sent
                began[(r, p)] = start
        pipeline = self._pipeline
        if pipeline.held:  # receivers with a held message due now take part in this slot's delivery
            for r in pipeline.due_receivers(slot):
                if self._pending[r] is None:
                    self._pending[r] = bytearray(_PACKED_HEAD) if self.packed else []
                    self._touched.append(r)
        touched = self._touched
        if not touched:
            return []
        touched.sort()  # receivers in id order: they are woken, and run, in the order their state was built
        pending = self._pending
        out: list[tuple[int, Frames]] = []
        faulty = bool(self.down_links) or bool(pipeline.stages) or self._n_dead > 0 or bool(self.stalled)
        for r in touched:
            pend = pending[r]
            assert pend is not None
            pending[r] = None
            if type(pend) is bytearray:  # packed: sorted by in-port as the receiver decodes it
                if not faulty:
                    out.append((r, Frames(r, slot, pend)))
                    self.delivered += _packed_count(pend)
                    continue
                pend = _packed_pairs(pend)
            if len(pend) > 1:
                pend.sort(key=self._in_port)
            if faulty:
                kept = pipeline.judge(r, [_split(b) for b in pend], slot, self._began)
                if not kept:
                    continue
                pend = [_pair(p, b) for p, b in kept]
            out.append((r, Frames(r, slot, pend)))
            self.delivered += len(pend)
        touched.clear()
        return out

    def _state_cause(self, r: int, p: int) -> str | None:
        """Why a message to ``r`` on in-port ``p`` cannot arrive now (a dead node or link), or None."""
        if not self.alive[r]:
            return "node_down"
        if r in self.stalled:
            return "stalled"
        if (r, p) in self.down_links:
            return "link_down" if (r, p) in self._links_down else "partition"
        return None

    def _payload(self, data: bytes) -> Any:
        return decode(data[:-CHECKSUM_BYTES] if self.checksums else data)

    def _lose(self, slot: int, r: int, in_port: int, data: bytes, cause: str, chosen: int | None = None) -> None:
        """Book a message lost to ``cause`` (``slot``: its last slot on the wire). It is lost
        avoidably where its sender chose a port it saw dead: judged in ``chosen``, the slot
        the sender started it (a multi-tick message started before its link died was not)."""
        self.ledger.add("lost", cause)
        sender = self.topology.neighbour(r, in_port)
        assert sender is not None
        port = self.topology.reverse_port(r, in_port)
        chosen = slot if chosen is None else chosen
        if cause in _DEAD_CAUSES and (sender, chosen) in self.unforced and self._known_dead(sender, port, chosen):
            self.ledger.add("lost", AVOIDABLE + cause)
        if self.on_lost is not None:
            self.on_lost(slot, sender, port, r, self._payload(data), cause)

    def _note(self, slot: int, r: int, in_port: int, data: bytes, cause: str) -> None:
        if self.on_lost is not None:
            sender = self.topology.neighbour(r, in_port)
            assert sender is not None
            self.on_lost(slot, sender, self.topology.reverse_port(r, in_port), r, self._payload(data), cause)

    def _known_dead(self, node: int, port: int, slot: int) -> bool:
        """Whether ``node``'s context showed ``port`` dead in ``slot`` (the failure detector's view)."""
        detect = self.faults.detect
        if detect is None:
            return False
        return bool(self.faults.port_timeline(self.topology).dead_mask(node, slot - detect) >> port & 1)

    def busy(self) -> bool:
        return bool(self._touched) or bool(self._later) or bool(self._pipeline.held)

    def in_flight(self) -> InFlight:
        """Messages sent but not yet delivered, as ``(receiver, in_port, message)`` (held ones
        included), decoded as they are read (:class:`~._in_flight.InFlight`)."""
        pending = self._pending
        parts: list[Part] = [(r, _Packed(pend) if type(pend) is bytearray else list(pend or ()))
                             for r in sorted(self._touched) for pend in (pending[r],)]
        for due in sorted(self._later):
            parts += [(r, [_pair(p, b)]) for r, p, b, _ in self._later[due]]
        parts += [(r, [_pair(p, b) for p, b in frames]) for r, frames in self._pipeline.held_frames()]
        return InFlight(parts, self._payload, _split)
