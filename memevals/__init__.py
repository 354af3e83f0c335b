"""memevals: long-term conversational-memory benchmarks for Inspect AI and lm-evaluation-harness."""

__version__ = "0.1.0"
