"""The one error hierarchy of slotnet, importable by every layer.

Every error slotnet raises on purpose derives from :class:`SlotnetError`. Errors that
mean "bad input" also derive from :class:`ValueError`; the CLI maps those to exit
status 2 and the rest (a scheme breaking the slot model, a node failing) to 1.

This module imports nothing from slotnet, so the fabric, the node runtime, the schemes
and the orchestrator can all raise and catch the same classes.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import traceback
from types import TracebackType

__all__ = [
    "CapacityError",
    "FabricError",
    "FaultSpecError",
    "ForeignAwait",
    "NodeFailure",
    "NodeTimeout",
    "SchemeError",
    "SlotnetError",
    "SpecError",
    "Stopped",
    "TopologyError",
]


class SlotnetError(Exception):
    """Base of every error slotnet raises on purpose (bad input or a broken rule).

    Every subclass pickles whole, whatever its ``__init__`` takes, so an error raised in a
    worker process (``--seeds``, ``sweep``, ``repro``, ``explore``) reaches the caller as itself.
    """

    def __reduce__(self) -> tuple[object, ...]:
        return _restore, (type(self), self.args, dict(self.__dict__))


def _restore(cls: type[SlotnetError], args: tuple[object, ...], state: dict[str, object]) -> SlotnetError:
    exc = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class TopologyError(SlotnetError, ValueError):
    """A topology spec or a topology query is invalid."""


class FaultSpecError(SlotnetError, ValueError):
    """A fault schedule entry is malformed or names a link/node that does not exist."""


class SpecError(SlotnetError, ValueError):
    """A run spec is invalid; the message names the field and the value."""


class SchemeError(SlotnetError, ValueError):
    """A scheme parameter or load is invalid for this scheme and topology."""


class FabricError(SlotnetError):
    """A node used the fabric in a way the slot model forbids (or a frame failed to decode)."""


class CapacityError(FabricError):
    """A node sent more than its link can carry in one slot."""

    def __init__(self, node: int, port: int, slot: int, load: float) -> None:
        super().__init__(f"node {node} oversent port {port} in slot {slot}: {load:g} units > capacity 1")
        self.node, self.port, self.slot, self.load = node, port, slot, load


class NodeFailure(SlotnetError):
    """A node's rule raised (in its constructor or its run); names the node, the slot, and
    where in the rule's code: the innermost frame outside slotnet (and outside Trio and the
    standard library), as ``(at FILE:LINE in FUNCTION)``.

    Attributes:
        node, slot: where the run failed.
        where: ``(file, line, function)`` of that frame, or None where there is none.
        traceback: the whole traceback of the rule's exception, as text.
        error: the rule's exception itself.
    """

    def __init__(self, node: int, slot: int, exc: BaseException) -> None:
        self.where = user_frame(exc.__traceback__)
        at = ""
        if self.where is not None:
            file, line, func = self.where
            at = f" (at {file}:{line} in {func})"
        text = str(exc).splitlines()[0] if str(exc) else ""
        super().__init__(f"node {node} failed in slot {slot}: {type(exc).__name__}: {text}{at}")
        self.node, self.slot, self.error = node, slot, exc
        self.traceback = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))

    def to_dict(self) -> dict[str, object]:
        """The ``error`` object of ``slotnet run --json`` for this failure."""
        file, line, func = self.where if self.where is not None else (None, None, None)
        return {"kind": "node_failure", "message": str(self), "node": self.node, "slot": self.slot,
                "exception": type(self.error).__name__, "file": file, "line": line, "function": func,
                "traceback": self.traceback}


class _HeldNode(SlotnetError):
    """A node held the slot loop up: the shared shape of :class:`NodeTimeout` and
    :class:`ForeignAwait`, which differ only in their ``kind``.

    Attributes:
        kind: the ``error.kind`` of ``slotnet run --json`` for this failure.
        node, slot: where the run failed (``node`` None where no one node is to blame).
        traceback: empty (the node's rule raised nothing); kept for the ``--json`` shape.
    """

    kind: str = ""

    def __init__(self, node: int | None, slot: int, message: str) -> None:
        super().__init__(message)
        self.node, self.slot = node, slot
        self.traceback = ""

    def to_dict(self) -> dict[str, object]:
        """The ``error`` object of ``slotnet run --json`` for this failure."""
        return {"kind": self.kind, "message": str(self), "node": self.node, "slot": self.slot,
                "traceback": self.traceback}


class NodeTimeout(_HeldNode):
    """A node held the run past its wall-clock limit (``--node-timeout``): it looped without
    awaiting its context, or awaited something other than ``ctx.next_slot()`` / ``ctx.idle()``.

    ``to_dict()`` gives the ``error`` object of ``slotnet run --json`` (``kind``: ``"node_timeout"``,
    ``message``, ``node``, ``slot``, ``traceback``)."""

    kind = "node_timeout"


class ForeignAwait(_HeldNode):
    """A node awaited something other than its context's slot primitives (``trio.sleep``, an
    event): refused at the slot barrier as soon as nothing else can run.

    ``to_dict()`` gives the ``error`` object of ``slotnet run --json`` (``kind``: ``"foreign_await"``,
    ``message``, ``node``, ``slot``, ``traceback``)."""

    kind = "foreign_await"


def _library_dirs() -> tuple[str, ...]:
    """Folders whose code is not a scheme's rule: slotnet's machinery, Trio, outcome, the stdlib."""
    dirs = []
    for name in ("slotnet", "slotnet.nodes", "slotnet.fabric", "slotnet.orchestrator", "slotnet.schemes.kit", "trio",
                 "outcome"):
        mod = sys.modules.get(name)
        file = getattr(mod, "__file__", None)
        if file:
            dirs.append(os.path.dirname(os.path.abspath(file)) + os.sep)
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.append(os.path.abspath(path) + os.sep)
    return tuple(dirs)


def user_frame(tb: TracebackType | None) -> tuple[str, int, str] | None:
    """``(file, line, function)`` of the innermost frame of ``tb`` in a scheme's own code
    (outside slotnet's machinery, Trio and the standard library); the innermost frame of
    all where every frame is one of those (a built-in scheme's rule); None without frames."""
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        frames.append((code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    found = user_frame_of(frames)
    return None if found is None else (found[0], found[1], found[2])


def user_frame_of(frames: list[tuple[str, int, str]]) -> tuple[str, int, str] | None:
    """Of ``(file, line, function)`` frames, outermost first: the innermost in a scheme's own
    code, else the innermost; its file shown relative to the working directory. None: no frames."""
    library = _library_dirs()
    found = None
    for frame in frames:
        if not os.path.abspath(frame[0]).startswith(library):
            found = frame
    found = found or (frames[-1] if frames else None)
    return None if found is None else (_shown(found[0]), found[1], found[2])


def _shown(file: str) -> str:
    """``file`` relative to the working directory where it lies below it."""
    try:
        rel = os.path.relpath(file)
    except ValueError:  # another drive (Windows)
        return file
    return file if rel.startswith("..") else rel


class Stopped(SlotnetError):
    """A run was stopped from outside by a signal (SIGTERM) after stopping what it started."""

    def __init__(self, signum: int, what: str) -> None:
        import signal

        super().__init__(f"stopped by {signal.Signals(signum).name}: {what}")
        self.signum = signum
