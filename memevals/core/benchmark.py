"""The benchmark record: what a benchmark declares once and every shared layer reads.

Each folder `memevals/benchmarks/<b>/` holds a `record.py` whose `RECORD` is a `Benchmark`:
its tasks and their lm-eval names, its categories in display order, what a cluster is, its
context defaults, its scores, its judge inputs and criteria, its data files and its version.
The Inspect registry, the lm-eval YAML, `memevals-compare`, `memevals-diff`, the post-hoc judge
and the `memevals.scorers` API read the records (found by `memevals.benchmarks.records()`), so
a new benchmark is a new folder, not an edit of the shared layers. This module names no
benchmark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from memevals.core.criteria_judge import CriterionSpec
from memevals.core.files import PinnedFile

__all__ = [
    "CRITERION_CALLS_NOTE",
    "LM_EVAL_AGGREGATIONS",
    "SCORE_KINDS",
    "SHARED_SCORES",
    "AnalysisAxis",
    "Benchmark",
    "JudgeSpec",
    "LmEvalGroup",
    "LmEvalMetric",
    "LmEvalSpec",
    "LmEvalTask",
    "ScoreSpec",
    "TaskSpec",
    "clustered",
    "criterion_judge",
    "declare",
    "means_then_clustered",
    "read_eval_yaml",
]

#: What a score is: the answer score (F1, accuracy), an LLM judge's, a retrieval metric, a
#: memory system's figures, or a prompt-size figure.
SCORE_KINDS = ("answer", "judge", "retrieval", "memory", "tokens")


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class TaskSpec:
    """One task of a benchmark, in both frameworks."""

    #: the Inspect task name (also its bare alias), e.g. "locomo_temporal"
    name: str
    #: the options the task fixes, e.g. {"categories": "temporal"}
    fixed: Mapping[str, Any] = field(default_factory=_empty)
    #: its lm-eval task or group name; None when it is not an lm-eval task
    lm_eval: str | None = None
    #: its dataset size on the pinned data (eval.yaml `dataset_samples`)
    samples: int | None = None
    #: the one category it asks, if it is a per-category task
    category: str | None = None


@dataclass(frozen=True)
class ScoreSpec:
    """One score a benchmark's tasks log."""

    #: the Inspect scorer's registered name as the log shows it (without a package prefix)
    scorer: str
    #: one of SCORE_KINDS
    kind: str
    #: the short name tables use for it
    label: str

    def __post_init__(self) -> None:
        if self.kind not in SCORE_KINDS:
            raise ValueError(
                f"score {self.scorer!r}: kind {self.kind!r} is not one of {SCORE_KINDS}"
            )


#: The scores a context task logs after its own: the prompt's size and the memory system's
#: figures (the shared scorers every such task appends).
SHARED_SCORES: tuple[ScoreSpec, ...] = (
    ScoreSpec("prompt_tokens", "tokens", "prompt_tokens"),
    ScoreSpec("memory_system", "memory", "memory"),
)


@dataclass(frozen=True)
class AnalysisAxis:
    """A sample-metadata field that reports break scores down by (memevals-report's "where
    memory fails"): how far back the evidence lies, how long the history is, and the like."""

    #: the sample-metadata key holding the value
    key: str
    #: what the axis measures, as a chart titles it
    title: str
    #: a number's buckets by their lower bounds, ascending (a value falls in the last bucket
    #: whose bound is at most it); empty: the values are names, each its own bucket
    edges: tuple[float, ...] = ()


@dataclass(frozen=True)
class JudgeSpec:
    """What a post-hoc judge needs from a logged sample, and the criterion it applies."""

    #: sample-metadata keys the judge reads (a log without them cannot be judged)
    inputs: tuple[str, ...]
    #: the judge criterion of a sample, from its metadata (None: the judge is not a criterion
    #: judge, e.g. a fact-by-fact check)
    criterion: Callable[[Mapping[str, Any]], str] | None = None
    #: the criteria its samples may name (its scoring module declares and registers them)
    criteria: tuple[CriterionSpec, ...] = ()
    #: the grader calls the judge makes for one sample, from its metadata, as far as they are
    #: known before the answer (the cost estimate counts them)
    calls: Callable[[Mapping[str, Any]], int] = field(default=lambda md: 1)
    #: how those calls are counted, and any the count cannot know (the estimate prints it)
    calls_note: str = "one per sample"
    #: the text the judge grades, from the model's reply and the sample's metadata (e.g. the
    #: option a letter reply chose); samples name it by the benchmark's name in
    #: `metadata["judge"]["prediction_map"]`. None: the reply as it is
    prediction: Callable[[str, Mapping[str, Any]], str] | None = None


