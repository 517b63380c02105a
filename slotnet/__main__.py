"""``python -m slotnet`` is the ``slotnet`` command."""

from slotnet.orchestrator.cli import main

raise SystemExit(main())
