"""Tools built on the orchestrator: the results cache of ``slotnet repro`` and its HTML report."""
