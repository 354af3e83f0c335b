"""Locating benchmark files: MEMEVALS_DATA_DIR / data_dir override, else a verified per-user cache.

Every file we read is pinned by URL and sha256, so a number computed today can be recomputed
on the same bytes later. Nothing falls back silently: a missing override or a bad checksum is
an error that says which file and what to do.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CACHE_DIR_ENV",
    "DATA_DIR_ENV",
    "DataError",
    "PinnedFile",
    "cache_dir",
    "cached_download",
    "data_dir_file",
    "download",
    "override_dir",
    "resolve",
    "sha256_of",
    "without_data_dir",
]

DATA_DIR_ENV = "MEMEVALS_DATA_DIR"
CACHE_DIR_ENV = "MEMEVALS_CACHE_DIR"


class DataError(ValueError):
    """A benchmark file is missing, corrupt or does not match its schema."""

    def __init__(
        self,
        message: str,
        *,
        file: str | os.PathLike[str] | None = None,
        record: str | None = None,
        field: str | None = None,
    ) -> None:
        self.file = str(file) if file is not None else None
        self.record = record
        self.field = field
        where = []
        if self.file:
            where.append(f"file {self.file}")
        if record:
            where.append(f"record {record}")
        if field:
            where.append(f"field '{field}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


@dataclass(frozen=True)
class PinnedFile:
    """A file identified by its place under the data dir, its pinned URL and its digest."""

    relpath: str
    url: str
    sha256: str
    size: int | None = None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_dir() -> Path:
    """Per-user cache (override with MEMEVALS_CACHE_DIR)."""
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "memevals"


def override_dir(data_dir: str | os.PathLike[str] | None) -> Path | None:
    """The data dir to read from (`data_dir`, else MEMEVALS_DATA_DIR), or None: use the cache."""
    if data_dir is not None and str(data_dir) != "":
        return Path(data_dir).expanduser()
    env = os.environ.get(DATA_DIR_ENV)
    return Path(env).expanduser() if env else None


def data_dir_file(override: Path, relpath: str, url: str) -> Path:
    """`<override>/<relpath>`, which must exist: nothing is ever downloaded into a data dir."""
    path = override / relpath
    if not path.is_file():
        raise DataError(
            f"not found under the data dir {override}. {_data_dir_fix(override, relpath, url)}",
            file=path,
        )
    return path


def _data_dir_fix(override: Path, relpath: str, url: str) -> str:
    """What to do about a file missing from the data dir, for where that dir came from: the
    data_dir option (which takes precedence) or MEMEVALS_DATA_DIR."""
    if _from_env(override):
        return (
            f"The dir is {DATA_DIR_ENV}: put the pinned file at {relpath} in it, point "
            f"{DATA_DIR_ENV} at the folder that holds {relpath}, or "
            f"{without_data_dir(override, url)}."
        )
    return (
        f"The dir is the data_dir option: put the pinned file at {relpath} in it, give "
        f"data_dir the folder that holds {relpath}, or {without_data_dir(override, url)}."
    )


def _from_env(override: Path) -> bool:
    """Whether the data dir in use is MEMEVALS_DATA_DIR's (else the data_dir option gave it)."""
    env = os.environ.get(DATA_DIR_ENV)
    return bool(env) and Path(str(env)).expanduser() == override


def without_data_dir(override: Path, url: str) -> str:
    """How to stop reading a data dir, for the end of an error about a file in it.

    Args:
        override: the data dir in use (from the data_dir option or MEMEVALS_DATA_DIR).
        url: where the file is downloaded from without a data dir.

    Returns:
        "unset MEMEVALS_DATA_DIR ..." or "leave data_dir out ...", naming what is then read.
    """
    if _from_env(override):
        return f"unset {DATA_DIR_ENV} to download {url} into the cache"
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return f"leave data_dir out to read {DATA_DIR_ENV}={env}"
    return f"leave data_dir out to download {url} into the cache"


def _verify(path: Path, pinned: PinnedFile, *, how_to_fix: str) -> None:
    actual = sha256_of(path)
    if actual != pinned.sha256:
        raise DataError(
            f"sha256 is {actual}, expected {pinned.sha256} (the pinned release). {how_to_fix}",
            file=path,
        )


