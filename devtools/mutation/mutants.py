"""List, apply and sample mutmut's mutants without its cache: for reading a module's
mutants while writing tests, and for measuring a kill rate over packages too large to
run whole (mutation sampling).

mutmut 2 is used as a library here: it makes the mutants (the same ones, in the same
order, as ``mutmut run``); this script only picks, applies and judges them. Each mutant
runs its module's selection (``run_tests.py``), exactly as under ``devtools/mutation.sh``:
killed when a test fails or hangs, survived when all pass.

Usage (from the repository root, in a checkout nothing else edits; pure-Python build,
``SLOTNET_PURE_PYTHON=1 pip install -e '.[test,mutation]'``, so a mutated compiled module
is really the one imported):

    python devtools/mutation/mutants.py list FILE                 # every mutant of FILE as a diff
    python devtools/mutation/mutants.py run FILE I [I ...]        # run mutants I of FILE (restores FILE)
    python devtools/mutation/mutants.py run FILE all --tests T.py # every mutant of FILE against T.py only
    python devtools/mutation/mutants.py sample --n 300 --seed 1 [--part 1/2] --out S.jsonl PATH [PATH ...]
    python devtools/mutation/mutants.py summary S.jsonl [...]     # kill rate, per package, survivors

``sample`` draws ``n`` mutants uniformly from every mutant of the ``.py`` files under the
PATHs (seeded: the same draw on every machine for the same source), runs them in the
draw's random order (so a run stopped early has still run a uniform sample) and appends
one JSON line per mutant to ``--out``; ``--part K/J`` runs the K-th of J interleaved
shares, so J checkouts can run one draw side by side. A rerun skips mutants already in
``--out``. ``summary`` prints the kill rate with its 95% Wilson interval, counting the
mutants marked equivalent in ``devtools/mutation/equivalent.txt`` (``FILE:LINE:INDEX  why``)
out of the denominator.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import run_tests  # this folder is the script's first import path
from mutmut import Context, list_mutations, mutate

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "devtools" / "mutation" / "run_tests.py"
EQUIVALENT = ROOT / "devtools" / "mutation" / "equivalent.txt"
#: the hang limit of one mutant's tests: run_tests.py's own, and a margin for its start
TIMEOUT_S = run_tests.TIMEOUT_S + 30


class Mutant(NamedTuple):
    """One mutant: the file, the 1-based line, and its index among the file's mutants."""

    path: str
    line: int
    index: int
    diff: str
    mutated: str  # the whole mutated source, what run_one writes

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}:{self.index}"


def mutants_of(path: str) -> list[Mutant]:
    """Every mutant mutmut makes of ``path`` (relative to the root), with its diff."""
    source = (ROOT / path).read_text()
    return [_diffed(path, i, source, mid) for i, mid in enumerate(list_mutations(Context(source=source, filename=path)))]


def mutant(path: str, index: int) -> Mutant:
    """Mutant ``index`` of ``path`` alone (one parse for the list, one for the mutant)."""
    source = (ROOT / path).read_text()
    mid = list_mutations(Context(source=source, filename=path))[index]
    return _diffed(path, index, source, mid)


def _diffed(path: str, index: int, source: str, mid: Any) -> Mutant:
    mutated, _ = mutate(Context(source=source, mutation_id=mid, filename=path))
    diff = "".join(difflib.unified_diff(source.splitlines(True), mutated.splitlines(True), n=1))
    diff = "\n".join(line for line in diff.splitlines() if not line.startswith(("---", "+++")))
    return Mutant(path, mid.line_number + 1, index, diff, mutated)


def run_one(m: Mutant, tests: list[str] | None = None) -> tuple[str, float]:
    """Apply mutant ``m``, run its module's selection (or ``tests``), restore the file.

    Returns ("killed" | "survived", seconds)."""
    file = ROOT / m.path
    original = file.read_text()
    began = time.monotonic()
    try:
        file.write_text(m.mutated)
        cmd = ([sys.executable, str(RUNNER), m.path] if not tests else
               [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "slow or not slow", *tests])
        try:  # run_tests.py has its own hang limit; the same one for --tests
            rc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                timeout=TIMEOUT_S).returncode
        except subprocess.TimeoutExpired:
            rc = 1  # a hang is a behaviour the tests noticed
    finally:
        file.write_text(original)
    return ("survived" if rc == 0 else "killed"), time.monotonic() - began


def population(paths: list[str]) -> list[tuple[str, int]]:
    """(file, index) of every mutant of every ``.py`` file under ``paths``, sorted."""
    files: list[str] = []
    for p in paths:
        target = ROOT / p
        found = sorted(target.rglob("*.py")) if target.is_dir() else [target]
        files += [str(f.relative_to(ROOT)) for f in found]
    out = []
    for f in sorted(set(files)):
        source = (ROOT / f).read_text()
        out += [(f, i) for i in range(len(list_mutations(Context(source=source, filename=f))))]
    return out


