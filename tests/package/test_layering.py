"""The import rules of the layout (issue 15), checked on the AST of every module under memevals/.

Every import counts, also one inside a function or under TYPE_CHECKING, and a constant
`importlib.import_module("...")`. The layers, lowest first:

    core            imports nothing of memevals outside core
    benchmarks      core and benchmarks; inside a folder one way: porter -> data -> scoring
                    -> stitch -> memory -> prompts -> samples (a module imports only the ones
                    before it); another benchmark's modules only if that one is `locomo` (the
                    base), and then no later module than its own, or if it is that benchmark's
                    `official_judge` (its upstream grader, which another benchmark may grade
                    with: LoCoMo grades with LoCoMo-Plus's), which imports no other benchmark
    scorers         re-exports of core and benchmarks (the users' plain-function API)
    inspect_tasks   core, benchmarks, itself; lm_eval_tasks the same (frameworks import the
                    defining module, not the scorers facade, and never each other)
    memory_systems  core and itself (the built-in memory systems, loaded by entry point)
    results         the analysis library of runs (reading them, rows, paired comparisons,
                    memory and cost figures, number formatting): core, benchmarks, results, and
                    inspect_tasks (a cost estimate builds the task as `inspect eval` does)
    render          the renderers of results (Markdown, CSV, JSON, charts): core, results,
                    render; no renderer reads a command line
    tools           the commands: anything; nothing but tools imports tools (so commands ->
                    renderers -> library -> core, never back), and no module imports a
                    command (a console script's module) but the command itself

No framework (inspect_ai, lm_eval, datasets) below the framework layers, and neither framework
layer imports the other's framework. No `_private` name is imported from another module, and
Inspect internals (`inspect_ai._...`) are used only in memevals/inspect_tasks/inspect_internals.py,
each inside a try/except ImportError.

`core`, `results`, `render` and `tools` name no benchmark: no string constant, identifier (a
name, attribute, function, class, argument or keyword) or import of theirs contains a
benchmark's name (a folder of memevals/benchmarks/ or a record's name, as a whole word: `locomo`
in `locomo_f1` or `memevals.inspect_tasks.locomo`, not in `locomotive`). What they need of a
benchmark comes from its record. Docstrings and comments may still mention benchmarks as
examples (they are documentation, not behaviour). And the module-level imports of memevals form
no cycle (imports inside functions and under TYPE_CHECKING run later, or never, so they are left
out; importing a module counts as importing its parent packages too).

The checker is itself run on a small tree that breaks every rule once
(`test_the_checker_finds_every_kind_of_violation`), so it cannot pass by finding nothing.
"""

from __future__ import annotations

import ast
import graphlib
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "memevals"

FRAMEWORKS = ("inspect_ai", "lm_eval", "datasets")
#: The framework libraries each framework layer must not import (the other framework's).
FOREIGN_FRAMEWORKS = {"inspect_tasks": ("lm_eval", "datasets"), "lm_eval_tasks": ("inspect_ai",)}
#: Which memevals layers each layer may import (tools: any).
ALLOWED_LAYERS = {
    "root": frozenset(),
    "core": frozenset({"core"}),
    "benchmarks": frozenset({"core", "benchmarks"}),
    "scorers": frozenset({"core", "benchmarks"}),
    "inspect_tasks": frozenset({"core", "benchmarks", "inspect_tasks"}),
    "lm_eval_tasks": frozenset({"core", "benchmarks", "lm_eval_tasks"}),
    "memory_systems": frozenset({"core", "memory_systems"}),
    "results": frozenset({"core", "benchmarks", "inspect_tasks", "results"}),
    "render": frozenset({"core", "results", "render"}),
}
#: Order of the modules of a benchmark folder that every benchmark may have (the contract kinds
#: and those another benchmark may build on): a module imports only modules ranked lower.
#: `scoring` (the benchmark's scoring rules) needs only the data; anything after it may use it.
#: Any other module (BEAM's rubric judge, for example) is its benchmark's own helper: it may
#: import and be imported by its benchmark's modules in any order without a circle, and no
#: other benchmark may import it, so a new benchmark adds its helpers without touching this list.
BENCHMARK_RANK = {
    "porter": 0.0,
    "data": 1.0,
    "audit": 1.2,  # corrections to the data (locomo-audit)
    "scoring": 1.5,
    "official_judge": 1.6,  # a benchmark's upstream grader; other benchmarks may import it
    "stitch": 2.0,
    "retrieval": 2.5,  # a benchmark's retrieval metrics, read by its memory module
    "memory": 3.0,
    "official": 3.5,  # upstream's own protocol, built on the data and memory modules
    "prompts": 4.0,
    "samples": 5.0,
    "record": 98.0,  # the declared record reads the modules above
    "__init__": 99.0,
}
#: The benchmark others may build on.
BASE_BENCHMARK = "locomo"
#: The module of any benchmark another benchmark may import (it imports no other benchmark).
SHARED_KIND = "official_judge"
INSPECT_SHIM = "memevals.inspect_tasks.inspect_internals"


