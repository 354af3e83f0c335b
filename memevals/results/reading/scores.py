"""Reading a sample's scores and epochs by the record's rules, whichever framework wrote them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.log import EvalSample

from memevals.core.benchmark import Benchmark
from memevals.results.reading.model import RunError, RunSample
from memevals.results.reading.records import FLAGS, appended_spec, as_float, declared_spec

# ---------------------------------------------------------------------------------------------
# Samples


@dataclass
class Epochs:
    """The epochs of one sample as they are read."""

    sid: str
    category: str
    cluster: str
    groups: tuple[str, ...]
    gold: str
    criterion: str | None
    replies: list[str] = field(default_factory=list)
    scores: list[dict[str, float]] = field(default_factory=list)
    errored: list[bool] = field(default_factory=list)
    flags: dict[str, dict[str, int]] = field(default_factory=dict)

    def combined(self) -> RunSample:
        """Each score averaged over the epochs that have a finite value of it (NaN if none
        has); errored epochs left out; errored only if every epoch errored."""
        kept = [i for i, e in enumerate(self.errored) if not e]
        scores: dict[str, float] = {}
        # first-seen order (a set's order changes with the hash seed, and so would the output)
        for name in dict.fromkeys(n for i in kept for n in self.scores[i]):
            values = [self.scores[i][name] for i in kept if name in self.scores[i]]
            finite = [v for v in values if math.isfinite(v)]
            scores[name] = math.fsum(finite) / len(finite) if finite else math.nan
        return RunSample(
            id=self.sid,
            category=self.category,
            cluster=self.cluster,
            scores=scores,
            reply=self.replies[kept[0]] if kept else (self.replies[0] if self.replies else ""),
            gold=self.gold,
            errored=not kept,
            criterion=self.criterion,
            groups=self.groups,
            flags={k: dict(v) for k, v in self.flags.items()},
        )


def criterion_of(metadata: Mapping[str, Any]) -> str | None:
    judge = metadata.get("judge")
    if isinstance(judge, Mapping) and judge.get("criterion") is not None:
        return str(judge["criterion"])
    return None


def gold_text(target: Any) -> str:
    if isinstance(target, list):
        return " | ".join(str(t) for t in target)
    return str(target)


def _concerning(raised: Mapping[str, int], value: float, scores: int) -> dict[str, int]:
    """The flags of a scorer's value that concern one of its `scores` numbers, `value`.

    `unscored` concerns only a number the scorer could leave unscored: its only number (a
    judge's verdict, counted 0 or 1), or one it did leave without a value (NaN). A scorer that
    gives several numbers, as the event summary's ROUGE beside its FactScore, leaves only some
    unscored; the others were scored. Every other flag (`unclear`) concerns each number.
    """
    return {
        flag: n
        for flag, n in raised.items()
        if flag != "unscored" or scores == 1 or not math.isfinite(value)
    }


@dataclass
class ScoreReader:
    """Names and kinds the values of one run's scores by the record (the module doc's rule)."""

    record: Benchmark | None
    #: the keys of a scorer's value that are flags (FLAGS and those the log counts only)
    flag_keys: frozenset[str] = FLAGS
    kinds: dict[str, str | None] = field(default_factory=dict)
    judges: dict[str, set[str]] = field(default_factory=dict)
    repeated: dict[str, list[tuple[str, tuple[str | None, ...]]]] = field(default_factory=dict)

    def named(self, scorer: str, value: Any) -> tuple[dict[str, float], dict[str, int]]:
        """(name -> number, flag -> 0/1) of one scorer's value."""
        bare = scorer.rsplit("/", 1)[-1]
        spec, suffix = appended_spec(self.record, bare)  # a re-judge appended to the log
        spec = spec or declared_spec(self.record, bare)
        kind = spec.kind if spec else None
        label = spec.label if spec else bare
        # an appended score is named as Inspect's results name it: a plain one by its scorer
        # (`locomo_f1_scorer1`), a dict-valued one's keys with the scorer's suffix (`judge1`)
        if not isinstance(value, Mapping):
            items, suffix = [(bare if suffix else label, value)], ""
        else:
            items = list(value.items())
        out: dict[str, float] = {}
        flags: dict[str, int] = {}
        for key, raw in items:
            number = as_float(raw)
            if number is None:
                continue
            if key in self.flag_keys:
                flags[str(key)] = int(number) if math.isfinite(number) else 0
                continue
            out[f"{key}{suffix}"] = number
            self.kinds.setdefault(f"{key}{suffix}", kind)
        return out, flags

    def inspect_scores(
        self, sample: EvalSample, category: str
    ) -> tuple[dict[str, float], dict[str, dict[str, int]]]:
        """The numeric scores of one Inspect sample-epoch and each one's flags."""
        values: dict[str, float] = {}
        flags: dict[str, dict[str, int]] = {}
        recorded: dict[str, Any] = {}
        for scorer, score in (sample.scores or {}).items():
            named, raised = self.named(scorer, score.value)
            md = score.metadata or {}
            recorded.update({k: v for k, v in md.items() if k not in recorded})
            for name, number in named.items():
                key = name if name not in values else f"{scorer.rsplit('/', 1)[-1]}.{name}"
                self.kinds.setdefault(key, self.kinds.get(name))
                values[key] = number
                concerned = _concerning(raised, number, len(named))
                if concerned:
                    flags[key] = concerned
                if md.get("grader") is not None:
                    fallback = " (the model under test)" if md.get("grader_fallback") else ""
                    self.judges.setdefault(key, set()).add(f"{md['grader']}{fallback}")
                labels = md.get("judge_labels")
                if isinstance(labels, list) and len(labels) > 1:
                    self.repeated.setdefault(key, []).append((category, tuple(labels)))
        # a declared prompt-size score the task did not log as a score of its own is the size
        # its answer scorer recorded (as the task's own prompt-size metrics read it)
        for spec in self.record.scores if self.record else ():
            if spec.kind == "tokens" and spec.label not in values:
                size = as_float(recorded.get(spec.label))
                if size is not None:
                    values[spec.label] = size
                    self.kinds.setdefault(spec.label, spec.kind)
        return values, flags

    def lm_eval_scores(self, record: Mapping[str, Any], where: str) -> dict[str, float]:
        """The numeric per-document metrics of one lm-eval samples record."""
        metrics = record.get("metrics")
        if not isinstance(metrics, list):
            raise RunError(f"{where}: field 'metrics' (the list of metric names) is missing")
        out: dict[str, float] = {}
        for name in metrics:
            number = as_float(record.get(name))
            if number is None:  # not a per-document number (no value, or an aggregation's pair)
                continue
            # a metric that is a key of a dict-valued score takes that score's kind
            spec = self.record.lm_eval_score(str(name)) if self.record is not None else None
            if self.record is not None and spec is None:
                continue  # not declared: an lm-eval diagnostic of this task
            self.kinds.setdefault(str(name), spec.kind if spec else None)
            out[str(name)] = number
        return out