def _cache_error(dest: Path, exc: OSError) -> DataError:
    return DataError(
        f"cannot write the cache ({exc.strerror or exc}). Free space or make {dest.parent} "
        f"writable, set {CACHE_DIR_ENV} to another folder, or point {DATA_DIR_ENV} (or "
        "-T data_dir=) at a folder that already holds the file.",
        file=dest,
    )


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def download(
    url: str,
    dest: Path,
    *,
    timeout: float = 60.0,
    verify: Callable[[Path], str | None] | None = None,
) -> None:
    """Fetch `url` into `dest` atomically: a temporary file in the same folder, flushed to disk,
    checked by `verify` (which returns an error message or None), then renamed over `dest`.

    A reader never sees a partial or unverified file at `dest`. Network failures raise OSError;
    a cache that cannot be written (read-only, full) and a failed check raise DataError.
    """
    if not url.startswith("https://"):
        raise DataError(f"refusing to download over a non-HTTPS URL: {url}", file=dest)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
    except OSError as exc:
        raise _cache_error(dest, exc) from exc
    tmp = Path(tmp_name)
    try:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                while True:
                    try:
                        block = resp.read(1 << 20)
                    except http.client.HTTPException as exc:  # e.g. IncompleteRead
                        raise OSError(f"broken HTTP response: {exc!r}") from exc
                    if not block:
                        break
                    try:
                        _write_all(fd, block)
                    except OSError as exc:
                        raise _cache_error(dest, exc) from exc
            try:
                os.fsync(fd)
            except OSError as exc:
                raise _cache_error(dest, exc) from exc
        finally:
            os.close(fd)
        problem = verify(tmp) if verify is not None else None
        if problem:
            raise DataError(problem, file=dest)
        try:
            os.replace(tmp, dest)
        except OSError as exc:
            raise _cache_error(dest, exc) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def resolve(
    pinned: PinnedFile, data_dir: str | os.PathLike[str] | None = None, *, also: str = ""
) -> Path:
    """Return a verified local path for `pinned`.

    With `data_dir` (or MEMEVALS_DATA_DIR) the file must be at `<dir>/<relpath>` and nothing is
    downloaded. Otherwise the cache is used, downloading once; a cached file with a wrong
    checksum is fetched again, a fresh download with a wrong checksum is an error.

    Args:
        pinned: the file.
        data_dir: the data dir (default MEMEVALS_DATA_DIR, else the cache).
        also: another fix for a data-dir file whose checksum differs (e.g. a benchmark's
            option to read it unverified), named in that error beside the others.

    Returns:
        The verified local path.
    """
    override = override_dir(data_dir)
    if override is not None:
        path = data_dir_file(override, pinned.relpath, pinned.url)
        _verify(
            path,
            pinned,
            how_to_fix=f"Replace it with the pinned file from {pinned.url}, "
            f"{also + ', ' if also else ''}or {without_data_dir(override, pinned.url)}.",
        )
        return path

    path = cache_dir() / pinned.relpath
    if path.is_file():
        try:
            if sha256_of(path) == pinned.sha256:
                return path
        except OSError as exc:
            raise DataError(f"cannot read the cached file ({exc})", file=path) from exc
        # a corrupt cache entry is never used: a verified download replaces it below

    def mismatch(tmp: Path) -> str | None:
        actual = sha256_of(tmp)
        if actual == pinned.sha256:
            return None
        return (
            f"downloaded sha256 {actual} does not match the pinned {pinned.sha256}; the file "
            f"was removed. Check your network or proxy, or place the pinned file under "
            f"{DATA_DIR_ENV}."
        )

    return cached_download(pinned.url, pinned.relpath, verify=mismatch)


def cached_download(
    url: str,
    relpath: str,
    *,
    verify: Callable[[Path], str | None],
    timeout: float = 60.0,
) -> Path:
    """`download` into `<cache>/<relpath>`; a network failure becomes a DataError that says how
    to run without network (a rejected file is already one)."""
    path = cache_dir() / relpath
    try:
        download(url, path, timeout=timeout, verify=verify)
    except OSError as exc:
        raise DataError(
            f"could not download {url} ({exc}). Without network, point "
            f"{DATA_DIR_ENV} (or -T data_dir=) at a folder holding {relpath}.",
            file=path,
        ) from exc
    return path
