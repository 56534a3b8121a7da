"""The README's tour runs as written, and its set-up block is the two commands CI relies on."""

from __future__ import annotations

import re
from pathlib import Path

README = (Path(__file__).parent.parent / "README.md").read_text()


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README, flags=re.DOTALL | re.MULTILINE)


def test_setup_block_has_exactly_two_commands():
    commands = [line for line in _blocks("bash")[0].splitlines() if line.strip()]
    assert len(commands) == 2, commands
    assert commands[0].endswith("python -m ember.demo")
    assert "pytest" in commands[1]


def test_tour_runs():
    tour = _blocks("python")[0]
    exec(compile(tour, "README.md", "exec"), {})
