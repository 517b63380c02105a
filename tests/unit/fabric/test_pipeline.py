"""fabric/_pipeline.py: how the message-fault pipeline applies each stage's verdict to a receiver's batch."""

from __future__ import annotations

from typing import Any

from slotnet.fabric._codec import seal
from slotnet.fabric._fault_entries import Copy, Flip, Hold, Lose, Verdict
from slotnet.fabric._ledger import FaultLedger
from slotnet.fabric._pipeline import MessagePipeline


class Always:
    """A stage that hits every message with one verdict (active from slot ``start`` on)."""

    def __init__(self, verdict: Verdict | None, start: int = 0) -> None:
        self.verdict = verdict
        self.start = start
        self.judged: list[tuple[int, int, int, int]] = []

    def active(self, slot: int) -> bool:
        return slot >= self.start

    def judge(self, seed: int, slot: int, receiver: int, in_port: int, k: int, sent: int | None = None) -> Verdict | None:
        self.judged.append((slot, receiver, in_port, k))
        return self.verdict


def make(*stages: Any, dead: set[tuple[int, int]] | None = None, checksums: bool = False) -> tuple[MessagePipeline, dict]:
    """A pipeline over ``stages`` whose callbacks record what they are told."""
    seen: dict[str, list[Any]] = {"lost": [], "noted": []}

    def state_cause(r: int, p: int) -> str | None:
        return "link_down" if dead and (r, p) in dead else None

    def lose(slot: int, r: int, p: int, data: bytes, cause: str, chosen: int | None) -> None:
        seen["lost"].append((slot, r, p, data, cause, chosen))

    def note(slot: int, r: int, p: int, data: bytes, cause: str) -> None:
        seen["noted"].append((slot, r, p, data, cause))

    return MessagePipeline(list(stages), 7, checksums, FaultLedger(), state_cause, lose, note), seen


def test_a_lose_verdict_destroys_the_message_and_no_later_stage_sees_it():
    """Lose: the message is booked lost with its cause (judged in the slot it was on the wire), later stages skip it."""
    later = Always(Copy())
    pipe, seen = make(Always(Lose("loss")), later)
    assert pipe.judge(3, [(0, b"a"), (1, b"b")], 10, {(3, 1): 6}) == []
    assert seen["lost"] == [(9, 3, 0, b"a", "loss", 9), (9, 3, 1, b"b", "loss", 6)]
    assert later.judged == [] and pipe.held == {}


def test_a_dead_link_loses_the_message_before_any_stage_judges_it():
    """The transport's state cause comes first: no stage is asked about a message on a dead link."""
    stage = Always(Copy())
    pipe, seen = make(stage, dead={(2, 1)})
    assert pipe.judge(2, [(0, b"x"), (1, b"y")], 5, {}) == [(0, b"x")]
    assert seen["lost"] == [(4, 2, 1, b"y", "link_down", 4)]
    assert stage.judged == [(4, 2, 0, 0)]


def test_copy_delivers_now_and_holds_a_copy_for_the_next_free_slot():
    """Copy: delivered on time, a copy held for slot + 1, booked duplicated and noted as dup."""
    pipe, seen = make(Always(Copy()))
    assert pipe.judge(1, [(0, b"m")], 4, {}) == [(0, b"m")]
    assert pipe.ledger.duplicated == {"dup": 1} and seen["noted"] == [(3, 1, 0, b"m", "dup")]
    assert list(pipe.due_receivers(4)) == [] and list(pipe.due_receivers(5)) == [1]
    assert list(pipe.held_frames()) == [(1, [(0, b"m")])]