#: How a criterion judge's calls are counted (memevals' judge, either protocol).
CRITERION_CALLS_NOTE = (
    "one per sample; protocol=memevals asks once more after an unreadable verdict, and "
    "-T judge_runs=N judges each sample N times"
)


def _named_criterion(metadata: Mapping[str, Any]) -> str:
    return str(metadata["judge"]["criterion"])


def _one_call(metadata: Mapping[str, Any]) -> int:
    return 1


def criterion_judge(
    inputs: tuple[str, ...],
    criteria: tuple[CriterionSpec, ...],
    prediction: Callable[[str, Mapping[str, Any]], str] | None = None,
) -> JudgeSpec:
    """The judge of a benchmark whose samples name their criterion (`metadata["judge"]
    ["criterion"]`): one grader call per sample, counted as CRITERION_CALLS_NOTE says.

    Args:
        inputs: the sample-metadata keys the judge reads.
        criteria: the criteria its samples may name.
        prediction: the text the judge grades (JudgeSpec.prediction); None: the reply.

    Returns:
        Its JudgeSpec.
    """
    # JudgeSpec's fields in their order: inputs, criterion, criteria, calls, calls_note, prediction
    return JudgeSpec(
        inputs, _named_criterion, criteria, _one_call, CRITERION_CALLS_NOTE, prediction
    )


@dataclass(frozen=True)
class LmEvalTask:
    """One generated lm-eval task: its name and the `dataset_kwargs` its YAML passes."""

    name: str
    dataset_kwargs: Mapping[str, Any] = field(default_factory=_empty)


@dataclass(frozen=True)
class LmEvalGroup:
    """One generated lm-eval group: its subtasks and the metrics it aggregates."""

    name: str
    tasks: tuple[str, ...]
    #: metrics averaged over the group, each subtask weighted by its size
    aggregate: tuple[str, ...] = ()
    #: comment lines written at the top of its YAML (our words on what the group reports)
    comment: str = ""


#: How a generated base aggregates a metric besides a "module.function" of its own: the mean,
#: or the clustered standard error of the (value, cluster) pairs its documents give.
LM_EVAL_AGGREGATIONS = ("mean", "clustered")


@dataclass(frozen=True)
class LmEvalMetric:
    """One entry of a generated base's `metric_list`, in the order lm-eval reports them."""

    #: the name `process_results` returns it under
    name: str
    #: one of LM_EVAL_AGGREGATIONS, or "module.function" (an aggregation of the thin module's)
    aggregation: str = "mean"
    higher_is_better: bool = True
    #: comment lines written above it (our words on when it is reported)
    comment: str = ""
    #: the declared score (its ScoreSpec.scorer) whose dict value holds this metric under its
    #: name, as the Inspect task logs it; None: the metric is a score of its own label, or no
    #: declared score. The results tools take its kind from that score.
    score: str | None = None

    def __post_init__(self) -> None:
        if self.aggregation not in LM_EVAL_AGGREGATIONS and "." not in self.aggregation:
            raise ValueError(
                f"lm-eval metric {self.name!r}: aggregation {self.aggregation!r} is not one of "
                f"{LM_EVAL_AGGREGATIONS} or a 'module.function'"
            )
        if self.aggregation == "clustered" and self.higher_is_better:
            raise ValueError(f"lm-eval metric {self.name!r}: a standard error is not better higher")


def clustered(metric: str) -> LmEvalMetric:
    """The clustered standard error entry of a metric (`<metric>_stderr_clustered`).

    Args:
        metric: the metric whose per-document values are (score, cluster) pairs.

    Returns:
        Its LmEvalMetric.
    """
    return LmEvalMetric(f"{metric}_stderr_clustered", "clustered", higher_is_better=False)


def means_then_clustered(*metrics: str, score: str | None = None) -> tuple[LmEvalMetric, ...]:
    """Mean metrics (higher is better), then the clustered standard error of each, in order.

    Args:
        metrics: the metrics' names.
        score: the declared score whose dict value holds the means (LmEvalMetric.score).

    Returns:
        Their LmEvalMetrics, the means first.
    """
    return (*(LmEvalMetric(m, score=score) for m in metrics), *(clustered(m) for m in metrics))


