"""What the commands share: the parser class, argument conversions, JSON output, the output error."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any, NoReturn

from slotnet.errors import SlotnetError
from slotnet.schemes import SCHEMES, Load

from ..engine._result import json_ready
from ..engine._spec import SpecError

__all__ = ["OutputError", "Parser", "broker_arg", "int_set", "load_args", "load_flags", "params", "print_json", "slot_window"]


class Parser(argparse.ArgumentParser):
    """argparse that reports bad input on one line and exits with status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


class OutputError(SlotnetError):
    """An output could not be written after the results were computed (exit status 1)."""


def slot_window(text: str, flag: str) -> tuple[int, int]:
    """``A:B`` (either side may be left out) as ``[A, B)``."""
    a, sep, b = text.partition(":")
    try:
        window = (int(a) if a.strip() else 0, int(b) if b.strip() else 1 << 62)
    except ValueError:
        raise SpecError(f"{flag} must look like A:B with integer slots, got {text!r}") from None
    if not sep or window[0] < 0 or window[0] >= window[1]:
        raise SpecError(f"{flag} must look like A:B with 0 <= A < B, got {text!r}")
    return window


def load_flags() -> dict[str, list[tuple[str, Load]]]:
    """Every load flag some scheme declares, with each scheme's meaning of it."""
    flags: dict[str, list[tuple[str, Load]]] = {}
    for name in sorted(SCHEMES):
        for load in SCHEMES[name].loads:
            flags.setdefault(load.name, []).append((name, load))
    return flags


def params(items: Sequence[str]) -> dict[str, str]:
    """``--param K=V`` items as a dict (each name once)."""
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise SpecError(f"--param {item!r} must look like NAME=VALUE")
        if key in out:
            raise SpecError(f"--param {key} given twice ({key}={out[key]} and {key}={value.strip()}): give it once")
        out[key] = value.strip()
    return out


def load_args(args: argparse.Namespace) -> dict[str, float]:
    """The load flags given on the command line, by name."""
    return {k: getattr(args, k) for k in load_flags() if getattr(args, k, None) is not None}


def int_set(text: str | None, what: str) -> frozenset[int] | None:
    """``A,B,...`` as a set of integers (None: the flag was not given)."""
    if text is None:
        return None
    try:
        return frozenset(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise SpecError(f"{what} must be comma-separated integers, got {text!r}") from None


def print_json(obj: Any) -> None:
    """One JSON object on stdout: non-finite numbers as null, listed under ``non_finite`` (``json_ready``)."""
    print(json.dumps(json_ready(obj), allow_nan=False))


def broker_arg(args: argparse.Namespace) -> str | None:
    """``--broker`` with the TLS files of ``--broker-ca``/``--broker-cert``/``--broker-key`` in its query.

    Raises:
        SpecError: a TLS file given without ``--broker``.
    """
    files = (args.broker_ca, args.broker_cert, args.broker_key)
    if args.broker is None:
        if any(files):
            raise SpecError("--broker-ca/--broker-cert/--broker-key need --broker mqtts://USER@HOST:PORT")
        return None
    from ..shard._broker import parse_broker, with_tls_files

    url = with_tls_files(args.broker, *files)
    parse_broker(url)  # every mistake in it, before any process starts
    return url
