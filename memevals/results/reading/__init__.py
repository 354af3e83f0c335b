"""The run reader's parts, by job (memevals.results.runs is its public surface)."""
