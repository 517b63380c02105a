"""Where a result or a trace came from: the command that reruns it, slotnet's version, the build, the commit.

:func:`run_command` writes the ``slotnet run`` command of a :class:`RunSpec` in one
canonical form (the same spec gives the same text, however it was typed): the scheme,
``-t`` topology, each ``--param``, the load, ``--slots`` (when given), ``--warmup``,
``--seed``, ``--rng`` (always: the seed and the generator together fix the draws), each
``--fault`` (the detection setting as ``detect=...``), ``--max-backlog``, ``--series`` and
``--shards``. A trace's options are left out (the command reruns the
run; add ``--trace FILE`` to trace it again), and so are a broker's address (it may hold
a password) and the event path (``observer``: results are the same on both).

:func:`provenance` adds what depends on the machine: the version, the build
(``compiled``, ``pure`` or ``mixed``: :func:`slotnet._build.build`) and the git commit of
the checkout slotnet runs from, when it runs from one (read from ``.git`` without running
git; absent for an installed copy).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._spec import RunSpec

__all__ = ["TRACE_FORMAT", "git_commit", "provenance", "run_command", "stamp", "trace_header"]

#: The trace format a header names (``slotnet_trace``); a reader refuses a later one.
TRACE_FORMAT = 1


def _number(v: Any) -> str:
    f = float(v)
    return f"{f:g}" if f.is_integer() else repr(f)


def run_command(spec: RunSpec, *, shards: bool = True) -> str:
    """The ``slotnet run`` command that reruns ``spec`` (see the module docstring); ``shards``
    False leaves ``--shards`` out (a trace is the same over any number of shards, so its
    header does).

    Example:
        >>> from slotnet import RunSpec
        >>> run_command(RunSpec("deflection", "hypercube:4", load={"lam": 1.0}, slots=30, seed=1, faults=["loss=0.3"]))
        'slotnet run deflection -t hypercube:4 --lam 1 --slots 30 --warmup 0 --seed 1 --rng philox --fault loss=0.3'
    """
    parts = ["slotnet", "run", spec.scheme, "-t", spec.topology]
    for k, v in spec.params.items():
        text = ("true" if v else "false") if isinstance(v, bool) else str(v)
        parts += ["--param", f"{k}={text}"]
    for k, v in spec.load.items():
        parts += [f"--{k.replace('_', '-')}", _number(v)]
    if spec.slots is not None:
        parts += ["--slots", str(spec.slots)]
    parts += ["--warmup", str(spec.warmup), "--seed", str(spec.seed), "--rng", spec.rng]
    for f in spec.faults.to_list():
        parts += ["--fault", f]
    if spec.max_backlog_per_node is not None:
        parts += ["--max-backlog", _number(spec.max_backlog_per_node)]
    if spec.series:
        parts.append("--series")
    if shards and spec.shards != 1:
        parts += ["--shards", str(spec.shards)]
    return " ".join(shlex.quote(p) for p in parts)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _is_sha(text: str | None) -> bool:
    return text is not None and len(text) == 40 and all(c in "0123456789abcdef" for c in text)


def git_commit(root: str | Path | None = None) -> str | None:
    """The commit checked out in the git work tree at ``root`` (default: the one slotnet's
    sources sit in), read from ``.git`` (a directory, or a worktree's ``gitdir:`` file);
    None outside a checkout or where it cannot be read."""
    if root is None:
        import slotnet

        root = Path(slotnet.__file__).resolve().parent.parent
    dot = Path(root) / ".git"
    if dot.is_file():  # a worktree or submodule: "gitdir: PATH"
        text = _read(dot) or ""
        if not text.startswith("gitdir:"):
            return None
        gitdir = (dot.parent / text.split(":", 1)[1].strip()).resolve()
    elif dot.is_dir():
        gitdir = dot
    else:
        return None
    head = _read(gitdir / "HEAD")
    if head is None:
        return None
    if _is_sha(head):  # detached
        return head
    if not head.startswith("ref:"):
        return None
    ref = head.split(":", 1)[1].strip()
    common = gitdir
    link = _read(gitdir / "commondir")  # a worktree keeps its branches in the main repository
    if link:
        common = (gitdir / link).resolve()
    for base in (gitdir, common):
        sha = _read(base / ref)
        if _is_sha(sha):
            return sha
    packed = _read(common / "packed-refs") or ""
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name == ref and _is_sha(sha):
            return sha
    return None


def provenance(spec: RunSpec) -> dict[str, Any]:
    """A run's: ``{"slotnet": version, "build": ..., "commit": sha (only in a checkout), "command": ...}``."""
    return stamp(run_command(spec))


def stamp(command: str) -> dict[str, Any]:
    """The provenance of any result the command ``command`` reproduces (a run, a ``repro``)."""
    from slotnet._build import build
    from slotnet._version import version

    out: dict[str, Any] = {"slotnet": version(), "build": build()}
    commit = git_commit()
    if commit is not None:
        out["commit"] = commit
    out["command"] = command
    return out


def trace_header(spec: RunSpec) -> dict[str, Any]:
    """The first line of a trace: which run wrote it (machine-independent, so a trace's bytes
    and fingerprint stay the same on every machine and build).

    Example:
        >>> from slotnet import RunSpec
        >>> h = trace_header(RunSpec("bcast-simple", "hypercube:3", load={"rho": 0.15}, slots=40, seed=2))
        >>> h["scheme"], h["topology"], h["seed"], h["rng"]
        ('bcast-simple', 'hypercube:3', 2, 'philox')
        >>> h["command"]
        'slotnet run bcast-simple -t hypercube:3 --rho 0.15 --slots 40 --warmup 0 --seed 2 --rng philox'
    """
    from slotnet._version import version

    return {"slotnet_trace": TRACE_FORMAT, "slotnet": version(), "scheme": spec.scheme, "topology": spec.topology,
            "seed": spec.seed, "rng": spec.rng, "command": run_command(spec, shards=False)}