@dataclass(frozen=True)
class LmEvalSpec:
    """A benchmark's lm-eval tasks, generated into `<include path>/<folder>/` from the record.

    Each task's YAML is `include: <base>` plus its name and `dataset_kwargs`; each group's
    lists its tasks and aggregate metrics; the base (`_<folder>_base.yaml`) holds what the
    tasks share. Its documents and per-reply scores come either from the benchmark's thin
    lm-eval module (`custom_dataset`, `process_results`, `metric_list`, ...: "module.function"
    names the YAML writes as `!function`), or, for a benchmark without one, from two
    framework-free functions of its own (`documents`, `results`, `metrics`). Either way the
    reply's limit and temperature (`max_gen_toks`, `temperature`) are the benchmark's reader
    settings: a record takes them from the constants its reader uses, never re-types them.
    """

    #: the sub-folder of the include path holding its YAML (default: the benchmark's name)
    folder: str | None = None
    tasks: tuple[LmEvalTask, ...] = ()
    groups: tuple[LmEvalGroup, ...] = ()
    #: thin module: "module.function" building the documents (lm-eval's `custom_dataset`)
    custom_dataset: str | None = None
    #: thin module: "module.function" scoring one document (lm-eval's `process_results`)
    process_results: str | None = None
    #: thin module: "module.function" of the prompt (None: the shared documents.doc_to_text)
    doc_to_text: str | None = None
    #: thin module: "module.ClassName" of a task class of its own (lm-eval's `class`)
    task_class: str | None = None
    #: thin module: the metrics `process_results` returns and their aggregations
    metric_list: tuple[LmEvalMetric, ...] = ()
    #: no thin module: "module:function" building the documents, called with the task's
    #: options as keyword arguments (those of its dataset_kwargs and of lm-eval's metadata that
    #: it takes; a near-miss of one is an error) -> a sequence of PromptItems
    documents: str | None = None
    #: no thin module: "module:function" scoring one reply, called with (the document's
    #: metadata, the reply, the target) -> metric name -> value
    results: str | None = None
    #: no thin module: the metrics `results` returns (means, each with its clustered
    #: standard error)
    metrics: tuple[str, ...] = ()
    #: the reply's token limit and temperature (sampling when above 0, else greedy)
    max_gen_toks: int = 256
    temperature: float = 0.0
    #: comment lines written above the generation settings (where they come from)
    generation_comment: str = ""
    #: comment lines written at the top of the base (our words on what its tasks need)
    comment: str = ""

    def __post_init__(self) -> None:
        thin = self.custom_dataset is not None or self.process_results is not None
        own = self.documents is not None or self.results is not None
        if thin == own:
            raise ValueError(
                "lm-eval spec: name the thin module's custom_dataset and process_results, or "
                "the benchmark's documents and results (one pair, not both)"
            )
        pair = (
            (self.custom_dataset, self.process_results) if thin else (self.documents, self.results)
        )
        if None in pair:
            raise ValueError("lm-eval spec: name both functions of the pair")
        if own and (self.metric_list or self.doc_to_text or self.task_class):
            raise ValueError(
                "lm-eval spec: metric_list, doc_to_text and task_class are a thin module's; "
                "with documents/results name `metrics`"
            )
        if thin and self.metrics:
            raise ValueError("lm-eval spec: with a thin module list the metrics in metric_list")
        if self.max_gen_toks < 1:
            raise ValueError(
                f"lm-eval spec: max_gen_toks must be positive, got {self.max_gen_toks}"
            )
        if self.temperature < 0:
            raise ValueError(f"lm-eval spec: temperature must be >= 0, got {self.temperature}")
        names = [t.name for t in self.tasks] + [g.name for g in self.groups]
        if len(names) != len(set(names)):
            raise ValueError(f"lm-eval spec: a task or group name is repeated in {names}")
        known = {t.name for t in self.tasks}
        for group in self.groups:
            missing = [t for t in group.tasks if t not in known]
            if missing:
                raise ValueError(f"lm-eval group {group.name!r}: no task {missing[0]!r}")

    def metric_entries(self) -> tuple[LmEvalMetric, ...]:
        """The base's metric list: `metric_list`, or each of `metrics` with its clustered error.

        Returns:
            The entries in the order the YAML lists them.
        """
        if self.metric_list:
            return self.metric_list
        return tuple(e for m in self.metrics for e in (LmEvalMetric(m), clustered(m)))

    def names(self) -> tuple[str, ...]:
        """Every lm-eval task and group name it generates.

        Returns:
            The names, tasks first.
        """
        return (*(t.name for t in self.tasks), *(g.name for g in self.groups))


