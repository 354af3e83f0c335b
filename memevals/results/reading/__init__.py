"""The run reader's parts, by job (memevals.tools.runs is its public surface)."""
