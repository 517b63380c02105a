"""Schemes: one package per paper, each its node rules beside the paper's analysis.

The registry (``SCHEMES``, ``EXPERIMENTS``) finds scheme packages without central
edits; the kit (:mod:`slotnet.schemes.kit`) holds what several papers share.
"""

from __future__ import annotations

from ._base import (
    ANY_TOPOLOGY,
    CLAIM_KINDS,
    HOP_EVENT,
    Claim,
    Column,
    Inputs,
    Load,
    PacketBook,
    Param,
    Reporter,
    Scheme,
    SchemeError,
    Setup,
    ShardMerging,
    parse_bool,
)
from ._registry import EXPERIMENTS, SCHEMES, get_experiment, get_scheme, register
from ._repro import Experiment, Row, Runner, relative

__all__ = [
    "ANY_TOPOLOGY",
    "CLAIM_KINDS",
    "EXPERIMENTS",
    "HOP_EVENT",
    "SCHEMES",
    "Claim",
    "Column",
    "Experiment",
    "Inputs",
    "Load",
    "PacketBook",
    "Param",
    "Reporter",
    "Row",
    "Runner",
    "Scheme",
    "SchemeError",
    "Setup",
    "ShardMerging",
    "get_experiment",
    "get_scheme",
    "parse_bool",
    "register",
    "relative",
]
