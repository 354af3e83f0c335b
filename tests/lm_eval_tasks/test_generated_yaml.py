"""Every benchmark's lm-eval YAML is the generator's output from its record, byte for byte; the
records' lm-eval names are consistent with their Inspect tasks and resolve back to them; the
generator runs without lm-eval; lm-eval indexes every generated task and group."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from memevals.benchmarks import record_for_task, records
from memevals.lm_eval_tasks import generate, include_path

ROOT = Path(include_path())
FIX = "run `python -m memevals.lm_eval_tasks generate`"


class _Loader(yaml.SafeLoader):
    """Reads lm-eval YAML: `!function x.y` becomes the string "!function x.y"."""


_Loader.add_constructor(
    "!function", lambda loader, node: f"!function {loader.construct_scalar(node)}"
)


def _read(path: Path) -> dict[str, Any]:
    loaded = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    assert isinstance(loaded, dict), path
    return loaded


def test_checked_in_files_equal_the_generator_output() -> None:
    assert generate.check(ROOT) == [], FIX


def test_every_benchmark_with_lm_eval_tasks_is_generated() -> None:
    """Every record's tasks and groups have a file; every YAML in the include path is one of
    them or a base a record names (no hand-written task or group file left over)."""
    expected = generate.files()
    bases = {
        f"{r.lm_eval.folder or r.name}/{r.lm_eval.base}"
        for r in records().values()
        if r.lm_eval is not None and r.lm_eval.base is not None
    }
    on_disk = {p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.yaml")}
    assert on_disk == set(expected) | bases
    for record in records().values():
        for name in record.lm_eval_names():
            assert f"{record.lm_eval.folder or record.name}/{name}.yaml" in expected  # type: ignore[union-attr]


def test_tasks_include_their_base_and_groups_aggregate() -> None:
    for record in records().values():
        spec = record.lm_eval
        if spec is None:
            continue
        folder = ROOT / (spec.folder or record.name)
        base = spec.base or f"_{spec.folder or record.name}_base.yaml"
        assert (folder / base).is_file()
        assert "task" not in _read(folder / base)  # a base is not a task of its own
        for task in spec.tasks:
            doc = _read(folder / f"{task.name}.yaml")
            assert doc["include"] == base and doc["task"] == task.name
            kwargs = dict(task.dataset_kwargs)
            if spec.base is None:
                kwargs["benchmark"] = record.name
            assert doc.get("dataset_kwargs", {}) == kwargs
        for group in spec.groups:
            doc = _read(folder / f"{group.name}.yaml")
            assert doc["group"] == group.name and doc["task"] == list(group.tasks)
            assert doc.get("aggregate_metric_list", []) == [
                {"metric": m, "aggregation": "mean", "weight_by_size": True}
                for m in group.aggregate
            ]
            assert str(doc["metadata"]["version"]) == record.version


def test_the_built_in_groups_aggregate_their_headline_metrics() -> None:
    """The values the groups report (worked out from the benchmarks' READMEs)."""
    by_group = {
        g.name: (g.tasks, g.aggregate)
        for r in records().values()
        if r.lm_eval is not None
        for g in r.lm_eval.groups
    }
    cats = ["single_hop", "multi_hop", "temporal", "open_domain", "adversarial"]
    qa = ("f1", "abstention", "prompt_tokens", "evidence_recall")
    assert by_group["locomo"] == (tuple(f"locomo_{c}" for c in cats), qa)
    assert by_group["locomo_plus"] == (
        tuple(f"locomo_plus_{c}" for c in [*cats, "cognitive"]),
        qa,
    )
    types = [
        "single_session_user",
        "single_session_assistant",
        "single_session_preference",
        "multi_session",
        "temporal_reasoning",
        "knowledge_update",
    ]
    for variant in ("oracle", "s", "m"):
        # the abstention slice repeats its questions' type subtasks: outside the group
        assert by_group[f"longmemeval_{variant}"] == (
            tuple(f"longmemeval_{variant}_{t}" for t in types),
            ("prompt_tokens",),
        )


def test_lm_eval_names_resolve_to_their_record() -> None:
    """record_for_task finds the record of every lm-eval task and group (subtasks such as
    longmemeval_oracle_abstention included), and every eval.yaml `lm_eval` name of a task is
    one its record generates (a `<placeholder>` standing for any one name part)."""
    for record in records().values():
        names = record.lm_eval_names()
        for name in names:
            found = record_for_task(name)
            assert found is not None and found.name == record.name, name
        for task in record.tasks:
            if task.lm_eval is None:
                continue
            pattern = re.compile(re.sub(r"<[a-z_]+>", "[a-z0-9]+", re.escape(task.lm_eval)))
            matched = [n for n in names if pattern.fullmatch(n)]
            assert matched, f"{record.name}: task {task.name} names lm-eval {task.lm_eval!r}"
    found = record_for_task("longmemeval_oracle_abstention")
    assert found is not None and found.name == "longmemeval"
    found = record_for_task("memevals/locomo_event_summary")
    assert found is not None and found.name == "locomo_event_summary"
    assert record_for_task("no_such_task") is None


def test_the_generator_writes_what_it_checks(tmp_path: Path) -> None:
    written = generate.write(tmp_path)
    assert sorted(written) == sorted(generate.files())
    assert generate.check(tmp_path) == []
    (tmp_path / written[0]).write_text("stale\n", encoding="utf-8")
    assert generate.check(tmp_path) == [f"{written[0]}: differs from the generator's output"]
    orphan = tmp_path / "gone" / "gone_task.yaml"
    orphan.parent.mkdir()
    orphan.write_text(generate.HEADER.format(name="gone") + "task: gone_task\n", encoding="utf-8")
    assert "gone/gone_task.yaml: generated, but no record declares it any more" in generate.check(
        tmp_path
    )


def test_the_generator_cli_needs_no_lm_eval(tmp_path: Path) -> None:
    code = (
        "import sys; from memevals.lm_eval_tasks.__main__ import main; "
        f"rc = main(['generate', '--check', '--root', {str(ROOT)!r}]); "
        "assert not {'lm_eval', 'datasets'} & set(sys.modules), sorted(sys.modules); "
        "sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "memevals.lm_eval_tasks",
            "generate",
            "--check",
            "--root",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "missing" in proc.stderr and FIX in proc.stderr


def test_lm_eval_indexes_every_generated_name() -> None:
    pytest.importorskip("lm_eval")
    from lm_eval.tasks import TaskManager

    names = set(TaskManager(include_path=str(ROOT), include_defaults=False).all_tasks)
    for record in records().values():
        assert set(record.lm_eval_names()) <= names, record.name
    assert not any(n.startswith("_") for n in names)  # bases are not tasks