def test_the_first_hold_counts_and_a_copy_follows_the_held_message():
    """Hold: held back its slots (a second hold does not add), and a copy of a held message follows it one slot later."""
    pipe, seen = make(Always(Hold(3)), Always(Hold(9)), Always(Copy()))
    assert pipe.judge(0, [(2, b"h")], 6, {}) == []
    assert pipe.ledger.delayed == {"delay": 1} and pipe.ledger.duplicated == {"dup": 1}
    assert [n[-1] for n in seen["noted"]] == ["dup", "delay"]
    dues = sorted(item[0] for item in pipe.held[0][2])
    assert dues == [9, 10]


def test_held_messages_go_one_per_free_link_and_slot():
    """A held message is released in its due slot only on a link that carries nothing new, one per slot."""
    pipe, _ = make(Always(Hold(1)))
    assert pipe.judge(0, [(1, b"a")], 1, {}) == []  # a held until 2
    assert pipe.judge(0, [(1, b"b")], 2, {}) == []  # b held until 3; a is due, but its link carried b
    pipe.stages = []
    assert pipe.judge(0, [(1, b"c")], 3, {}) == [(1, b"c")]  # the link carries c: nothing released
    assert pipe.judge(0, [], 4, {}) == [(1, b"a")]  # the oldest first, one per slot
    assert pipe.judge(0, [], 5, {}) == [(1, b"b")] and pipe.held == {}


def test_flip_verdicts_drop_the_message_as_the_checksum_or_the_decoder_would():
    """Flip detected: lost ``corrupt``; undetected: lost ``undecodable``; both counted as corrupted."""
    frame = seal(b"\x92\x01\x02")
    pipe, seen = make(Always(Flip(detected=True)), checksums=True)
    assert pipe.judge(1, [(0, frame)], 2, {}) == []
    pipe.stages = [Always(Flip(detected=False))]
    assert pipe.judge(1, [(0, frame)], 3, {}) == []
    assert [lost[4] for lost in seen["lost"]] == ["corrupt", "undecodable"]
    assert pipe.ledger.corrupted == {"corrupt": 1, "undetected": 1}


def test_a_stage_is_asked_only_while_active_and_checksums_are_stripped():
    """An inactive stage is skipped; what is handed over loses its 4-byte checksum when frames carry one."""
    pipe, _ = make(Always(Lose("loss"), start=50), checksums=True)
    frame = seal(b"\x01")
    assert pipe.judge(1, [(0, frame)], 10, {}) == [(0, b"\x01")]


def test_a_multi_tick_message_is_judged_by_the_windows_of_the_slot_it_was_started():
    """A message started in slot 12 that arrives at 20 meets the stages active in 12, not 19; its draws stay keyed by 19."""
    late = Always(Lose("loss"), start=15)  # a window from 15 on: the message was sent before it
    pipe, seen = make(late)
    assert pipe.judge(1, [(0, b"long"), (1, b"short")], 20, {(1, 0): 12}) == [(0, b"long")]
    assert late.judged == [(19, 1, 1, 1)]  # only the one-tick message, sent in 19, is judged
    assert seen["lost"] == [(19, 1, 1, b"short", "loss", 19)]
    early = Always(Lose("loss"), start=12)
    pipe, seen = make(early)
    assert pipe.judge(1, [(0, b"long")], 20, {(1, 0): 12}) == []
    assert seen["lost"] == [(19, 1, 0, b"long", "loss", 12)] and early.judged == [(19, 1, 0, 0)]


def test_a_loss_stage_rates_a_multi_tick_message_by_its_first_slot():
    """The loss stage's rate is the one in force when the message was started; its draw is keyed by the last tick."""
    from slotnet.fabric._fault_entries import LossStage, LossWindow, loss_draw

    stage = LossStage([LossWindow(1.0, 15, 20)])
    assert stage.judge(3, 19, 1, 0, 0, 12) is None and stage.judge(3, 19, 1, 0, 0) == Lose("loss")
    half = LossStage([LossWindow(0.5, 0, 13)])
    for k in range(100):
        want = Lose("loss") if loss_draw(3, 19, 1, 0, k) < 0.5 else None
        assert half.judge(3, 19, 1, 0, k, 12) == want
