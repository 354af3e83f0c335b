"""BEAM's record: what the shared layers read about it (memevals.core.benchmark)."""

from __future__ import annotations

from memevals.benchmarks.beam.data import ABILITIES, pinned_files
from memevals.benchmarks.beam.memory import DEFAULT_CONTEXT_WINDOW, RAG_DEFAULTS
from memevals.benchmarks.beam.samples import MEMEVALS_MAX_TOKENS, TEMPERATURE, BeamOptions
from memevals.core.benchmark import (
    SHARED_SCORES,
    AnalysisAxis,
    JudgeSpec,
    LmEvalGroup,
    LmEvalMetric,
    LmEvalSpec,
    LmEvalTask,
    ScoreSpec,
    declare,
)

#: What the lm-eval group reports (written into its generated YAML).
_GROUP_COMMENT = """\
BEAM: the ten per-ability subtasks of -T/--metadata size (default 100K). lm-eval reports the
prompt size; the rubric scores come from `python -m memevals.tools.judge` on the samples files."""

#: The thin lm-eval module (named, not imported: the framework layer sits above the records).
_LM_EVAL_MODULE = "memevals.lm_eval_tasks.beam.utils"

#: The sample-metadata keys BEAM's rubric judge reads (a post-hoc judge checks them first).
JUDGE_INPUTS: tuple[str, ...] = ("question", "rubric", "category", "protocol")

RECORD = declare(
    __file__,
    name="beam",
    fixed={f"beam_{a}": {"categories": a} for a in ABILITIES},
    categories=ABILITIES,
    # a conversation's questions share its chat and succeed or fail together
    cluster="conversation",
    context_defaults=RAG_DEFAULTS.context_defaults(context_window=DEFAULT_CONTEXT_WINDOW),
    # a run is labelled with a size or protocol other than the options' defaults
    label_options={"size": BeamOptions.size, "protocol": BeamOptions.protocol.name},
    # upstream's report: the mean of the ten ability means
    macro_average="overall",
    # the conversation's length tier (its questions' ability is the category)
    analysis_axes=(AnalysisAxis("size", "conversation size"),),
    scores=(
        ScoreSpec("beam_judge", "judge", "rubric"),
        *SHARED_SCORES,
    ),
    # every question is judged item by item against its own rubric (no shared criterion)
    judge=JudgeSpec(
        inputs=JUDGE_INPUTS,
        criterion=lambda md: "beam_rubric",
        calls=lambda md: len(md["rubric"]),
        calls_note="one per rubric item; an event-ordering answer also makes equivalence calls "
        "(each answer line against the rubric items not yet matched, until one matches), "
        "which depend on the answer and are not counted",
    ),
    # the files whose sha256 is known; every file (1M and 10M too) is pinned by its git blob id
    # in eval.yaml `data` (memevals.benchmarks.beam.data)
    data=pinned_files(),
    lm_eval_group="beam",
    inspect_module="memevals.inspect_tasks.beam",
    lm_eval=LmEvalSpec(
        task_class=f"{_LM_EVAL_MODULE}.BeamTask",
        custom_dataset=f"{_LM_EVAL_MODULE}.beam_docs",
        doc_to_text=f"{_LM_EVAL_MODULE}.doc_to_text",
        process_results=f"{_LM_EVAL_MODULE}.beam_results",
        metric_list=(LmEvalMetric("prompt_tokens", higher_is_better=False),),
        max_gen_toks=MEMEVALS_MAX_TOKENS,
        temperature=TEMPERATURE,
        generation_comment=f"Greedy, up to {MEMEVALS_MAX_TOKENS} tokens under either protocol: "
        "lm-eval always sends a limit\n(max_gen_toks). Upstream's reader sends none, and so "
        "does the Inspect task under\nprotocol=official; under memevals the Inspect task's limit "
        "is this one.",
        comment="BEAM is judged: run lm_eval with --log_samples (and --apply_chat_template, so "
        "the replayed\nchat reaches the model as messages), then `python -m memevals.tools.judge`.",
        tasks=tuple(LmEvalTask(f"beam_{a}", {"categories": a}) for a in ABILITIES),
        groups=(
            LmEvalGroup(
                "beam",
                tuple(f"beam_{a}" for a in ABILITIES),
                aggregate=("prompt_tokens",),
                comment=_GROUP_COMMENT,
            ),
        ),
    ),
    scoring_module="memevals.benchmarks.beam.scoring",
    scorers=("beam_event_order",),
)