@dataclass(frozen=True)
class Import:
    line: int
    module: str  # the module imported from, absolute
    name: str | None  # the name taken by `from module import name`; None for `import module`
    guarded: bool  # inside a try that catches ImportError


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _absolute(module: str | None, level: int, current: str, is_package: bool) -> str:
    if level == 0:
        return module or ""
    base = current.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    names: list[ast.expr] = []
    if handler.type is None:
        return True
    names = list(handler.type.elts) if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(
        isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError", "Exception")
        for n in names
    )


def imports_of(path: Path, root: Path) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    current = module_name(path, root)
    is_package = path.name == "__init__.py"
    guarded_lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            for stmt in node.body:
                for sub in ast.walk(stmt):
                    if hasattr(sub, "lineno"):
                        guarded_lines.add(sub.lineno)
    for node in ast.walk(tree):
        guarded = getattr(node, "lineno", -1) in guarded_lines
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(node.lineno, alias.name, None, guarded)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node.module, node.level, current, is_package)
            for alias in node.names:
                yield Import(node.lineno, module, alias.name, guarded)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Attribute, ast.Name))
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield Import(node.lineno, node.args[0].value, None, guarded)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


class Tree:
    """The modules of one package tree (the real memevals/ or a test tree)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
        self.top = root.name

    def target(self, imp: Import) -> str:
        """The module an import reaches: `from pkg import mod` reaches pkg.mod when that is a
        module of the tree."""
        if imp.name is not None and f"{imp.module}.{imp.name}" in self.files:
            return f"{imp.module}.{imp.name}"
        return imp.module

    def layer(self, module: str) -> str:
        parts = module.split(".")
        return "root" if len(parts) == 1 else parts[1]

    def benchmark_of(self, module: str) -> tuple[str, str] | None:
        """(benchmark, module kind) for a module of a benchmark folder."""
        parts = module.split(".")
        if len(parts) < 3 or parts[1] != "benchmarks":
            return None
        return parts[2], parts[3] if len(parts) > 3 else "__init__"


def _benchmark_problem(tree: Tree, here: str, there: str) -> str | None:
    src, dst = tree.benchmark_of(here), tree.benchmark_of(there)
    if src is None or dst is None:
        return None  # memevals.benchmarks itself
    (src_bench, src_kind), (dst_bench, dst_kind) = src, dst
    if src_bench != dst_bench:
        if dst_kind not in BENCHMARK_RANK:
            return f"benchmark {src_bench} imports benchmark {dst_bench}'s own {dst_kind}"
        if src_kind == SHARED_KIND:
            return (
                f"benchmark {src_bench}'s {SHARED_KIND}, which other benchmarks import, imports "
                f"benchmark {dst_bench}"
            )
        if dst_kind == SHARED_KIND:
            return None
        if dst_bench != BASE_BENCHMARK:
            return (
                f"benchmark {src_bench} imports benchmark {dst_bench}; only {BASE_BENCHMARK} "
                "is a base for others"
            )
        if BENCHMARK_RANK[dst_kind] > BENCHMARK_RANK.get(src_kind, BENCHMARK_RANK["record"]):
            return f"{src_kind} imports the later {BASE_BENCHMARK}.{dst_kind}"
        return None
    if src_kind not in BENCHMARK_RANK or dst_kind not in BENCHMARK_RANK:
        return None  # a benchmark's own helper: only a circle (checked below) is wrong
    if BENCHMARK_RANK[dst_kind] >= BENCHMARK_RANK[src_kind]:
        return f"{src_kind} imports {dst_kind}: inside a benchmark imports point one way"
    return None


def _private_across(tree: Tree, imp: Import, here: str, there: str) -> bool:
    """A `_name` taken from another module, or a `_module` from outside its package."""
    if imp.name is not None and there == imp.module and _private(imp.name):
        return there != here
    own = here if tree.files[here].name == "__init__.py" else here.rsplit(".", 1)[0]
    parts = there.split(".")
    for i, part in enumerate(parts):
        prefix = ".".join(parts[:i])
        if _private(part) and own != prefix and not own.startswith(prefix + "."):
            return True
    return False


def violations(root: Path) -> list[str]:
    """Every broken rule as 'path:line: message' (paths relative to the tree's parent)."""
    tree = Tree(root)
    shim = INSPECT_SHIM.replace("memevals", tree.top, 1)
    out: list[str] = []
    for here, path in tree.files.items():
        layer = tree.layer(here)
        where = path.relative_to(root.parent).as_posix()
        for imp in imports_of(path, root):
            top = imp.module.split(".")[0]
            problems: list[str] = []
            if top != tree.top:
                private = [p for p in imp.module.split(".") if _private(p)]
                if imp.name is not None and _private(imp.name):
                    private.append(imp.name)
                if top == "inspect_ai" and private:
                    if here != shim:
                        problems.append(
                            f"Inspect internal {imp.module} outside {INSPECT_SHIM}: go through it"
                        )
                    elif not imp.guarded:
                        problems.append(f"Inspect internal {imp.module} imported without a guard")
                elif private:
                    problems.append(f"private name {'.'.join(private)} of {top}")
                if top in FRAMEWORKS and layer in (
                    "core",
                    "benchmarks",
                    "scorers",
                    "memory_systems",
                    "root",
                ):
                    problems.append(f"{layer} imports the framework {top}")
                if top in FOREIGN_FRAMEWORKS.get(layer, ()):
                    problems.append(f"{layer} imports the other framework's {top}")
            else:
                there = tree.target(imp)
                there_layer = tree.layer(there)
                if _private_across(tree, imp, here, there):
                    problems.append(f"imports a private name of another module ({there})")
                if there_layer == "tools" and layer != "tools":
                    problems.append(f"{layer} imports tools ({there}): nothing imports tools")
                elif layer in ALLOWED_LAYERS and there_layer not in ALLOWED_LAYERS[layer]:
                    allowed = ", ".join(sorted(ALLOWED_LAYERS[layer])) or "nothing of memevals"
                    problems.append(f"{layer} imports {there} ({there_layer}); allowed: {allowed}")
                elif layer == "benchmarks" and there_layer == "benchmarks":
                    problem = _benchmark_problem(tree, here, there)
                    if problem:
                        problems.append(f"{problem} ({there})")
            out += [f"{where}:{imp.line}: {p}" for p in problems]
    out += naming_violations(root, benchmark_names(root))
    out += cycle_violations(root)
    return sorted(set(out), key=_sort_key)


#: The layers that must name no benchmark.
NEUTRAL_LAYERS = ("core", "results", "render", "tools")


def benchmark_names(root: Path) -> set[str]:
    """The benchmarks of a tree: its folders under benchmarks/ (and, for the real package, every
    record's name, entry-point ones included)."""
    folders = {
        p.name
        for p in (root / "benchmarks").iterdir()
        if p.is_dir() and not p.name.startswith(("_", "."))
    }
    if root == PACKAGE:
        from memevals.benchmarks import records

        folders |= set(records())
    return folders


def _docstring_nodes(tree: ast.Module) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                out.add(id(first.value))
    return out


def _spelled(node: ast.AST, docstrings: set[int]) -> list[str]:
    """The strings and identifiers one AST node spells (docstrings left out)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [] if id(node) in docstrings else [node.value]
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword):
        return [node.arg] if node.arg else []
    if isinstance(node, ast.alias):
        return [node.name, node.asname or ""]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    return []


def naming_violations(root: Path, names: set[str]) -> list[str]:
    """Every place a core or tools module names a benchmark, as 'path:line: message'."""
    if not names:
        return []
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    word = re.compile(rf"(?<![a-z0-9])({alternatives})(?![a-z0-9])")
    tree = Tree(root)
    out = []
    for here, path in tree.files.items():
        if tree.layer(here) not in NEUTRAL_LAYERS:
            continue
        parsed = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = _docstring_nodes(parsed)
        where = path.relative_to(root.parent).as_posix()
        for node in ast.walk(parsed):
            for text in _spelled(node, docstrings):
                found = word.search(text.lower())
                if found:
                    out.append(
                        f"{where}:{getattr(node, 'lineno', 1)}: {tree.layer(here)} names the "
                        f"benchmark {found.group(1)} ({text[:60]!r})"
                    )
    return out


def _module_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements that run when the module is imported (TYPE_CHECKING blocks left out)."""
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, ast.If):
            test = stmt.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", "")
            if name != "TYPE_CHECKING":
                out += _module_level(stmt.body)
            out += _module_level(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)):
                out += _module_level(block)
        elif isinstance(stmt, (ast.With, ast.ClassDef)):
            out += _module_level(stmt.body)
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the tree its module-level imports load (parents included)."""
    tree = Tree(root)
    graph: dict[str, set[str]] = {}
    for here, path in tree.files.items():
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        parsed = ast.parse(path.read_text(encoding="utf-8"))
        for stmt in _module_level(parsed.body):
            if isinstance(stmt, ast.Import):
                targets = [alias.name for alias in stmt.names]
            elif isinstance(stmt, ast.ImportFrom):
                module = _absolute(stmt.module, stmt.level, here, is_package)
                targets = [tree.target(Import(0, module, a.name, False)) for a in stmt.names]
            else:
                continue
            for target in targets:
                parts = target.split(".")
                edges |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
        graph[here] = {m for m in edges if m in tree.files and m != here}
    return graph


def cycle_violations(root: Path) -> list[str]:
    """An import cycle among the module-level imports, as one message (none: empty)."""
    try:
        graphlib.TopologicalSorter(import_graph(root)).prepare()
    except graphlib.CycleError as exc:
        cycle = list(reversed(exc.args[1]))
        return [f"import cycle: {' -> '.join(cycle)}"]
    return []


def _sort_key(v: str) -> tuple[str, int, str]:
    if v.startswith("import cycle"):
        return "~", 0, v
    file, line, rest = v.split(":", 2)
    return file, int(line), rest


def test_memevals_follows_the_import_rules() -> None:
    found = violations(PACKAGE)
    assert not found, f"{len(found)} import-rule violations:\n" + "\n".join(found)


# --- the checker finds what it should ---------------------------------------------------------

BAD_TREE = {
    "__init__.py": "",
    "core/__init__.py": "",
    "core/files.py": """
        import inspect_ai
        def f():
            from memevals.benchmarks.locomo import data
        """,
    "core/tokens.py": "from memevals.core.files import _cache\n",
    "core/_shared.py": "from memevals.core import _shared\nfrom memevals.core.files import f\n",
    "core/labels.py": """
        DEFAULT = "third"
        WORD = "locomotive"
        def scaled(locomo_k):
            \"\"\"Docstrings may mention locomo.\"\"\"
            return locomo_k  # so may comments: locomo
        """,
    "core/cyc_a.py": "from memevals.core import cyc_b\n",
    "core/cyc_b.py": "import memevals.core.cyc_a\nfrom memevals.core import cyc_c\n",
    "core/cyc_c.py": """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from memevals.core import cyc_b
        def later():
            from memevals.core import cyc_b
        """,
    "benchmarks/__init__.py": "",
    "benchmarks/locomo/__init__.py": "",
    "benchmarks/locomo/data.py": "from memevals.benchmarks.locomo import memory\n",
    "benchmarks/locomo/memory.py": "from memevals.benchmarks.locomo.prompts import render\n",
    "benchmarks/locomo/prompts.py": "from lm_eval import api\n",
    "benchmarks/locomo/scoring.py": "from memevals.benchmarks.locomo.memory import select\n",
    # a benchmark's own helper: any order inside its benchmark, never imported by another
    "benchmarks/locomo/extras.py": "from memevals.benchmarks.locomo.samples import build\n",
    "benchmarks/other/samples.py": "from memevals.benchmarks.locomo.extras import helper\n",
    "benchmarks/other/__init__.py": "",
    "benchmarks/other/data.py": "from memevals.benchmarks.locomo.memory import select\n",
    "benchmarks/other/memory.py": "from memevals.benchmarks.third import data\n",
    "benchmarks/third/__init__.py": "",
    "benchmarks/third/data.py": "from memevals.scorers import locomo_f1\n",
    "benchmarks/third/official_judge.py": "from memevals.benchmarks.locomo import data\n",
    "benchmarks/other/prompts.py": "from memevals.benchmarks.third.official_judge import rule\n",
    "scorers/__init__.py": "from memevals.inspect_tasks.common import count\n",
    "inspect_tasks/__init__.py": "",
    "inspect_tasks/common.py": """
        from memevals.lm_eval_tasks.common import checked
        from memevals.scorers import locomo_f1
        from inspect_ai._util.registry import registry_info
        import datasets
        """,
    "inspect_tasks/inspect_internals.py": """
        try:
            from inspect_ai._eval.registry import task_register
        except ImportError:
            task_register = None
        from inspect_ai._util.config import parse_cli_args
        """,
    "lm_eval_tasks/__init__.py": "import importlib\nimportlib.import_module('memevals.tools.x')\n",
    "lm_eval_tasks/common.py": "from memevals.inspect_tasks import common\nimport inspect_ai\n"
    "from memevals.lm_eval_tasks.one import _gen\n",
    "lm_eval_tasks/one/__init__.py": "from memevals.lm_eval_tasks.one._gen import main\n",
    "lm_eval_tasks/one/_gen.py": "",
    "lm_eval_tasks/one/utils.py": "from . import _gen\nimport memevals.lm_eval_tasks.one._gen\n",
    "results/__init__.py": "",
    "results/rows.py": "from memevals.render.markdown import table\n",
    "render/__init__.py": "",
    "render/markdown.py": "from memevals.results.rows import Row\nfrom memevals.tools import x\n",
    "tools/__init__.py": "",
    "tools/x.py": "from memevals.inspect_tasks.common import count\nfrom . import y\n",
    "tools/y.py": "from memevals.lm_eval_tasks.common import checked\n",
    "tools/z.py": """
        from memevals.benchmarks import records
        import memevals.benchmarks.other.data
        """,
}

EXPECTED = [
    "memevals/benchmarks/locomo/data.py:1: data imports memory: inside a benchmark imports point "
    "one way (memevals.benchmarks.locomo.memory)",
    "memevals/benchmarks/locomo/memory.py:1: memory imports prompts: inside a benchmark imports "
    "point one way (memevals.benchmarks.locomo.prompts)",
    "memevals/benchmarks/locomo/prompts.py:1: benchmarks imports the framework lm_eval",
    "memevals/benchmarks/locomo/scoring.py:1: scoring imports memory: inside a benchmark imports "
    "point one way (memevals.benchmarks.locomo.memory)",
    "memevals/benchmarks/other/data.py:1: data imports the later locomo.memory "
    "(memevals.benchmarks.locomo.memory)",
    "memevals/benchmarks/other/memory.py:1: benchmark other imports benchmark third; only locomo "
    "is a base for others (memevals.benchmarks.third.data)",
    "memevals/benchmarks/other/samples.py:1: benchmark other imports benchmark locomo's own "
    "extras (memevals.benchmarks.locomo.extras)",
    "memevals/benchmarks/third/data.py:1: benchmarks imports memevals.scorers (scorers); "
    "allowed: benchmarks, core",
    "memevals/benchmarks/third/official_judge.py:1: benchmark third's official_judge, which "
    "other benchmarks import, imports benchmark locomo (memevals.benchmarks.locomo.data)",
    "memevals/core/files.py:1: core imports the framework inspect_ai",
    "memevals/core/files.py:3: core imports memevals.benchmarks.locomo.data (benchmarks); "
    "allowed: core",
    "memevals/core/tokens.py:1: imports a private name of another module (memevals.core.files)",
    "memevals/inspect_tasks/common.py:1: inspect_tasks imports memevals.lm_eval_tasks.common "
    "(lm_eval_tasks); allowed: benchmarks, core, inspect_tasks",
    "memevals/inspect_tasks/common.py:2: inspect_tasks imports memevals.scorers (scorers); "
    "allowed: benchmarks, core, inspect_tasks",
    "memevals/inspect_tasks/common.py:3: Inspect internal inspect_ai._util.registry outside "
    "memevals.inspect_tasks.inspect_internals: go through it",
    "memevals/inspect_tasks/common.py:4: inspect_tasks imports the other framework's datasets",
    "memevals/inspect_tasks/inspect_internals.py:5: Inspect internal inspect_ai._util.config "
    "imported without a guard",
    "memevals/lm_eval_tasks/__init__.py:2: lm_eval_tasks imports tools (memevals.tools.x): "
    "nothing imports tools",
    "memevals/lm_eval_tasks/common.py:1: lm_eval_tasks imports memevals.inspect_tasks.common "
    "(inspect_tasks); allowed: benchmarks, core, lm_eval_tasks",
    "memevals/lm_eval_tasks/common.py:2: lm_eval_tasks imports the other framework's inspect_ai",
    "memevals/lm_eval_tasks/common.py:3: imports a private name of another module "
    "(memevals.lm_eval_tasks.one._gen)",
    "memevals/render/markdown.py:2: render imports tools (memevals.tools.x): nothing imports tools",
    "memevals/results/rows.py:1: results imports memevals.render.markdown (render); allowed: "
    "benchmarks, core, inspect_tasks, results",
    "memevals/scorers/__init__.py:1: scorers imports memevals.inspect_tasks.common "
    "(inspect_tasks); allowed: benchmarks, core",
]


#: What the benchmark-name and import-cycle rules find in BAD_TREE (the docstring, the comment,
#: "locomotive", the TYPE_CHECKING import and the import inside a function are not findings).
EXPECTED_NAMING = [
    "memevals/core/files.py:3: core names the benchmark locomo ('memevals.benchmarks.locomo')",
    "memevals/core/labels.py:1: core names the benchmark third ('third')",
    "memevals/core/labels.py:3: core names the benchmark locomo ('locomo_k')",
    "memevals/core/labels.py:5: core names the benchmark locomo ('locomo_k')",
    "memevals/tools/z.py:2: tools names the benchmark other ('memevals.benchmarks.other.data')",
    "import cycle: memevals.core.cyc_a -> memevals.core.cyc_b -> memevals.core.cyc_a",
]


def test_the_checker_finds_every_kind_of_violation(tmp_path: Path) -> None:
    root = tmp_path / "memevals"
    for rel, text in BAD_TREE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    assert violations(root) == sorted(EXPECTED + EXPECTED_NAMING, key=_sort_key)


def test_relative_imports_are_resolved(tmp_path: Path) -> None:
    root = tmp_path / "memevals"
    (root / "core").mkdir(parents=True)
    (root / "core" / "__init__.py").write_text("from . import files\nfrom .. import tools\n")
    (root / "core" / "files.py").write_text("from .tokens import _x\n")
    found = [(i.module, i.name) for i in imports_of(root / "core" / "__init__.py", root)]
    assert found == [("memevals.core", "files"), ("memevals", "tools")]
    found = [(i.module, i.name) for i in imports_of(root / "core" / "files.py", root)]
    assert found == [("memevals.core.tokens", "_x")]


# --- commands ----------------------------------------------------------------------------------

#: The commands: the modules of the console scripts (pyproject.toml [project.scripts]).
COMMANDS = frozenset(
    re.findall(
        r'^memevals-[\w-]+ = "([\w.]+):main"$',
        (REPO / "pyproject.toml").read_text(encoding="utf-8"),
        re.M,
    )
)
#: Imports of one command by another module still allowed (issue 39): none; the commands share
#: memevals.tools.command_line, which is no command. A new one fails the test.
COMMAND_IMPORTS_LEFT: frozenset[tuple[str, str]] = frozenset()


def command_imports(root: Path, commands: frozenset[str]) -> set[tuple[str, str]]:
    """(importer, command) for every import of a command by another module of the tree (one
    inside a function counts too): a command parses its arguments and calls the library and
    its renderers, never another command.

    Args:
        root: the package folder.
        commands: the command modules.

    Returns:
        The pairs found.
    """
    tree = Tree(root)
    found = set()
    for here, path in tree.files.items():
        for imp in imports_of(path, root):
            there = tree.target(imp)
            if there in commands and there != here:
                found.add((here, there))
    return found


def test_no_command_imports_another_command() -> None:
    assert "memevals.tools.compare" in COMMANDS and "memevals.tools.diff" in COMMANDS
    found = command_imports(PACKAGE, COMMANDS)
    new = sorted(found - COMMAND_IMPORTS_LEFT)
    assert not new, f"commands imported by other modules (import memevals.results instead): {new}"


def test_the_command_rule_finds_an_import_of_a_command(tmp_path: Path) -> None:
    root = tmp_path / "memevals"
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "a.py").write_text("def main():\n    from memevals.tools.b import x\n")
    (root / "tools" / "b.py").write_text("from memevals.tools import a\n")
    (root / "tools" / "c.py").write_text("import memevals.tools.d\n")
    commands = frozenset({"memevals.tools.a", "memevals.tools.b"})
    assert command_imports(root, commands) == {
        ("memevals.tools.a", "memevals.tools.b"),
        ("memevals.tools.b", "memevals.tools.a"),
    }


# --- what each layer of results may do ----------------------------------------------------

#: What the analysis library and its renderers never use: the library computes (no printing,
#: no HTML, no chart, no command line), the renderers render what they are handed (no command
#: line, no printing: a command decides where the text goes).
FORBIDDEN_USE = {
    "results": {"argparse", "matplotlib", "jinja2", "html", "print", "sys.stdout", "sys.stderr"},
    "render": {"argparse", "print", "sys.stdout", "sys.stderr"},
}


def _used(path: Path) -> Iterator[tuple[int, str]]:
    """(line, what) for each import of a top-level library, print() call and sys.stdout/stderr
    reference of a module."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name.split(".")[0]) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.split(".")[0]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            yield node.lineno, node.func.id
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            yield node.lineno, f"{node.value.id}.{node.attr}"


