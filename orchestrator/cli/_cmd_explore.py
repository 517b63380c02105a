"""``slotnet explore``: a scheme under every fault of a family, each run judged; the first failure shrunk."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from slotnet.fabric import FaultSchedule

from ..engine._progress import RunsProgress
from ..engine._spec import RunSpec, SpecError
from ._cmd_run import VERDICT_FAILED
from ._common import OutputError, int_set, load_args, params, print_json

__all__ = ["check_writable", "cmd_explore", "explore_schedule", "replay_command"]


def check_writable(path: str, flag: str) -> None:
    """``path`` can be written (checked before any run); nothing is left behind.

    Raises:
        SpecError: naming the flag and why.
    """
    existed = os.path.exists(path)
    if existed and not os.path.isfile(path):
        raise SpecError(f"{flag}: {path!r} is not a regular file")
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise SpecError(f"{flag}: cannot write {path!r}: {exc.strerror or exc}") from None
    if not existed:
        os.unlink(path)


def explore_schedule(text: str) -> list[dict[str, Any]] | None:
    """None for a family name; else the JSON objects of the faults file ``text`` (checked)."""
    from ..tools._explore import FAMILIES

    if text in FAMILIES:
        return None
    if not os.path.isfile(text):
        raise SpecError(f"--faults must be one of {', '.join(FAMILIES)} or a faults file, got {text!r}")
    FaultSchedule.parse(file=text)  # every malformed entry is refused here
    with open(text, encoding="utf-8") as fh:
        return list(json.load(fh))


def cmd_explore(args: argparse.Namespace) -> int:
    """``slotnet explore``."""
    from ..tools._explore import explore, format_explore, shrink_failure

    spec = RunSpec(scheme=args.scheme, topology=args.topology, params=params(args.param), load=load_args(args),
                   slots=args.slots, warmup=args.warmup, seed=args.seed, rng=args.rng,
                   max_backlog_per_node=args.max_backlog)
    spec.prepare()
    schedule = explore_schedule(args.faults)
    crash = None
    if args.crash_slots is not None:
        crash = sorted(int_set(args.crash_slots, "--crash-slots") or ())
        if not crash:
            raise SpecError("--crash-slots needs at least one slot")
    if args.shrink:
        if schedule is not None and Path(args.shrink).resolve() == Path(args.faults).resolve():
            raise SpecError(f"--shrink {args.shrink!r} would overwrite the faults file it judges")
        check_writable(args.shrink, "--shrink")
    report = explore(spec, None if schedule is not None else args.faults, schedule=schedule, samples=args.samples,
                     crash_slots=crash, jobs=args.jobs, progress=RunsProgress(),
                     detect="default" if args.detect is None else args.detect)
    shrunk = None
    failing = next((r for r in report["scenarios"] if not r["ok"]), None)
    if report["family"] == "random":  # the first sample of the gravest class (a refusal is no failure)
        from ..tools._explore import CLASSES

        grave = [r for r in report["scenarios"] if r["class"] not in ("ok", "refused")]
        failing = min(grave, key=lambda r: CLASSES.index(r["class"]), default=None)
    if args.shrink and failing is not None:
        shrunk = shrink_failure(spec, failing["faults"], failing.get("class"))
        shrunk["from"] = failing["fault"]
        shrunk["file"] = args.shrink
        shrunk["replay"] = replay_command(args, spec)
        if failing.get("class") is not None:  # a random sample's checks are a run's: replay the run
            from ..tools._explore import base_request
            from ..tools._fuzz import run_command

            shrunk["run"] = run_command(base_request(spec), [], args.shrink)
        text = json.dumps(shrunk["faults"], indent=1) + "\n"
        try:
            with open(args.shrink, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise OutputError(f"--shrink: cannot write {args.shrink!r}: {exc.strerror or exc}") from None
        report["shrunk"] = shrunk
    # as slotnet run and check: a failed scenario (a refusal is none) or a failing fault-free run fails
    summary = report.get("summary", {})
    status = VERDICT_FAILED if summary.get("failed") or summary.get("baseline_ok") is False else 0
    if status:
        failed = summary.get("failed", 0)
        why = (f"{failed} of {summary.get('scenarios', 0)} scenarios failed" if failed
               else "the fault-free run fails")
        print(f"slotnet explore: {why}", file=sys.stderr)
    if args.json:
        print_json(report)
        return status
    print(format_explore(report))
    if shrunk is not None:
        v = shrunk["verdict"]
        texts = ", ".join(FaultSchedule.parse(file=args.shrink).to_list())
        if all(o.get("kind") == "detect" for o in shrunk["faults"]):
            texts += ("; " if texts else "") + "no fault: the run fails without faults"
        print(f"\nshrunk {shrunk['from']!r} in {shrunk['runs']} runs to {len(shrunk['faults'])} fault entries: {texts}")
        print(f"  fails: {'; '.join(v['reasons'])}")
        print(f"  written to {args.shrink}; replay: {shrunk['replay']}")
        if "run" in shrunk:
            print(f"  run: {shrunk['run']}")
    elif args.shrink:
        print("\nnothing to shrink: every scenario is ok (no file written)")
    return status


def replay_command(args: argparse.Namespace, spec: RunSpec) -> str:
    """The ``slotnet explore`` command that judges the shrunk faults file under the same run."""
    import shlex

    parts = ["slotnet", "explore", spec.scheme, "-t", spec.topology]
    for item in args.param:
        parts += ["--param", item]
    for k, v in spec.load.items():
        parts += [f"--{k}", f"{v:g}"]
    parts += ["--slots", str(spec.slots), "--warmup", str(spec.warmup), "--seed", str(spec.seed), "--rng", spec.rng]
    if args.max_backlog is not None:
        parts += ["--max-backlog", f"{args.max_backlog:g}"]
    return " ".join(shlex.quote(p) for p in [*parts, "--faults", args.shrink])
