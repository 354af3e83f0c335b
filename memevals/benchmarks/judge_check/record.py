"""judge_check's record: what the shared layers read about it (memevals.core.benchmark).

The model under test is the grader here: each sample is one judge prompt of memevals' LoCoMo
criteria around a gold or a wrong answer, scored on whether the verdict gives it credit.
"""

from __future__ import annotations

from memevals.benchmarks.judge_check.data import AUDIT_ANSWER_FILES
from memevals.benchmarks.locomo.audit import AUDIT_FILE
from memevals.benchmarks.locomo.data import LOCOMO_FILE, PAPER_ORDER
from memevals.core.benchmark import ScoreSpec, declare

RECORD = declare(
    __file__,
    name="judge_check",
    # LoCoMo's categories 1-4: adversarial questions have no answer to grade
    categories=tuple(c for c in PAPER_ORDER if c != "adversarial"),
    cluster="conversation",
    legacy_cluster_key="conversation_id",
    label_options={"judge_criteria": "default", "gold": "original"},
    scores=(ScoreSpec("judge_check_scorer", "judge", "accepted"),),
    data=(LOCOMO_FILE, *AUDIT_ANSWER_FILES.values(), AUDIT_FILE),
    inspect_module="memevals.inspect_tasks.judge_check",
)