def purity_violations(root: Path) -> list[str]:
    """Every use of what FORBIDDEN_USE forbids in the results and render layers.

    Args:
        root: the package folder.

    Returns:
        'path:line: layer uses what' for each.
    """
    out = []
    for layer, forbidden in FORBIDDEN_USE.items():
        for path in sorted((root / layer).rglob("*.py")):
            where = path.relative_to(root.parent).as_posix()
            out += [f"{where}:{line}: {layer} uses {what}" for line, what in _used(path)
                    if what in forbidden]  # fmt: skip
    return out


def test_the_library_computes_and_the_renderers_only_render() -> None:
    assert purity_violations(PACKAGE) == []


def test_the_purity_rule_finds_printing_and_argument_parsing(tmp_path: Path) -> None:
    root = tmp_path / "memevals"
    for layer in ("results", "render"):
        (root / layer).mkdir(parents=True)
    (root / "results" / "rows.py").write_text(
        "import argparse\nimport sys\n\ndef f():\n    print(1, file=sys.stderr)\n"
    )
    (root / "render" / "charts.py").write_text(
        "import matplotlib\nfrom argparse import ArgumentParser\n"
    )
    assert purity_violations(root) == [
        "memevals/results/rows.py:1: results uses argparse",
        "memevals/results/rows.py:5: results uses print",
        "memevals/results/rows.py:5: results uses sys.stderr",
        "memevals/render/charts.py:2: render uses argparse",
    ]


