"""`python -m memevals.lm_eval_tasks` prints the lm-eval include path (for shell substitution)."""

from __future__ import annotations

from memevals.lm_eval_tasks import include_path

if __name__ == "__main__":
    print(include_path())
