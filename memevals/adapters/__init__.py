"""Dataset adapters: pinned download, cache, MEMEVALS_DATA_DIR override, parsing to dataclasses."""

from memevals.adapters._files import DATA_DIR_ENV, DataError, PinnedFile, cache_dir, resolve

__all__ = ["DATA_DIR_ENV", "DataError", "PinnedFile", "cache_dir", "resolve"]
