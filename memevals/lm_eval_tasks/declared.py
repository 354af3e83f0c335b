"""lm-eval functions of a benchmark that has no thin lm-eval module of its own.

Its record's lm-eval spec names two framework-free functions (memevals.core.benchmark.
LmEvalSpec): `documents` builds its PromptItems from the task's options — usually the
benchmark's own `samples.build(options)`, its options class filled from `--metadata` by the
one options path (core.options.options_from), or a function taking the options as keyword
arguments; lm-eval also passes the model's arguments, which are ignored unless one looks like
a misspelt option — and `results(metadata, reply, target)` scores one reply. The
generated YAML (memevals.lm_eval_tasks.generate) points lm-eval at `documents` and `results`
here, which find the record by the `benchmark` key the generator writes into every task's
`dataset_kwargs`.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from datasets import DatasetDict

from memevals.benchmarks import records
from memevals.core.benchmark import Benchmark, LmEvalSpec
from memevals.core.build import Build
from memevals.core.options import options_from
from memevals.core.prompt_item import PromptItem
from memevals.core.statistics import CLUSTER_KEY
from memevals.lm_eval_tasks import option_checks
from memevals.lm_eval_tasks.clustered_stderr import with_clusters
from memevals.lm_eval_tasks.documents import doc_item, only_reply, to_docs

__all__ = ["RECORD_KEY", "documents", "load_function", "results"]

#: Document-metadata key naming the record whose `results` scores the document.
RECORD_KEY = "memevals_record"


def load_function(dotted: str, where: str) -> Callable[..., Any]:
    """The function a "module:function" name designates.

    Args:
        dotted: "package.module:function".
        where: what names it, for the error message.

    Returns:
        The function.
    """
    module_name, sep, attr = dotted.partition(":")
    if not sep or not module_name or not attr:
        raise option_checks.OptionError(f"{where}: {dotted!r} is not of the form 'module:function'")
    fn = getattr(importlib.import_module(module_name), attr, None)
    if not callable(fn):
        raise option_checks.OptionError(f"{where}: {module_name} has no function {attr!r}")
    return cast(Callable[..., Any], fn)


def _spec(name: str) -> tuple[Benchmark, LmEvalSpec]:
    record = records().get(name)
    if record is None or record.lm_eval is None:
        known = ", ".join(n for n, r in records().items() if r.lm_eval is not None)
        raise option_checks.OptionError(f"no lm-eval benchmark {name!r}; known: {known}")
    return record, record.lm_eval


def _options_class(build: Callable[..., Any]) -> type[Any] | None:
    """The options dataclass of a `build(options)` function (its one parameter's type)."""
    params = list(inspect.signature(build).parameters)
    if params != ["options"]:
        return None
    hint = typing.get_type_hints(build).get("options")
    return hint if isinstance(hint, type) and dataclasses.is_dataclass(hint) else None


def _items(
    build: Callable[..., Any], benchmark: str, metadata: Mapping[str, Any]
) -> Sequence[PromptItem]:
    """The items of `build`: a benchmark's `samples.build(options)` gets its options class
    from `--metadata` by the one options path (core.options.options_from, which ignores the
    model's arguments lm-eval merges in) and returns a Build; any other function is called with
    the keyword arguments it takes."""
    options_class = _options_class(build)
    if options_class is not None:
        options = options_from(options_class, metadata, where=benchmark, strict=False)
        built = build(options)
        return built.items if isinstance(built, Build) else built
    known = option_checks.keyword_names(build)
    given = option_checks.checked_options(benchmark, metadata, known, {})
    return cast(Sequence[PromptItem], build(**given))


def documents(benchmark: str, **metadata: Any) -> DatasetDict:
    """The documents of one task of a declared benchmark.

    Args:
        benchmark: the record's name (from the generated `dataset_kwargs`).
        **metadata: the task's other `dataset_kwargs`, the YAML's metadata and `--metadata`.

    Returns:
        The one-split dataset lm-eval reads.
    """
    record, spec = _spec(benchmark)
    build = load_function(str(spec.documents), f"benchmark {benchmark}: lm-eval documents")
    items = option_checks.checked(benchmark, lambda: _items(build, benchmark, metadata))
    tagged = [replace(i, metadata={**i.metadata, RECORD_KEY: record.name}) for i in items]
    return to_docs(tagged, benchmark)


def results(doc: Mapping[str, Any], replies: Sequence[Any]) -> dict[str, Any]:
    """The scores of one reply, each with its conversation-clustered standard error entry.

    Args:
        doc: the document (as `documents` wrote it).
        replies: lm-eval's generations for it (one).

    Returns:
        Metric name -> value, plus `<metric>_stderr_clustered` -> (value, cluster).
    """
    item = doc_item(doc)
    md = item.metadata
    record, spec = _spec(str(md.get(RECORD_KEY)))
    score = load_function(str(spec.results), f"benchmark {record.name}: lm-eval results")
    scores = {k: float(v) for k, v in score(md, only_reply(replies), item.target).items()}
    if CLUSTER_KEY not in md:
        return scores
    return with_clusters(scores, md, spec.metrics)
