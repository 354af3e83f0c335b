"""Renderers of results: each takes the analysis library's objects (`memevals.results`) and
renders them as Markdown, CSV, JSON, a chart or text; none reads runs or parses a command line."""