# --- the scorers facade ---------------------------------------------------------------------


def test_scorers_facade_is_built_from_the_records_and_lazy() -> None:
    """memevals.scorers offers core's generic names and what each record declares (its
    `scorers` from its `scoring_module`); each typed name (TYPE_CHECKING) is one of them, from
    the same module; importing the facade loads no benchmark, a core name loads only its module."""
    import memevals.scorers as facade
    from memevals.benchmarks import judge_criteria, records

    declared = {r.scoring_module: set(r.scorers) for r in records().values() if r.scorers}
    sources = {module: set(names) for module, names in facade.sources().items()}
    for module, names in declared.items():
        assert names <= sources[str(module)]
    assert set(facade.CORE_SOURCES) <= set(sources)
    assert all(m.startswith("memevals.core.") for m in facade.CORE_SOURCES)
    names = sorted(n for ns in sources.values() for n in ns)
    assert len(names) == len(set(names))  # one defining module per name
    assert facade.__all__ == sorted([*names, "JUDGE_CRITERIA"])
    for module, ns in sources.items():
        defining = __import__(module, fromlist=["_"])
        for name in ns:
            assert getattr(facade, name) is getattr(defining, name)
    assert judge_criteria() == facade.JUDGE_CRITERIA

    source = (PACKAGE / "scorers" / "__init__.py").read_text(encoding="utf-8")
    typed: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("memevals"):
            for alias in node.names:
                assert alias.asname == alias.name, f"{alias.name}: re-export as itself"
                typed.setdefault(node.module, set()).add(alias.name)
    for module, ns in typed.items():
        assert ns <= sources.get(module, set()), f"{module}: typed but not offered: {ns}"
    # importing the facade loads no benchmark; the first use loads only the defining module
    probe = (
        "import sys, memevals.scorers as s\n"
        "before = sorted(m for m in sys.modules if m.startswith('memevals.'))\n"
        "s.cohen_kappa\n"
        "after = sorted(m for m in sys.modules if m.startswith('memevals.'))\n"
        "print(before, after)\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    )
    before, after = res.stdout.strip().split("] [")
    assert before == "['memevals.scorers'"
    assert "benchmarks" not in after and "memevals.core.agreement" in after


def test_a_name_offered_twice_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    import memevals.benchmarks
    import memevals.scorers as facade

    real = memevals.benchmarks.records()
    clash = dataclasses.replace(
        real["locomo_plus"], scoring_module="memevals.benchmarks.locomo_plus.scoring",
        scorers=("token_f1",),
    )  # fmt: skip
    monkeypatch.setattr(memevals.benchmarks, "records", lambda: {**real, "locomo_plus": clash})
    with pytest.raises(ValueError, match="'token_f1' is offered by both"):
        facade.sources()
