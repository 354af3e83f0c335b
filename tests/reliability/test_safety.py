"""Safety: no code execution or unpickling of data, downloads only from the pinned HTTPS
locations, and file names never taken from the data.

The source scan works on the AST of every module under memevals/ (comments and docstrings
cannot trigger it, aliases cannot hide from it), and is itself tested on a snippet that contains
each forbidden pattern, so it cannot pass by finding nothing.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from urllib.parse import urlparse

import pytest
from inspect_ai import eval
from inspect_ai.model import get_model
from reliability_figures import count

from memevals.benchmarks.locomo.audit import AUDIT_FILE
from memevals.benchmarks.locomo.data import LOCOMO_FILE
from memevals.benchmarks.locomo_plus.data import LOCOMO_PLUS_FILE
from memevals.benchmarks.longmemeval.data import FILES, REVISION
from memevals.core.files import DataError, download

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "memevals"
FIXTURES = REPO / "tests" / "fixtures"

UNSAFE_MODULES = {
    "pickle",
    "_pickle",
    "cPickle",
    "marshal",
    "shelve",
    "dill",
    "cloudpickle",
    "joblib",
}
CODE_BUILTINS = {"eval", "exec", "compile", "__import__"}
SAFE_YAML_LOADERS = {"SafeLoader", "CSafeLoader", "BaseLoader", "CBaseLoader"}
NETWORK_CALLS = {"urlopen", "urlretrieve", "Request"}
NETWORK_MODULES = {"requests", "httpx", "aiohttp", "urllib3", "http.client", "socket", "ftplib"}
#: Where network access is allowed, and why.
NETWORK_ALLOWED = {
    "memevals/core/files.py": "the pinned, checksum-verified dataset downloads",
    "memevals/inspect_tasks/images.py": "locomo_dialogue -T images=true fetches the "
    "photos named by the (checksum-pinned) LoCoMo file",
    "memevals/memory_systems/endpoint.py": "the memory system's own LLM endpoint (the user's "
    "llm_base_url), checked with one small request per need before ingesting",
}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def _kw(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def scan(source: str, rel: str) -> list[str]:
    """Findings (one line each) for unsafe patterns in `source`."""
    tree = ast.parse(source)
    findings: list[str] = []
    # names the module binds itself (e.g. `from inspect_ai import eval`) are not the builtins
    bound = {
        alias.asname or alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    } | {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    network_ok = rel in NETWORK_ALLOWED
    for node in ast.walk(tree):
        where = f"{rel}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for module in modules:
                if module.split(".")[0] in UNSAFE_MODULES:
                    findings.append(f"{where}: imports {module}")
                if not network_ok and (
                    module in NETWORK_MODULES or module.split(".")[0] in NETWORK_MODULES
                ):
                    findings.append(f"{where}: network module {module}")
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        last = name.rsplit(".", 1)[-1]
        if name in CODE_BUILTINS and name not in bound:
            findings.append(f"{where}: calls {name}()")
        if name.startswith("yaml.") and last in {"load", "load_all"}:
            loader = _kw(node, "Loader")
            if loader is None or _dotted(loader).rsplit(".", 1)[-1] not in SAFE_YAML_LOADERS:
                findings.append(f"{where}: {name} without a safe Loader")
        if name.startswith("yaml.") and last in {"unsafe_load", "full_load", "unsafe_load_all"}:
            findings.append(f"{where}: {name}")
        if _is_true(_kw(node, "shell")):
            findings.append(f"{where}: {name}(shell=True)")
        if name in {"os.system", "os.popen", "os.execv", "os.execvp", "pty.spawn"}:
            findings.append(f"{where}: {name}()")
        if (
            last == "load"
            and name.split(".")[0] == "torch"
            and not _is_true(_kw(node, "weights_only"))
        ):
            findings.append(f"{where}: {name} without weights_only=True")
        if (
            last == "load"
            and name.split(".")[0] in {"np", "numpy"}
            and _is_true(_kw(node, "allow_pickle"))
        ):
            findings.append(f"{where}: {name}(allow_pickle=True)")
        if last in {"extractall", "extract"}:
            findings.append(f"{where}: archive {last}()")
        if _is_true(_kw(node, "trust_remote_code")):
            findings.append(f"{where}: trust_remote_code=True")
        if not network_ok and last in NETWORK_CALLS and "urllib" in name:
            findings.append(f"{where}: network call {name}")
    return findings


UNSAFE_SNIPPET = """
import pickle
import marshal as m
from dill import loads
import requests
import yaml, subprocess, os, torch, numpy as np, tarfile
eval("1")
exec("x = 1")
__import__("os")
yaml.load(open("f"))
yaml.load(open("f"), Loader=yaml.FullLoader)
yaml.unsafe_load("x")
subprocess.run("ls", shell=True)
os.system("ls")
torch.load("w.pt")
np.load("a.npy", allow_pickle=True)
tarfile.open("a.tar").extractall()
AutoModel.from_pretrained("x", trust_remote_code=True)
urllib.request.urlopen("https://example.org")
"""

SAFE_SNIPPET = """
from inspect_ai import eval
import yaml, subprocess, torch, numpy as np
eval(task)  # Inspect's eval, imported by name
yaml.safe_load("x")
yaml.load("x", Loader=yaml.SafeLoader)
subprocess.run(["ls"], check=True)
torch.load("w.pt", weights_only=True)
np.load("a.npy")
"""


def test_the_scanner_finds_every_pattern() -> None:
    findings = scan(UNSAFE_SNIPPET, "memevals/x.py")
    expected = [
        "imports pickle", "imports marshal", "imports dill", "network module requests",
        "calls eval()", "calls exec()", "calls __import__()",
        "yaml.load without a safe Loader", "yaml.unsafe_load", "subprocess.run(shell=True)",
        "os.system()", "torch.load without weights_only=True", "np.load(allow_pickle=True)",
        "archive extractall()", "trust_remote_code=True", "network call urllib.request.urlopen",
    ]  # fmt: skip
    for what in expected:
        assert any(f.endswith(what) for f in findings), (what, findings)
    assert len([f for f in findings if "yaml.load without" in f]) == 2
    assert scan(SAFE_SNIPPET, "memevals/x.py") == []


def test_memevals_source_has_no_unsafe_pattern() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 30
    findings = [
        f
        for path in files
        for f in scan(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    ]
    assert findings == []
    count("source files scanned", len(files))


def test_lm_eval_yaml_has_no_python_tags() -> None:
    """lm-eval reads our YAML with its own loader, which resolves `!function` tags: every such
    tag must name a function of our own lm-eval modules (the shared `documents`, `clustered_stderr`
    and `declared`, or the folder's own `utils`) or, on a `class:` line, our task class; no other
    tag may appear."""
    tags: list[str] = []
    classes: set[str] = set()
    for path in sorted((PACKAGE / "lm_eval_tasks").rglob("*.yaml")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if "!" in line:
                for tag in re.findall(r"!(\S+)\s+(\S+)", line):
                    tags.append(f"{path.name}: !{tag[0]} {tag[1]}")
                    assert tag[0] == "function", (path, line)
                    if line.startswith("class:"):  # the task class every base names
                        classes.add(tag[1])
                        continue
                    shared = "documents|clustered_stderr|declared"
                    own = rf"memevals\.lm_eval_tasks\.({shared}|{path.parent.name}\.utils)\.\w+"
                    assert re.fullmatch(own, tag[1]), line
                assert "!!python" not in line, (path, line)
    assert tags, "expected the task YAML to reference utils functions"
    # the task classes are ours: the shared one, or BEAM's built on it
    assert classes == {
        "memevals.lm_eval_tasks.task_class.MemevalsTask",
        "memevals.lm_eval_tasks.beam.utils.BeamTask",
    }, classes


# -- downloads ----------------------------------------------------------------------------------

PINNED_HOSTS = {"raw.githubusercontent.com", "huggingface.co"}


def _pins() -> dict[str, tuple[str, str, str | None]]:
    """name -> (url, relpath, sha256) of every file memevals may download."""
    pins = {
        "locomo": (LOCOMO_FILE.url, LOCOMO_FILE.relpath, LOCOMO_FILE.sha256),
        "locomo_plus": (LOCOMO_PLUS_FILE.url, LOCOMO_PLUS_FILE.relpath, LOCOMO_PLUS_FILE.sha256),
        "locomo_audit": (AUDIT_FILE.url, AUDIT_FILE.relpath, AUDIT_FILE.sha256),
    }
    for variant, spec in FILES.items():
        pins[f"longmemeval {variant}"] = (spec.url, spec.relpath, spec.sha256)
    return pins


def test_every_download_is_pinned_https_on_the_expected_hosts() -> None:
    for name, (url, _, sha256) in _pins().items():
        parsed = urlparse(url)
        assert parsed.scheme == "https", name
        assert parsed.hostname in PINNED_HOSTS, (name, parsed.hostname)
        assert not parsed.query and not parsed.fragment and "@" not in parsed.netloc, name
        # a fixed revision, never a branch name that can move
        assert re.search(r"/[0-9a-f]{40}/", parsed.path), (name, url)
        assert sha256 is None or re.fullmatch(r"[0-9a-f]{64}", sha256), name
    assert REVISION in FILES["m"].url
    # only the LongMemEval oracle and M files lack a published digest (size-checked instead)
    assert sorted(n for n, (_, _, sha) in _pins().items() if sha is None) == [
        "longmemeval m",
        "longmemeval oracle",
    ]


def test_pinned_files_are_only_declared_in_the_data_modules() -> None:
    """A new download location cannot slip in elsewhere: every PinnedFile / LongMemEvalFile is
    built in a benchmark's data module with literal arguments."""
    places = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _dotted(node.func) in {
                "PinnedFile",
                "LongMemEvalFile",
            }:
                places.append(str(path.relative_to(REPO)))
    assert set(places) <= {
        "memevals/benchmarks/judge_check/data.py",
        "memevals/benchmarks/locomo/data.py",
        "memevals/benchmarks/locomo/audit.py",
        "memevals/benchmarks/locomo_plus/data.py",
        "memevals/benchmarks/longmemeval/data.py",
        "memevals/benchmarks/beam/data.py",
        # an upstream source file's pin (repository, commit, path, sha256) as a data file
        "memevals/core/upstream.py",
    }, places


@pytest.mark.parametrize(
    "url",
    [
        "http://raw.githubusercontent.com/x/y/z.json",
        "ftp://example.org/z.json",
        "file:///etc/passwd",
        "HTTPS://example.org/z.json",
        "//example.org/z.json",
    ],
)
def test_download_refuses_anything_but_https(tmp_path: Path, url: str) -> None:
    with pytest.raises(DataError, match="non-HTTPS"):
        download(url, tmp_path / "z.json")
    assert list(tmp_path.iterdir()) == []
    count("non-HTTPS downloads refused")


# -- file names ---------------------------------------------------------------------------------


def test_cache_and_data_paths_are_fixed_relative_paths(tmp_path: Path) -> None:
    for name, (_, relpath, _) in _pins().items():
        assert not Path(relpath).is_absolute() and ".." not in Path(relpath).parts, name
        assert (tmp_path / relpath).resolve().is_relative_to(tmp_path.resolve()), name
        assert re.fullmatch(r"[a-z_]+/[a-z0-9_.]+\.json", relpath), (name, relpath)
    assert LOCOMO_FILE.relpath == "locomo/locomo10.json"


HOSTILE = [
    "../../escaped",
    "/tmp/memevals-escaped",
    "..\\..\\escaped",
    "logs/../../escaped",
    "~/escaped",
    "CON",
]


def test_ids_from_the_data_never_become_file_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LongMemEval ids that look like paths go through loading, prompting, the model, the judge
    and the log: the only file written is the log, where we asked for it. (An id with a control
    character is refused when the file is read; see test_corrupt_data.)"""
    import faulty_model  # noqa: F401  (registers the faulty/ provider)

    from memevals.inspect_tasks.longmemeval import longmemeval

    data = json.loads(
        (FIXTURES / "longmemeval" / "longmemeval_oracle.json").read_text(encoding="utf-8")
    )
    for i, hostile in enumerate(HOSTILE):
        inst = data[i]
        suffix = "_abs" if "_abs" in inst["question_id"] else ""
        inst["question_id"] = hostile + suffix
        old_ids = inst["haystack_session_ids"]
        new_ids = [f"{hostile}/{j}" for j in range(len(old_ids))]
        inst["answer_session_ids"] = [
            new_ids[old_ids.index(a)] for a in inst["answer_session_ids"] if a in old_ids
        ]
        inst["haystack_session_ids"] = new_ids
    work = tmp_path / "work" / "deep" / "cwd"
    (work / "data" / "longmemeval").mkdir(parents=True)
    (work / "data" / "longmemeval" / "longmemeval_oracle.json").write_text(
        json.dumps(data), encoding="utf-8"
    )
    monkeypatch.chdir(work)
    before = {p for p in tmp_path.rglob("*")}
    [log] = eval(
        longmemeval(
            variant="oracle",
            data_dir=str(work / "data"),
            context="rag",
            top_k=2,
            protocol="memevals",  # the faulty judge answers our JSON verdict prompt
        ),
        model=get_model("faulty/answerer"),
        model_roles={"grader": get_model("faulty/judge", judge=True)},
        log_dir=str(work / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    hostile_ids = {inst["question_id"] for inst in data[: len(HOSTILE)]}
    assert {str(s.id) for s in log.samples or []} >= hostile_ids
    created = {p for p in tmp_path.rglob("*")} - before
    assert created and all(p.is_relative_to(work / "logs") for p in created), sorted(created)
    assert not Path("/tmp/memevals-escaped").exists()
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "work" / "escaped").exists()
    count("hostile ids run end to end", len(HOSTILE))
