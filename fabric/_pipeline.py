"""The message-fault pipeline: what the schedule's message faults do to each message delivered.

A transport hands each receiver's batch of a slot to :meth:`MessagePipeline.judge` (only
in runs with a fault). A message whose link or receiver is dead is lost to that (the
transport says why: ``state_cause``); otherwise the message stages of the schedule
(:meth:`~._faults.FaultSchedule.message_stages`, in their kinds' order) judge it, each
returning a verdict of :mod:`._fault_entries` that is applied here:

* :class:`~._fault_entries.Lose`: the message is destroyed (no later stage sees it);
* :class:`~._fault_entries.Flip`: its bytes are flipped on the wire, after the checksum
  was taken (``detected``: the receiver's check fails, lost cause ``corrupt``) or before
  (the check passes and the decode refuses: lost cause ``undecodable``);
* :class:`~._fault_entries.Copy`: it is delivered, and a copy follows on its link in
  the first slot after its due one that the link carries nothing else;
* :class:`~._fault_entries.Hold`: it is held back at the receiving end of its link and
  handed over that many slots late (the first hold of a message counts), in the first
  slot from then on that the link carries nothing new.

Held messages (copies and delayed ones) wait here, per receiver and in-port, and are
released one per link and slot. Every message the pipeline destroys, copies or holds is
booked in the transport's :class:`~._ledger.FaultLedger` and reported through the
transport's ``lose`` and ``note`` callbacks, which know the senders and judge whether a
loss was avoidable.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator

from ._codec import CHECKSUM_BYTES, DECODE_ERRORS, decode, seal, verify
from ._errors import FabricError
from ._fault_entries import Copy, Flip, Hold, Lose, MessageStage, fault_draw
from ._ledger import FaultLedger

__all__ = ["LoseCallback", "MessagePipeline", "NoteCallback", "StateCause"]

#: ``state_cause(receiver, in_port)``: why a message there cannot arrive now (a dead node or
#: link), or None.
StateCause = Callable[[int, int], "str | None"]
#: ``lose(slot, receiver, in_port, data, cause, chosen)``: book and report a lost message
#: (``chosen``: the slot its sender started it, None: ``slot``).
LoseCallback = Callable[[int, int, int, bytes, str, "int | None"], None]
#: ``note(slot, receiver, in_port, data, cause)``: report a copy added or a message held back.
NoteCallback = Callable[[int, int, int, bytes, str], None]

#: Salt of the draws that pick which bytes a corrupt fault flips.
_FLIP_SALT = 0xC0FFEE


class MessagePipeline:
    """The message faults of one transport: its stages, the messages they hold back, and
    what each verdict does (see the module docstring)."""

    def __init__(self, stages: list[MessageStage], seed: int, checksums: bool, ledger: FaultLedger,
                 state_cause: StateCause, lose: LoseCallback, note: NoteCallback) -> None:
        self.stages = stages
        self.seed = seed
        #: frames end with a CRC-32 (stripped from what is handed over)
        self.checksums = checksums
        self.ledger = ledger
        self._state_cause = state_cause
        self._lose = lose
        self._note = note
        #: messages dup/delay hold back: receiver -> in_port -> heap of (due, seq, sent, bytes)
        self.held: dict[int, dict[int, list[tuple[int, int, int, bytes]]]] = {}
        self._held_seq = 0

    def judge(self, r: int, pend: list[tuple[int, bytes]], slot: int,
              began: dict[tuple[int, int], int]) -> list[tuple[int, bytes]]:
        """What of ``r``'s batch ``pend`` (by in-port) is handed over at ``slot``, checksums stripped,
        with the held messages released there.

        ``began``: the slot its sender started each multi-tick message arriving now, by
        (receiver, in-port).
        """
        sent = slot - 1  # its last tick on the wire: the slot its draws are keyed by
        in_force: dict[int, list[MessageStage]] = {}  # the stages whose windows hold in a slot
        kept: list[tuple[int, bytes]] = []
        checks = self.checksums
        for k, (p, b) in enumerate(pend):
            # A message is judged by the faults in force in the slot its sender started it:
            # a multi-tick message by its first tick on the wire, not its last.
            start = began.get((r, p), sent)
            stages = in_force.get(start)
            if stages is None:
                stages = in_force[start] = [s for s in self.stages if s.active(start)]
            cause = self._state_cause(r, p)
            copy = False
            hold = 0
            if cause is None:
                for stage in stages:
                    verdict = stage.judge(self.seed, sent, r, p, k, start)
                    if verdict is None:
                        continue
                    if isinstance(verdict, Lose):
                        cause = verdict.cause
                        break
                    if isinstance(verdict, Flip):
                        cause = self._flip(b, verdict.detected, sent, r, p, k)
                        break
                    if isinstance(verdict, Copy):
                        copy = True
                    elif isinstance(verdict, Hold) and not hold:
                        hold = verdict.slots
            if cause is not None:
                self._lose(sent, r, p, b, cause, start)
                continue
            if copy:
                self.ledger.add("duplicated", "dup")
                self._hold(r, p, slot + hold + 1, sent, b)
                self._note(sent, r, p, b, "dup")
            if hold:
                self.ledger.add("delayed", "delay")
                self._hold(r, p, slot + hold, sent, b)
                self._note(sent, r, p, b, "delay")
                continue
            kept.append((p, b[:-CHECKSUM_BYTES] if checks else b))
        if self.held and r in self.held:
            kept = self._release(r, pend, kept, slot)
        return kept

    def _flip(self, data: bytes, detected: bool, sent: int, r: int, p: int, k: int) -> str:
        """Flip bytes of ``data`` on the wire; the cause the receiver drops it for.

        Detected: one byte of the msgpack bytes flipped after the CRC was taken, so the
        receiver's check fails. Undetected: the bytes scrambled before it was taken (the
        first made 0xc1, a byte msgpack never uses), so the check passes and decode refuses.
        """
        self.ledger.add("corrupted", "corrupt" if detected else "undetected")
        payload = data[:-CHECKSUM_BYTES]
        h = int(fault_draw(self.seed, _FLIP_SALT, sent, r, p, k) * (1 << 53))
        if detected:
            flipped = bytearray(data)
            flipped[h % len(payload)] ^= 1 + (h >> 20) % 255
            wire = bytes(flipped)
        else:
            key = h.to_bytes(7, "little")
            wire = seal(b"\xc1" + bytes(c ^ key[i % 7] for i, c in enumerate(payload[1:])))
        got = verify(wire)
        if got is None:
            return "corrupt"
        try:
            decode(got)
        except DECODE_ERRORS:
            return "undecodable"
        raise FabricError(f"node {r}: a garbled frame decoded (slot {sent})")  # pragma: no cover - 0xc1 never decodes

    def _hold(self, r: int, p: int, due: int, sent: int, data: bytes) -> None:
        self._held_seq += 1
        heapq.heappush(self.held.setdefault(r, {}).setdefault(p, []), (due, self._held_seq, sent, data))

    def due_receivers(self, slot: int) -> Iterator[int]:
        """The receivers with a held message due at ``slot``."""
        for r, links in self.held.items():
            if any(h[0][0] <= slot for h in links.values()):
                yield r

    def _release(self, r: int, fresh: list[tuple[int, bytes]], kept: list[tuple[int, bytes]],
                 slot: int) -> list[tuple[int, bytes]]:
        """Hand over one due held message on each in-port of ``r`` that carried nothing new."""
        links = self.held[r]
        used = {p for p, _ in fresh}
        carried = False
        for p in sorted(links):
            heap = links[p]
            if p in used or heap[0][0] > slot:
                continue
            _, _, sent, data = heapq.heappop(heap)
            if not heap:
                del links[p]
            cause = self._state_cause(r, p)
            if cause is not None:
                self._lose(sent, r, p, data, cause, None)
                continue
            kept.append((p, data[:-CHECKSUM_BYTES] if self.checksums else data))
            carried = True
        if not links:
            del self.held[r]
        if carried:
            kept.sort(key=_by_port)
        return kept

    def held_frames(self) -> Iterator[tuple[int, list[tuple[int, bytes]]]]:
        """``(receiver, [(in_port, frame), ...])`` of every held message, by receiver, in-port and due slot."""
        for r in sorted(self.held):
            for p in sorted(self.held[r]):
                yield r, [(p, item[3]) for item in sorted(self.held[r][p])]


def _by_port(item: tuple[int, bytes]) -> int:
    return item[0]
