"""Run a Python command line in this process, as a fresh interpreter would run it (imported by
name: keep this module name unique).

The suite's real-CLI runs (`inspect eval ...` through tests/support/inspect_offline.py or a
scripted provider's script, `python -m lm_eval ...`, `python -m memevals.tools.compare ...`, a
console script such as `memevals-diff`) spend most of their time starting an interpreter and
importing Inspect, lm-eval, torch and memevals, which every pytest worker has already done.
`run` executes the same entry point with `runpy` (the script as `__main__`, or `-m module`), with
the command's argv, working directory and environment, its stdout and stderr captured, and its
exit status taken from SystemExit, and returns what `subprocess.run(..., capture_output=True,
text=True)` would. What is not the same, and why tests that depend on it keep a real process
(`process=True` in cli_support / shared_runs, or `subprocess.run` itself):
- the process: a signal, a kill, an installed-package scan at start-up, or anything a module
  does when first imported (reads the environment, installs an `excepthook`): the worker
  imported it already;
- warnings: shown once per place per test, with a fresh interpreter's default filters.
A command this cannot run in-process (`-c`, another executable) runs as a subprocess.
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import logging
import os
import runpy
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal

__all__ = ["entry_of", "run"]

#: A fresh interpreter's warning filters (python -W default is not set by these commands).
_DEFAULT_FILTERS: tuple[tuple[Literal["default", "ignore"], type[Warning], str | None], ...] = (
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, None),
    ("ignore", PendingDeprecationWarning, None),
    ("ignore", ImportWarning, None),
    ("ignore", ResourceWarning, None),
)


def _output() -> io.TextIOWrapper:
    """A captured stream that is what a pipe is to the program: a file, not a terminal, UTF-8."""
    return io.TextIOWrapper(tempfile.TemporaryFile(), encoding="utf-8", write_through=True)


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    stream.seek(0)
    return stream.read()


def entry_of(cmd: Sequence[str]) -> tuple[str, str, list[str]] | None:
    """What `run` would execute for `cmd`: ("path", script, args) or ("module", name, args).

    Args:
        cmd: the command line.

    Returns:
        The entry, or None for a command that needs its own process (`-c`, a flag before the
        script, an executable that is not this interpreter or one of its console scripts).
    """
    if not cmd:
        return None
    exe = Path(cmd[0])
    if cmd[0] == sys.executable and len(cmd) > 1:
        if cmd[1] == "-m" and len(cmd) > 2:
            return "module", cmd[2], list(cmd[3:])
        if cmd[1].endswith(".py"):
            return "path", cmd[1], list(cmd[2:])
        return None
    if exe.parent == Path(sys.executable).parent and exe.is_file() and exe != Path(sys.executable):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            first = exe.read_text(encoding="utf-8").split("\n", 1)[0]
            if first.startswith("#!") and "python" in first:
                return "path", str(exe), list(cmd[1:])
    return None


@contextlib.contextmanager
def _environment(cwd: Path | str | None, env: Mapping[str, str] | None) -> Iterator[None]:
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_argv = sys.argv[:]
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv[:] = saved_argv


@contextlib.contextmanager
def _fresh_logging() -> Iterator[None]:
    """Logging as a new process starts it: no handler on the root logger (a warning reaches
    stderr through logging's last resort), its default level, and no Inspect or lm-eval log
    handler yet (a run makes its own, on this run's streams); what the worker had comes back
    after.
    """
    root = logging.getLogger()
    saved_root = root.handlers[:], root.level
    try:
        from inspect_ai._util.logger import _logHandler
    except ImportError:
        _logHandler = None  # type: ignore[assignment]
    saved_var = None if _logHandler is None else _logHandler["handler"]
    try:
        import lm_eval.utils as lm_eval_utils
    except ImportError:
        lm_eval_utils = None
    # lm-eval adds its handler, on the stderr of the moment, once per process (a flag)
    saved_flag = None if lm_eval_utils is None else lm_eval_utils._LOGGING_CONFIGURED
    if lm_eval_utils is not None:
        lm_eval_utils._LOGGING_CONFIGURED = False
    named = [logging.getLogger(name) for name in ("inspect_ai", "memevals", "lm_eval")]
    saved_named = [(lg.handlers[:], lg.level, lg.propagate) for lg in named]
    root.handlers = []
    root.setLevel(logging.WARNING)
    for lg in named:
        lg.handlers = []
        lg.setLevel(logging.NOTSET)
        lg.propagate = True
    if _logHandler is not None:
        _logHandler["handler"] = None
    try:
        yield
    finally:
        root.handlers, level = saved_root
        root.setLevel(level)
        for lg, (handlers, lg_level, propagate) in zip(named, saved_named, strict=True):
            lg.handlers = handlers
            lg.setLevel(lg_level)
            lg.propagate = propagate
        if _logHandler is not None:
            _logHandler["handler"] = saved_var
        if lm_eval_utils is not None and saved_flag is not None:
            lm_eval_utils._LOGGING_CONFIGURED = saved_flag


@contextlib.contextmanager
def _path_first(folder: str) -> Iterator[None]:
    saved = sys.path[:]
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        sys.path[:] = saved


@contextlib.contextmanager
def _fresh_inspect_display() -> Iterator[None]:
    """Inspect picks its display (and its type) once per process: a run starts without one, as a
    new process would, and the test's own choice comes back after it."""
    try:
        from inspect_ai._display.core import active
        from inspect_ai.util import _display
    except ImportError:
        yield
        return
    saved = active._active_display, _display._display_type
    active._active_display, _display._display_type = None, None
    try:
        yield
    finally:
        active._active_display, _display._display_type = saved


@contextlib.contextmanager
def _fresh_console_and_excepthook() -> Iterator[None]:
    """A new process's rich console (Inspect reconfigures the global one, `quiet` under
    `--display none`) and its `sys.excepthook` (Python's own; Inspect's CLI installs the one that
    prints a prerequisite error as its message alone, once per process); the worker's come back
    after the run."""
    import rich

    try:
        from inspect_ai._util import error as inspect_error
    except ImportError:
        inspect_error = None  # type: ignore[assignment]
    saved = rich._console, sys.excepthook
    # Inspect's once-per-process flag (absent from an Inspect that installs no hook)
    saved_set = getattr(inspect_error, "_exception_hook_set", None)
    rich._console = None
    sys.excepthook = sys.__excepthook__
    if saved_set is not None:
        inspect_error._exception_hook_set = False
    try:
        yield
    finally:
        rich._console, sys.excepthook = saved
        if saved_set is not None:
            inspect_error._exception_hook_set = saved_set


def _exit_status(code: object, err: io.TextIOBase) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=err)
    return 1


def run(
    cmd: Sequence[str],
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `cmd` in this process when `entry_of` knows it, else as a subprocess.

    Args:
        cmd: the command line (`[sys.executable, script.py, ...]`, `[sys.executable, "-m",
            module, ...]` or a console script of this interpreter).
        cwd: the working directory.
        env: the whole environment (None: this process's).
        timeout: seconds; in-process, a run past it ends the worker with a traceback dump
            (faulthandler), since a running entry point cannot be stopped from outside.

    Returns:
        The finished command, as `subprocess.run(..., capture_output=True, text=True)` returns it.
    """
    entry = entry_of(cmd)
    if entry is None:
        return subprocess.run(
            list(cmd), cwd=cwd, env=None if env is None else dict(env),
            capture_output=True, text=True, timeout=timeout,
        )
    kind, target, args = entry
    out, err = _output(), _output()
    status = 0
    # what the interpreter puts first on sys.path: the script's folder, or for -m the cwd
    first = str(Path(target).resolve().parent) if kind == "path" else str(Path(cwd or "."))
    with (
        _environment(cwd, env),
        _path_first(first),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        _fresh_logging(),
        _fresh_inspect_display(),
        _fresh_console_and_excepthook(),
        warnings.catch_warnings(),
    ):
        warnings.resetwarnings()
        for action, category, module in reversed(_DEFAULT_FILTERS):
            warnings.filterwarnings(action, category=category, module=module or "")
        # runpy's note that `-m`'s module was imported already: true of this worker only
        warnings.filterwarnings(
            "ignore", message=".* found in sys.modules after import of package",
            category=RuntimeWarning,
        )
        warnings.showwarning = _show_on(err)
        if timeout is not None:
            faulthandler.dump_traceback_later(timeout, exit=True)
        try:
            if kind == "module":
                sys.argv[:] = [target, *args]
                runpy.run_module(target, run_name="__main__", alter_sys=True)
            else:
                sys.argv[:] = [target, *args]
                runpy.run_path(target, run_name="__main__")
        except SystemExit as stop:
            status = _exit_status(stop.code, err)
        except Exception as exc:  # what the interpreter does with an uncaught one: its hook, 1
            sys.excepthook(type(exc), exc, exc.__traceback__)
            status = 1
        finally:
            if timeout is not None:
                faulthandler.cancel_dump_traceback_later()
    try:
        return subprocess.CompletedProcess(list(cmd), status, _text(out), _text(err))
    finally:
        out.close()
        err.close()


def _show_on(stream: io.TextIOBase):  # type: ignore[no-untyped-def]
    def show(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
        stream.write(warnings.formatwarning(message, category, filename, lineno, line))

    return show
