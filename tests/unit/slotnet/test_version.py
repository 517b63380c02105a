"""slotnet/_version.py: the one place the command line, the HTML report and the results cache read the version."""

from __future__ import annotations

import importlib.metadata

import pytest

import slotnet
from slotnet._version import package_version, version


def test_version_is_the_distributions() -> None:
    """With slotnet installed, the version is the distribution's metadata."""
    assert version() == importlib.metadata.version("slotnet")


def test_version_falls_back_to_the_package_attribute(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a distribution, the version is ``slotnet.__version__``, else ``unknown``."""
    asked: list[str] = []

    def missing(name: str) -> str:
        asked.append(name)
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    monkeypatch.setattr(slotnet, "__version__", "9.9.9", raising=False)
    assert version() == "9.9.9" and asked == ["slotnet"]
    monkeypatch.delattr(slotnet, "__version__")
    assert version() == "unknown"


def test_package_version_reads_the_attribute_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache's version is ``slotnet.__version__`` as it is now, whatever the metadata says, else ``unknown``."""
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "dist")
    monkeypatch.setattr(slotnet, "__version__", "9.8.7", raising=False)
    assert package_version() == "9.8.7"
    monkeypatch.delattr(slotnet, "__version__")
    assert package_version() == "unknown"
