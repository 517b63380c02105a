"""The README's "Writing a scheme" example runs as printed."""

from __future__ import annotations

import re
from pathlib import Path

from slotnet.schemes import SCHEMES

README = Path(__file__).resolve().parents[1] / "README.md"


def test_writing_a_scheme_example_runs(monkeypatch):
    """The complete example of the README registers, runs to quiescence and meets its own asserts."""
    text = README.read_text()
    section = text[text.index("## Writing a scheme"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    monkeypatch.delitem(SCHEMES, "flood", raising=False)
    namespace: dict[str, object] = {}
    try:
        exec(compile(code.group(1), "README.md", "exec"), namespace)
        assert namespace["result"].metrics["reached"] == 15
    finally:
        SCHEMES.pop("flood", None)
