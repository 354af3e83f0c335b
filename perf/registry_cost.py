"""Registry cost: what memevals' Inspect entry point adds to every `inspect` command.

Inspect loads every installed `inspect_ai` entry point when a command starts, whatever its
task. This script measures, in one run, in fresh interpreters:

  1. the import cost: `import inspect_ai`, then what importing memevals.inspect_tasks.registry
     (the entry point) adds, with the modules it loads (goal: at most 0.2 s, and no numpy,
     scipy, torch, benchmark or memory system); for scale, what importing every memevals task
     module then adds (what the entry point used to import);
  2. the foreign-task ratio: the real `inspect eval` of a tiny task that is not memevals' (two
     samples, `mockllm`, no display) with memevals' entry point, against the same command with
     it hidden (goal: 1.0 within noise). Hidden: a stub package first on PYTHONPATH makes
     `memevals.inspect_tasks.registry` an empty module, so Inspect loads an entry point that
     registers nothing.

`--repeat N` (default 5) runs N rounds; each figure is the median. The two runs of a round come
in alternating order, so a change in the machine's load touches both alike; on a shared machine
the CPU-time ratio (the child's user + system time) is the steadier figure.

    python perf/registry_cost.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HEAVY = ("numpy", "scipy", "torch", "memevals.benchmarks", "memevals.memory_systems")

#: Run in a fresh interpreter: seconds of each import and the modules the entry point adds.
_IMPORTS = """
import json, sys, time
t0 = time.perf_counter()
import inspect_ai
t1 = time.perf_counter()
before = set(sys.modules)
import memevals.inspect_tasks.registry
t2 = time.perf_counter()
added = sorted(set(sys.modules) - before)
from memevals.inspect_tasks.manifest import import_all
import_all()
t3 = time.perf_counter()
print(json.dumps({"inspect_ai": t1 - t0, "registry": t2 - t1, "all_modules": t3 - t2,
                  "added": added, "after_all": len(sys.modules) - len(before)}))
"""

_FOREIGN_TASK = '''
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate


@task
def foreign() -> Task:
    samples = [Sample(input="Say 1", target="1"), Sample(input="Say 2", target="2")]
    return Task(dataset=samples, solver=generate(), scorer=match())
'''


@dataclass
class Run:
    wall: float
    cpu: float


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> Run:
    """Wall and CPU seconds of one child process (which must succeed)."""
    cpu0, t0 = _child_cpu(), time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall, cpu = time.perf_counter() - t0, _child_cpu() - cpu0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return Run(wall, cpu)


def stub_package(root: Path) -> Path:
    """A folder whose `memevals.inspect_tasks.registry` is an empty module (the entry point
    hidden: Inspect finds it first on PYTHONPATH and loads nothing of memevals)."""
    package = root / "stub" / "memevals" / "inspect_tasks"
    package.mkdir(parents=True)
    for path in (package.parent / "__init__.py", package / "__init__.py", package / "registry.py"):
        path.write_text('"""Stand-in of memevals for perf/registry_cost.py."""\n', "utf-8")
    return root / "stub"


def import_costs(repeat: int, cwd: Path) -> list[dict[str, object]]:
    """The import figures of `repeat` fresh interpreters."""
    rows = []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", _IMPORTS], cwd=cwd, capture_output=True, text=True, check=True
        )
        rows.append(json.loads(done.stdout.splitlines()[-1]))
    return rows


def foreign_runs(repeat: int, root: Path) -> list[tuple[Run, Run]]:
    """(with memevals' entry point, hidden) runs of the foreign task, `repeat` rounds."""
    (root / "foreign.py").write_text(_FOREIGN_TASK, encoding="utf-8")
    inspect_cli = str(Path(sys.executable).with_name("inspect"))
    stub = stub_package(root)
    with_env = dict(os.environ)
    path = [str(stub), *filter(None, [os.environ.get("PYTHONPATH")])]
    hidden_env = {**with_env, "PYTHONPATH": os.pathsep.join(path)}
    rounds = []
    for k in range(repeat + 1):  # the first round warms the disk caches and is dropped
        cmd = [inspect_cli, "eval", "foreign.py", "--model", "mockllm/model", "--display",
               "none", "--log-dir", str(root / "logs" / str(k))]  # fmt: skip
        if k % 2:
            hidden = timed(cmd, root, hidden_env)
            with_ = timed(cmd, root, with_env)
        else:
            with_ = timed(cmd, root, with_env)
            hidden = timed(cmd, root, hidden_env)
        if k:
            rounds.append((with_, hidden))
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser(description="what memevals' Inspect entry point costs")
    parser.add_argument("--repeat", type=int, default=5, help="rounds (medians are reported)")
    ns = parser.parse_args()
    if ns.repeat < 1:
        parser.error("--repeat must be at least 1")
    with tempfile.TemporaryDirectory(prefix="memevals-registry-cost-") as tmp:
        root = Path(tmp)
        imports = import_costs(ns.repeat, root)
        rounds = foreign_runs(ns.repeat, root)

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {sys.version.split()[0]}")
    med = {k: statistics.median(float(r[k]) for r in imports)  # type: ignore[arg-type]
           for k in ("inspect_ai", "registry", "all_modules")}  # fmt: skip
    added = [str(m) for m in imports[0]["added"]]  # type: ignore[attr-defined]
    heavy = [m for m in added if m.startswith(HEAVY)]
    print(f"import inspect_ai: {med['inspect_ai']:.3f} s (median of {ns.repeat})")
    print(f"+ memevals.inspect_tasks.registry: {med['registry']:.3f} s, {len(added)} modules "
          f"({', '.join(added)}); heavy: {', '.join(heavy) or 'none'}")
    print(f"+ every memevals task module (the old entry point): {med['all_modules']:.3f} s, "
          f"{imports[0]['after_all']} modules")
    print(f"{'foreign task, round':<22}{'with s':>9}{'hidden s':>10}{'wall x':>8}"
          f"{'with cpu':>10}{'hidden cpu':>12}{'cpu x':>7}")
    for i, (w, h) in enumerate(rounds, start=1):
        print(f"{i:<22}{w.wall:>9.2f}{h.wall:>10.2f}{w.wall / h.wall:>8.3f}"
              f"{w.cpu:>10.2f}{h.cpu:>12.2f}{w.cpu / h.cpu:>7.3f}")
    wall = statistics.median(w.wall / h.wall for w, h in rounds)
    cpu = statistics.median(w.cpu / h.cpu for w, h in rounds)
    print(f"foreign-task ratio (with / hidden), median of {len(rounds)}: wall {wall:.3f}, "
          f"cpu {cpu:.3f}")


if __name__ == "__main__":
    main()
