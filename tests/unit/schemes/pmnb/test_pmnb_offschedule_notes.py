"""The pmnb family's fault books (:class:`slotnet.schemes.pmnb._offschedule.FaultNotes`), fed by hand."""

from __future__ import annotations

from slotnet.schemes.pmnb._offschedule import FaultNotes


def test_a_message_to_a_finished_node_is_no_fault():
    """``node_finished`` losses alone do not make a run faulted: they are the scheme's doing."""
    notes = FaultNotes(faults=False)
    assert notes.faulted({"node_finished": 2}) is False
    assert notes.faulted({"node_finished": 2, "loss": 0}) is False
    assert notes.faulted({"loss": 1}) is True
    assert FaultNotes(faults=True).faulted({}) is True


def test_without_faults_losses_to_finished_nodes_fail_no_message_lost():
    """Fault-free: any lost message fails ``no_message_lost``, losses to finished nodes included."""
    out = FaultNotes(faults=False).no_message_lost(2, {"node_finished": 2})
    assert out == {"ok": False, "lost": 2}


def test_under_faults_losses_to_finished_nodes_are_not_excused():
    """Under faults the faults' own losses pass, but a message the scheme sent to a finished node still fails."""
    notes = FaultNotes(faults=True)
    assert notes.no_message_lost(3, {"loss": 3, "node_finished": 0})["ok"] is True
    out = notes.no_message_lost(4, {"loss": 3, "node_finished": 1})
    assert out["ok"] is False and out["by_cause"] == {"loss": 3, "node_finished": 1}


def test_a_stop_or_an_off_schedule_record_without_faults_is_a_scheme_error():
    """Fault-free, a node that stopped (or went off its schedule) is the scheme's error; under faults it is damage."""
    notes = FaultNotes(faults=False)
    assert notes.scheme_error({}) is False
    notes.handlers()["stopped"](3, 5, "routing", "restarted")
    assert notes.scheme_error({}) is True
    assert notes.scheme_error({"node_finished": 1}) is True  # a finished node is no fault either
    assert notes.scheme_error({"loss": 1}) is False
    off = FaultNotes(faults=False)
    off.handlers()["off_schedule"](2, 4, "scan", "missed")
    assert off.scheme_error({}) is True
    faulted = FaultNotes(faults=True)
    faulted.handlers()["stopped"](3, 5, "routing", "restarted")
    assert faulted.scheme_error({}) is False


def test_under_faults_a_check_is_failed_by_messages_to_finished_nodes_alone():
    """``finished_not_excused``: a check stands unless a message reached a finished node; then it fails, counted."""
    notes = FaultNotes(faults=True)
    check = {"ok": True}
    notes.finished_not_excused(check, {"loss": 2, "node_finished": 0})
    assert check == {"ok": True}
    notes.finished_not_excused(check, {"loss": 2, "node_finished": 3})
    assert check == {"ok": False, "messages_to_finished_nodes": 3}