#: (samples' metadata, the task's options) -> per sample the (system, user) prompts of its model
#: calls, or None when each sample makes one call (Benchmark.model_calls)
ModelCalls = Callable[
    [Sequence[Mapping[str, Any]], Mapping[str, Any]], list[list[tuple[str, str]]] | None
]


@dataclass(frozen=True)
class Benchmark:
    """A benchmark's declared record."""

    #: the `benchmark` its tasks write into Task(metadata=). Tasks built on another benchmark's
    #: data may write that one's name instead, so a log is matched to its record by its task
    #: name (`memevals.benchmarks.record_for_task`), never by that field
    name: str
    title: str
    #: eval.yaml's `version`; every task's Task(version=)
    version: str
    #: the folder holding README.md and eval.yaml
    folder: Path
    tasks: tuple[TaskSpec, ...]
    #: category names in display order
    categories: tuple[str, ...] = ()
    #: the sample-metadata key holding a sample's category
    category_key: str = "category"
    #: what a sample's `metadata["cluster"]` names (a conversation, a question, ...)
    cluster: str = "conversation"
    #: for logs written before `cluster` existed: the metadata key that identified the cluster
    legacy_cluster_key: str | None = None
    #: the context settings a run uses when not given (context, top_k, retrieval_unit, ...)
    context_defaults: Mapping[str, Any] = field(default_factory=_empty)
    #: options that change what the model sees besides the context, with their defaults; a run
    #: that sets one to another value is labelled with it (e.g. {"history_format": "json"})
    label_options: Mapping[str, Any] = field(default_factory=_empty)
    #: groups of samples beside the categories, each shown with its own mean and clustered
    #: error: sample-metadata key -> group name. A sample whose value is true is in the group
    #: `<name>`; one whose value is a text v, in `<name>_<v>` (e.g. {"relation_type": "relation"})
    subgroups: Mapping[str, str] = field(default_factory=_empty)
    #: the name under which tables show the unweighted mean of the per-category means, when
    #: the benchmark reports that figure (None: it does not)
    macro_average: str | None = None
    #: sample-metadata fields scores are broken down by in reports (AnalysisAxis)
    analysis_axes: tuple[AnalysisAxis, ...] = ()
    scores: tuple[ScoreSpec, ...] = ()
    judge: JudgeSpec | None = None
    data: tuple[PinnedFile, ...] = ()
    #: the lm-eval group of all its lm-eval tasks, if it has one
    lm_eval_group: str | None = None
    #: the dotted name of its thin Inspect module (named, never imported, by core)
    inspect_module: str | None = None
    #: its lm-eval tasks and groups (None: not an lm-eval benchmark)
    lm_eval: LmEvalSpec | None = None
    #: the dotted name of its framework-free scoring module, and the names of it offered flat
    #: in `memevals.scorers` (the plain-function API)
    scoring_module: str | None = None
    scorers: tuple[str, ...] = ()
    #: the (system, user) prompts of each sample's model calls where a sample makes several
    #: (the cost estimate reads them): (samples' metadata, the task's options) -> per sample its
    #: calls, or None when each sample makes one call, its input
    model_calls: ModelCalls | None = None
    #: what model_calls counts and what it cannot know (the estimate prints it)
    model_calls_note: str = ""
    #: anything else a shared layer may read by name
    extra: Mapping[str, Any] = field(default_factory=_empty)

    def __post_init__(self) -> None:
        scorers = [s.scorer for s in self.scores]
        for metric in self.lm_eval.metric_entries() if self.lm_eval is not None else ():
            if metric.score is not None and metric.score not in scorers:
                raise ValueError(
                    f"benchmark {self.name!r}: lm-eval metric {metric.name!r} names score "
                    f"{metric.score!r}, which is not one of its scores {scorers}"
                )

    def lm_eval_score(self, metric: str) -> ScoreSpec | None:
        """The declared score an lm-eval metric reports: the one whose label it is, else the
        one whose dict value holds it (LmEvalMetric.score).

        Args:
            metric: the metric's name, as a samples record lists it.

        Returns:
            Its ScoreSpec, or None (an lm-eval diagnostic no score declares).
        """
        own = next((s for s in self.scores if s.label == metric), None)
        if own is not None or self.lm_eval is None:
            return own
        entry = next((m for m in self.lm_eval.metric_entries() if m.name == metric), None)
        return self.score(entry.score) if entry is not None and entry.score else None

    def task(self, name: str) -> TaskSpec:
        """The task of that name.

        Args:
            name: an Inspect task name of this benchmark.

        Returns:
            Its TaskSpec.
        """
        for spec in self.tasks:
            if spec.name == name:
                return spec
        raise KeyError(f"benchmark {self.name!r} has no task {name!r}")

    def lm_eval_names(self) -> tuple[str, ...]:
        """Every lm-eval task and group name of this benchmark.

        Returns:
            The names (none when it has no lm-eval tasks).
        """
        return self.lm_eval.names() if self.lm_eval is not None else ()

    def declares(self, task: str) -> bool:
        """Whether an Inspect task or lm-eval task/group name is this benchmark's.

        Args:
            task: the name, with or without a `package/` prefix.

        Returns:
            True when one of its tasks, its lm-eval tasks or groups has that name.
        """
        bare = task.rsplit("/", 1)[-1]
        return (
            any(bare == spec.name for spec in self.tasks)
            or bare in self.lm_eval_names()
            or bare == self.lm_eval_group
        )

    def score(self, scorer: str) -> ScoreSpec | None:
        """The declared score logged under that scorer name, if any.

        Args:
            scorer: a scorer name as logged (a `package/` prefix is ignored).

        Returns:
            Its ScoreSpec, or None.
        """
        bare = scorer.rsplit("/", 1)[-1]
        return next((s for s in self.scores if s.scorer == bare), None)

    def category_rank(self, category: str) -> tuple[int, str]:
        """Sort key putting categories in the declared order, then any others by name.

        Args:
            category: a category name.

        Returns:
            A key for `sorted`.
        """
        try:
            return (self.categories.index(category), "")
        except ValueError:
            return (len(self.categories), category)


