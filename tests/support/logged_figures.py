"""A run's logged figures by score key and figure name, as tests compare them.

A dict-valued score's metrics are `keyed` list metrics (memevals.inspect_tasks.metrics): one
result per scorer, whose rows log the key, the figures and the naming (`lead`) in their params.
`figures` reads each row back to (key, figure): `("judge", "mean")`, `("unscored", "count")`,
`("rouge1", "stderr")`, a `*` scorer's `("recall_all@5", "mean")`; any other result's rows are
(result name, row name).
"""

from __future__ import annotations

from inspect_ai.log import EvalLog, EvalMetric


def is_count(m: EvalMetric) -> bool:
    """Whether a logged row is a count: a `count` metric's, or a keyed key counted only."""
    return m.name.rsplit("/", 1)[-1] == "count" or (m.params or {}).get("figures") == ["count"]


def _figure(row: str, key: str, figures: list[str], lead: bool) -> str:
    if lead:
        return row
    if row == key:
        return "count" if figures == ["count"] else figures[0]
    return row[len(key) + 1 :] if row.startswith(f"{key}_") else row


def _starred(row: str, figures: list[str]) -> tuple[str, str]:
    for name in figures[1:]:
        if row.endswith(f"_{name}"):
            return row[: -len(name) - 1], name
    return row, figures[0]


def figures(log: EvalLog, scorer: str | None = None) -> dict[tuple[str, str], float]:
    """Every logged figure of `log`, keyed (score key, figure).

    Args:
        log: a finished run.
        scorer: only that scorer's results (a run with an appended re-judge holds two results
            with a `judge` key: `llm_judge` and `llm_judge1`).

    Returns:
        (key, figure) -> value.
    """
    assert log.results is not None, log.error
    out: dict[tuple[str, str], float] = {}
    for score in log.results.scores:
        if scorer is not None and score.scorer != scorer:
            continue
        for row, m in score.metrics.items():
            params = m.params or {}
            if m.group == "keyed" and "key" in params:
                key, names = str(params["key"]), list(params["figures"])
                if key == "*":  # every key of the scores, each prefixed: split by figure name
                    key, figure = _starred(row, names)
                else:
                    figure = _figure(row, key, names, bool(params["lead"]))
                out[(key, figure)] = m.value
            else:
                out[(score.name, row)] = m.value
    return out
