"""Reading the code blocks of README.md and docs/ for the documentation tests.

A fenced block is a ``python`` block (Python to execute), a ``bash``/``console``/plain
block (shell lines: a ``slotnet ...`` line is a command line of the CLI; in a ``console``
block only the lines after a ``$`` prompt are commands, the others their output), or
anything else (``text``, ``json``: not code). A block right after an HTML comment
``<!-- run -->`` is meant to be run as it stands (and a ``console`` block's printed
output to be what the command prints, but for lines elided with ``...``); each command
exits 0 unless its line says otherwise in a comment ``# exit status N ...``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
_RUN = re.compile(r"<!--\s*run\s*-->\s*$")
_STATUS = re.compile(r"#\s*exit status (\d+)")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str
    line: int
    lang: str
    body: str
    marked_run: bool
    section: str

    def commands(self) -> list[list[str]]:
        """The ``slotnet`` command lines of a shell block, each as argv (``slotnet`` left out).

        Continuation lines (``\\``) are joined, ``#`` comments dropped, and a line of
        several commands (``a && b``, ``a; b``) split.
        """
        return [argv for argv, _ in self.commands_with_status()]

    def commands_with_status(self) -> list[tuple[list[str], int]]:
        """:meth:`commands`, each with the exit status it is documented to end with: 0, or
        ``N`` where its line ends with a comment ``# exit status N...`` (a run whose verdict fails)."""
        if self.lang not in ("", "bash", "sh", "shell", "console"):
            return []
        text = re.sub(r"\\\n\s*", " ", self.body)
        out = []
        for raw in text.splitlines():
            said = _STATUS.search(raw)
            status = int(said.group(1)) if said else 0
            line = raw.strip()
            if self.lang == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            words = shlex.split(line, comments=True)
            command: list[str] = []
            for word in [*words, "&&"]:
                if word in ("&&", ";", "||"):
                    if command and command[0] == "slotnet":
                        out.append((command[1:], status))
                    command = []
                else:
                    command.append(word)
        return out


    def transcript(self) -> list[tuple[list[str], list[str]]]:
        """A ``console`` block's ``slotnet`` commands, each with the output lines printed under it."""
        if self.lang != "console":
            return []
        out: list[tuple[list[str], list[str]]] = []
        for line in self.body.splitlines():
            if line.startswith("$ "):
                words = shlex.split(line[2:], comments=True)
                out.append((words[1:] if words[:1] == ["slotnet"] else [], []))
            elif out:
                out[-1][1].append(line.rstrip())
        return [(argv, lines) for argv, lines in out if argv]


def blocks(path: Path) -> list[Block]:
    """Every fenced block of the Markdown file ``path``, in order."""
    text = path.read_text(encoding="utf-8")
    page = path.relative_to(ROOT).as_posix()
    out = []
    for m in _FENCE.finditer(text):
        before = text[: m.start()]
        headings = re.findall(r"^#{1,6} (.+)$", before, re.M)
        body = "\n".join(line[len(m.group("indent")):] for line in m.group("body").splitlines()) + "\n"
        out.append(Block(page, before.count("\n") + 1, m.group("info").strip().split(" ")[0], body,
                         bool(_RUN.search(before.rstrip("\n").rsplit("\n", 1)[-1])) if before.strip() else False,
                         headings[-1] if headings else ""))
    return out


def pages() -> list[Path]:
    """README.md and every Markdown page of docs/ (the generated reference pages included)."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
