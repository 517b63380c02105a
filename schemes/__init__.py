"""Schemes: one package per paper, each its node rules beside the paper's analysis.

The registry (``SCHEMES``, ``EXPERIMENTS``) finds scheme packages without central
edits; the kit (:mod:`slotnet.schemes.kit`) holds what several papers share.
"""

from __future__ import annotations

from ._base import (
    ANY_TOPOLOGY,
    CLAIM_KINDS,
    Claim,
    Column,
    Experiment,
    Load,
    Param,
    Reporter,
    Row,
    Runner,
    Scheme,
    SchemeError,
    Setup,
    parse_bool,
    relative,
)
from ._registry import EXPERIMENTS, SCHEMES, get_experiment, get_scheme, register

__all__ = [
    "ANY_TOPOLOGY",
    "CLAIM_KINDS",
    "EXPERIMENTS",
    "SCHEMES",
    "Claim",
    "Column",
    "Experiment",
    "Load",
    "Param",
    "Reporter",
    "Row",
    "Runner",
    "Scheme",
    "SchemeError",
    "Setup",
    "get_experiment",
    "get_scheme",
    "parse_bool",
    "register",
    "relative",
]
