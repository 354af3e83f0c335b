"""The run reader, where the tools have always imported it from: `memevals.results.runs` holds
it now (the analysis library); this module re-exports its names for the code and notebooks that
still import them from here."""

from memevals.results.runs import *  # noqa: F403
from memevals.results.runs import __all__ as __all__