def _equivalent() -> dict[str, str]:
    if not EQUIVALENT.exists():
        return {}
    out = {}
    for line in EQUIVALENT.read_text().splitlines():
        key, _, why = line.partition(" ")
        if key and not key.startswith("#"):
            out[key] = why.strip()
    return out


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion k/n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def cmd_sample(args: argparse.Namespace) -> int:
    pop = population(args.paths)
    # in the draw's own (random) order: a run stopped early has run a uniform sample too
    draw = random.Random(args.seed).sample(pop, min(args.n, len(pop)))
    k, j = (int(x) for x in args.part.split("/"))
    mine = draw[k - 1::j]
    out = Path(args.out)
    done = set()
    if out.exists():
        done = {(r["path"], r["index"]) for r in map(json.loads, out.read_text().splitlines())}
    print(f"{len(pop)} mutants under {', '.join(args.paths)}; drew {len(draw)} (seed {args.seed}), "
          f"part {k}/{j}: {len(mine)}, {len(done)} already done", flush=True)
    for path, index in mine:
        if (path, index) in done:
            continue
        m = mutant(path, index)
        status, seconds = run_one(m)
        record: dict[str, Any] = {"path": path, "index": index, "line": m.line, "status": status,
                                  "seconds": round(seconds, 1), "diff": m.diff}
        with out.open("a") as f:
            f.write(json.dumps(record) + "\n")
        print(f"{status:8s} {seconds:6.1f} s  {m.key}", flush=True)
    return 0


def cmd_summary(args: argparse.Namespace) -> int:
    records = [json.loads(line) for f in args.files for line in Path(f).read_text().splitlines()]
    equivalent = _equivalent()
    by_pkg: dict[str, list[int]] = {}
    survivors = []
    for r in records:
        key = f"{r['path']}:{r['line']}:{r['index']}"
        pkg = r["path"].split("/")[0] + "/" + (r["path"].split("/")[1] if r["path"].count("/") > 1 else "")
        row = by_pkg.setdefault(pkg, [0, 0, 0])  # killed, survived (behaviour-changing), equivalent
        if key in equivalent:
            row[2] += 1
        elif r["status"] == "killed":
            row[0] += 1
        else:
            row[1] += 1
            survivors.append((key, r["diff"]))
    killed = sum(r[0] for r in by_pkg.values())
    changing = killed + sum(r[1] for r in by_pkg.values())
    lo, hi = wilson(killed, changing)
    print(f"{len(records)} mutants run, {len(records) - changing} equivalent; killed {killed} of {changing} "
          f"behaviour-changing = {killed / max(1, changing):.1%} (95% interval {lo:.1%} to {hi:.1%})")
    for pkg, (k, s, e) in sorted(by_pkg.items()):
        print(f"  {pkg:24s} killed {k:4d}  survived {s:3d}  equivalent {e:3d}")
    if args.survivors:
        for key, diff in survivors:
            print(f"\n{key}\n{diff}")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list", help="every mutant of FILE as a diff")
    p.add_argument("file")
    p = sub.add_parser("run", help="run mutants of FILE by index")
    p.add_argument("file")
    p.add_argument("index", nargs="+", help="mutant indices, or 'all'")
    p.add_argument("--tests", nargs="+", help="run these test files instead of the module's selection")
    p = sub.add_parser("sample", help="run a seeded uniform draw of mutants")
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--part", default="1/1")
    p.add_argument("--out", required=True)
    p.add_argument("paths", nargs="+")
    p = sub.add_parser("summary", help="kill rate of sample files")
    p.add_argument("--survivors", action="store_true", help="print each survivor's diff")
    p.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    if args.cmd == "list":
        for m in mutants_of(args.file):
            print(f"## {m.index}  {m.key}\n{m.diff}")
        return 0
    if args.cmd == "run":
        chosen = (mutants_of(args.file) if args.index == ["all"] else
                  [mutant(args.file, int(i)) for i in args.index])
        survived = 0
        for m in chosen:
            status, seconds = run_one(m, args.tests)
            survived += status == "survived"
            print(f"{status:8s} {seconds:6.1f} s  {m.key}", flush=True)
            if status == "survived":
                print(m.diff, flush=True)
        print(f"{len(chosen) - survived} of {len(chosen)} killed")
        return 0
    if args.cmd == "sample":
        return cmd_sample(args)
    return cmd_summary(args)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # restore the file on a plain kill too
    sys.exit(main(sys.argv[1:]))
