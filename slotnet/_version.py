"""slotnet's version, looked up in one place (the command line, the HTML report and the results cache ask here)."""

from __future__ import annotations

__all__ = ["package_version", "version"]


def version() -> str:
    """The installed distribution's version; else the package's own ``slotnet.__version__``; else ``unknown``."""
    try:
        from importlib.metadata import version as dist_version

        return dist_version("slotnet")
    except Exception:  # not installed as a distribution: the package's own
        return package_version()


def package_version() -> str:
    """``slotnet.__version__`` (read at each call), else ``unknown``: what the results cache keys on."""
    import slotnet

    return str(getattr(slotnet, "__version__", "unknown"))
