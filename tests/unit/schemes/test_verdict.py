"""A row outside the paper's agreement is `known` only when its note's explanation accounts for the gap."""

from __future__ import annotations

import math
import pickle

from hypothesis import given
from hypothesis import strategies as st

from slotnet.schemes import Row
from slotnet.schemes._verdict import Explanation, judge_gap
from slotnet.schemes.broadcast import _theory_indirect_slots as slot_model
from slotnet.schemes.broadcast import repro as bcast_repro
from slotnet.schemes.broadcast import theory as bcast_theory


def test_a_note_whose_corrected_value_is_far_from_the_run_is_outside():
    """The corrected value 24 is 20 half-widths from the run at 26: OUTSIDE, saying how far."""
    row = Row("T", "d=6", "D", None, 26.0, 0.1, 27.5, note=Explanation("Prop. 5 over-counts", corrected=24.0))
    verdict = row.verdict()
    assert verdict.startswith("OUTSIDE: off the theory by 1.5")
    assert "the note explains only the gap to 24, and the row is 2 from that" in verdict


def test_a_note_whose_corrected_value_agrees_with_the_run_is_known():
    """The run at 26.0 ± 0.1 agrees with the corrected 26.05: known, with the note's text."""
    row = Row("T", "d=6", "D", None, 26.0, 0.1, 27.5, note=Explanation("Prop. 5 over-counts", corrected=26.05))
    assert row.verdict() == "known: Prop. 5 over-counts"


def test_a_plain_note_explains_nothing():
    """A note with no corrected value cannot account for a gap: the row is OUTSIDE."""
    verdict = Row("T", "c", "m", None, 4.0, 0.01, 4.2, note="a slip").verdict()
    assert verdict.startswith("OUTSIDE: off the theory by 0.2") and verdict.endswith("its note names no corrected value")


def test_a_one_sided_explanation_covers_its_side_only():
    """"The run sits below the model": known for a run below it, OUTSIDE for a run far above it."""
    below = Row("W", "c", "wait", None, 2.0, None, 4.0, note=Explanation("less variable", high=4.0), tolerance=0.4)
    above = Row("W", "c", "wait", None, 6.0, None, 4.0, note=Explanation("less variable", high=4.0), tolerance=0.4)
    assert below.verdict() == "known: less variable"
    assert above.verdict().startswith("OUTSIDE") and "at most 4, and the row is 2 from that" in above.verdict()


def test_a_model_row_is_known_when_the_corrected_value_is_its_model():
    """A model row (no simulation): the printed 13 against the exact 12, the note correcting to 12."""
    row = Row("Theorem 1", "p=5", "time", 13.0, None, None, 12.0, note=Explanation("one too many", corrected=12.0),
              tolerance=0.0)
    assert row.verdict() == "known: one too many"
    wrong = Row("Theorem 1", "p=5", "time", 13.0, None, None, 12.0, note=Explanation("one too many", corrected=13.0),
                tolerance=0.0)
    assert wrong.verdict().startswith("OUTSIDE")


@given(sim=st.floats(0.0, 100.0), ci=st.floats(0.01, 2.0), corrected=st.floats(0.0, 100.0))
def test_known_exactly_when_the_run_agrees_with_the_corrected_value(sim, ci, corrected):
    """Outside the paper's agreement, the verdict is known iff |sim − corrected| <= the row's allowance."""
    theory = sim + 10.0 + 2.0 * math.sqrt(2.0) * ci  # always outside the agreement with the theory
    row = Row("T", "c", "m", None, sim, ci, theory, note=Explanation("why", corrected=corrected))
    known = abs(sim - corrected) <= row.allowed()
    assert row.verdict().startswith("known" if known else "OUTSIDE")


def test_the_issue_example_bcast_indirect_far_from_the_rules_value_is_outside():
    """The sweep's bcast-indirect row 5.7 half-widths from Rules A-F's value is OUTSIDE, not known (#35 item 7)."""
    d, rho, ci = 4, 0.6, 0.2
    rules = slot_model.slot_delay(d, rho, "D")
    sim = rules + 5.7 * ci
    res = {"mean_broadcast_delay": sim, "mean_broadcast_delay_ci95": ci,
           "_theory": {"mean_broadcast_delay": bcast_theory.indirect_delay(d, rho)}}
    note = bcast_repro._sweep_note("bcast-indirect", d, rho, res)
    assert "5.7 half-widths from the rules' value" in note
    row = Row(f"sweep d={d}", f"bcast-indirect rho={rho:g}", "mean_broadcast_delay", None, sim, ci,
              res["_theory"]["mean_broadcast_delay"], note=note)
    assert row.verdict().startswith("OUTSIDE")
    on_rules = Row(row.experiment, row.case, row.metric, None, rules, ci, row.theory,
                   note=bcast_repro._sweep_note("bcast-indirect", d, rho, dict(res, mean_broadcast_delay=rules)))
    assert on_rules.verdict().startswith("known: Prop. 5 counts the l1/l2 crossing")


def test_an_explanation_is_its_text_and_keeps_its_range_through_pickle():
    """Reports print it as the note's text; worker processes get its range back."""
    e = Explanation("text", low=1.0, high=2.0)
    back = pickle.loads(pickle.dumps(e))
    assert back == "text" and isinstance(back, Explanation) and (back.low, back.high) == (1.0, 2.0)
    assert e.with_text("text.").low == 1.0 and e.describe() == "between 1 and 2"


def test_judge_gap_without_a_note_is_outside():
    """No note: the plain OUTSIDE verdict with by how much."""
    row = Row("T", "c", "m", None, 4.0, 0.01, 4.2)
    assert judge_gap(row, "theory", 0.2, 0.01) == "OUTSIDE: off the theory by 0.2 > 0.01 allowed"
