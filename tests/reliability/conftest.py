"""Reliability suite: print the measured figures at the end of the run (docs/reliability.md)."""

from __future__ import annotations

import json
from typing import Any

from reliability_figures import FIGURES, TIMINGS
from scratch import SCRATCH

# outside the checkout (the tests write nothing into it); the section names the file
_OUT = SCRATCH / "reliability_figures.json"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not FIGURES and not TIMINGS:
        return
    terminalreporter.section("reliability figures")
    for name, value in sorted(FIGURES.items()):
        terminalreporter.write_line(f"{name}: {value}")
    for name, seconds in sorted(TIMINGS.items()):
        terminalreporter.write_line(f"{name}: {seconds}")
    terminalreporter.write_line(f"(written to {_OUT})")
    _OUT.parent.mkdir(parents=True, exist_ok=True)
    _OUT.write_text(json.dumps({"figures": FIGURES, "timings": TIMINGS}, indent=2) + "\n")