def read_eval_yaml(folder: Path) -> dict[str, Any]:
    """A benchmark folder's eval.yaml.

    Args:
        folder: the benchmark's folder.

    Returns:
        The parsed mapping.
    """
    path = folder / "eval.yaml"
    with path.open(encoding="utf-8") as fh:
        loaded = yaml.safe_load(fh)
    if not isinstance(loaded, dict):
        raise ValueError(f"{path}: not a mapping")
    return loaded


def declare(
    module_file: str,
    *,
    name: str,
    fixed: Mapping[str, Mapping[str, Any]] | None = None,
    **fields: Any,
) -> Benchmark:
    """A record whose title, version and tasks come from the folder's eval.yaml.

    eval.yaml lists each task with `name`, `dataset_samples` and `lm_eval`; `fixed` adds the
    options a task fixes (a `categories` value that is one name makes it that category's task).

    Args:
        module_file: the `__file__` of the benchmark's record module.
        name: the benchmark's name.
        fixed: task name -> the options it fixes.
        **fields: the other Benchmark fields.

    Returns:
        The record.
    """
    folder = Path(module_file).resolve().parent
    meta = read_eval_yaml(folder)
    fixed = fixed or {}
    tasks = []
    for entry in meta.get("tasks", []):
        options = MappingProxyType(dict(fixed.get(entry["name"], {})))
        category = options.get("categories")
        tasks.append(
            TaskSpec(
                name=entry["name"],
                fixed=options,
                lm_eval=entry.get("lm_eval"),
                samples=entry.get("dataset_samples"),
                category=category if isinstance(category, str) and "," not in category else None,
            )
        )
    unknown = set(fixed) - {t.name for t in tasks}
    if unknown:
        raise ValueError(f"{folder / 'eval.yaml'}: no task {sorted(unknown)[0]!r}")
    return Benchmark(
        name=name,
        title=str(meta.get("title", name)),
        version=str(meta["version"]),
        folder=folder,
        tasks=tuple(tasks),
        **fields,
    )
