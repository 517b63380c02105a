"""Traces: the driver's events (faults, losses) are placed by slot, not by when they were emitted.

A trace is written slot by slot, nodes in order; within a node and slot, the events the
driver emitted about it (a fault taking effect -- crash, recover, a stall and its end, a
link or partition change --, a loss, a copy, a delay) come first, in a canonical order,
then the node's own events in the order it caused them. Pinned here, each by a test that
fails when it breaks: on the writer with events handed over out of order, and on a run
with every kind of fault, whose trace must also be the same over shards.
"""

from __future__ import annotations

import json
from itertools import groupby

import trio

from slotnet import FaultSchedule, RunSpec, TraceSpec, run
from slotnet.orchestrator.engine._trace import Tracer
from slotnet.orchestrator.shard._memory_link import run_sharded_in_memory
from slotnet.orchestrator.tools._trace_query import read_trace

DRIVER = ("lost", "fault")


def _read(path) -> list[dict]:
    return list(read_trace(path))


def test_the_writer_orders_by_slot_then_node_driver_events_first(tmp_path):
    """Events of two slots handed to the writer in a scrambled order (as a coordinator may
    hold a late slot's) come out by slot, then node; a node's driver events first, sorted;
    its own events in the order it caused them."""
    path = tmp_path / "t.jsonl"
    tracer = Tracer(TraceSpec(str(path)), {})
    buf = tracer.buffer
    buf.tap(1, 6, "sent", {"port": 0})
    buf.tap(2, 5, "received", {"port": 1})
    buf.driver_tap(1, 6, "fault", {"fault": "recover", "port": None})
    buf.tap(1, 5, "sent", {"port": 3})
    buf.driver_tap(1, 5, "lost", {"from": 1, "port": 2, "to": 0, "message": 7, "cause": "link_down"})
    buf.tap(1, 5, "sent", {"port": 1})
    buf.driver_tap(1, 5, "fault", {"fault": "stall", "first": 5, "last": 8})
    buf.driver_tap(0, 5, "fault", {"fault": "crash", "port": None})
    tracer.close()
    got = [(e["slot"], e["node"], e["event"], e.get("fault") or e.get("port")) for e in _read(path)]
    assert got == [
        (5, 0, "fault", "crash"),
        (5, 1, "lost", 2),  # canonically: the loss's text, keys sorted, begins '{"cause"', the stall's '{"event"'
        (5, 1, "fault", "stall"),
        (5, 1, "sent", 3),  # the node's own, as it sent them
        (5, 1, "sent", 1),
        (5, 2, "received", 1),
        (6, 1, "fault", "recover"),
        (6, 1, "sent", 0),
    ]


FAULTS = ["crash@10:3", "recover@20:3", "stall@5:8:9", "link-down@12:2:1", "link-up@15:2:1", "partition@25:28:0-3",
          "loss=0.05", "dup=0.03", "delay=0.05:2", "corrupt=0.03", "detect=2"]


def _check_order(events: list[dict]) -> int:
    """Slots never go back, nodes ascend within a slot, driver events lead each node's slot;
    returns how many (slot, node) groups hold both kinds."""
    keys = [(e["slot"], e["node"]) for e in events]
    assert keys == sorted(keys)
    mixed = 0
    for _, grouped in groupby(events, key=lambda e: (e["slot"], e["node"])):
        group = list(grouped)
        kinds = [e["event"] in DRIVER for e in group]
        driver = [e for e in group if e["event"] in DRIVER]
        assert kinds == sorted(kinds, reverse=True), "a driver event after a node's own event"
        assert driver == sorted(driver, key=lambda e: json.dumps(e, sort_keys=True))
        mixed += any(kinds) and not all(kinds)
    return mixed


def test_a_traced_run_under_faults_places_driver_events_by_slot(tmp_path):
    """Every fault kind on a deflection run: each of a node's slots opens with the driver's
    events about it, whatever order they were emitted in, in one process and over 3 shards."""
    one, many = tmp_path / "one.jsonl", tmp_path / "many.jsonl"
    base = dict(load={"offered": 1.0}, slots=40, seed=3, faults=FaultSchedule.parse(FAULTS))
    run(RunSpec("deflection", "hypercube:4", **base, trace=TraceSpec(str(one))))
    trio.run(lambda: run_sharded_in_memory(RunSpec("deflection", "hypercube:4", **base, shards=3,
                                                   trace=TraceSpec(str(many))).prepare()))
    events = _read(one)
    assert {e.get("fault") for e in events if e["event"] == "fault"} >= {"crash", "recover", "stall", "stall-end",
                                                                          "link-down", "link-up", "partition", "dup",
                                                                          "delay"}
    assert _check_order(events) > 50
    assert one.read_bytes() == many.read_bytes()
