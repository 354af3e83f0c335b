"""The registry manifest the entry point reads (memevals/inspect_tasks/registry_manifest.py) is
the one `python -m memevals.inspect_tasks.manifest` writes from the real modules, and lists
every object they register: a new option, task, scorer, metric or solver fails here until the
manifest is rewritten."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memevals.inspect_tasks.manifest import MANIFEST_FILE
from memevals.inspect_tasks.registry_manifest import ENTRIES

# In a fresh interpreter outside the checkout (installed names; none of the objects a test
# registers): the manifest as the modules make it now, and every memevals object they register.
_CHECK = """
import json
from inspect_ai._util.registry import registry_find, registry_info
from memevals.inspect_tasks import manifest
text = manifest.render(manifest.collect())
found = registry_find(lambda i: i.type in ("task", "scorer", "metric", "solver"))
names = sorted(
    f"{registry_info(o).type}:{registry_info(o).name}" for o in found
    if registry_info(o).name.startswith("memevals/")
)
print(json.dumps({"text": text, "registered": names}))
"""


def test_the_manifest_is_the_one_the_modules_make(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHECK],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["text"] == MANIFEST_FILE.read_text(encoding="utf-8"), (
        f"{MANIFEST_FILE} is out of date: run `python -m memevals.inspect_tasks.manifest`"
    )
    listed = sorted(f"{e['type']}:memevals/{e['name']}" for e in ENTRIES)
    assert listed == result["registered"]

