"""The suite's folder outside the checkout for what outlives one test (imported by name: keep
this module name unique).

A test writes into its own `tmp_path`; what is worth keeping from one pytest run to the next
(the SmolLM2 folder converted from its wheel, the report's screenshots, the reliability
figures) goes here, in the system's temporary folder, never into the checkout
(scripts/test.sh fails a run that changed the checkout).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["SCRATCH"]

#: One folder per user: two users' runs on one machine do not share (or lock) it.
SCRATCH = Path(tempfile.gettempdir()) / f"memevals-tests-{os.getuid()}"
