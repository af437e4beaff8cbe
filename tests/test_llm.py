"""The llama.cpp backend's load path (no model needed): the AMX guard and clear load errors."""

from __future__ import annotations

import pytest

from zettel_amem.backends.llm import LLMError


def test_models_load_without_extra_buffer_types(monkeypatch, tmp_path):
    import llama_cpp
    import llama_cpp.llama_cpp as low

    from zettel_amem.backends.llm import llama

    seen: dict = {}

    class RecordingLlama:  # stands in for llama_cpp.Llama: what would the real constructor get?
        def __init__(self, path, **kwargs):
            seen["use_extra_bufts"] = low.llama_model_default_params().use_extra_bufts
            seen["kwargs"] = kwargs

    monkeypatch.setattr(llama_cpp, "Llama", RecordingLlama)
    llama._load_llama(tmp_path / "model.gguf", 512, 2, 0)
    assert seen["use_extra_bufts"] is False  # the AMX path that segfaults native builds is off
    assert seen["kwargs"]["n_threads"] == 2 and seen["kwargs"]["seed"] == 0
    assert low.llama_model_default_params().use_extra_bufts is True  # restored after the load


def test_a_load_failure_is_an_llm_error(monkeypatch, tmp_path):
    import llama_cpp

    from zettel_amem.backends.llm import llama

    def failing(path, **kwargs):
        raise ValueError("Failed to load model from file")

    monkeypatch.setattr(llama_cpp, "Llama", failing)
    with pytest.raises(LLMError, match="cannot load model"):
        llama.LlamaCppLLM(tmp_path / "model.gguf")


def test_bundled_model_is_joined_verified_and_rechecked(monkeypatch, tmp_path):
    import hashlib

    from zettel_amem.backends.llm import bundled

    parts = [tmp_path / f"part{i:02d}.bin" for i in range(3)]
    for i, part in enumerate(parts):
        part.write_bytes(bytes([i]) * 1000)
    whole = b"".join(p.read_bytes() for p in parts)
    monkeypatch.setenv("ZK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(bundled, "_qwen_chunks", lambda: parts)
    monkeypatch.setattr(bundled, "QWEN_SIZE", len(whole))
    monkeypatch.setattr(bundled, "QWEN_SHA256", hashlib.sha256(whole).hexdigest())
    path = bundled.qwen_path()
    assert path.read_bytes() == whole and path.with_suffix(".gguf.sha256").exists()
    # A cached file of the right size but damaged, with its marker lost: found and joined again.
    path.write_bytes(b"\x00" * len(whole))
    path.with_suffix(".gguf.sha256").unlink()
    assert bundled.qwen_path().read_bytes() == whole
    monkeypatch.setattr(bundled, "QWEN_SHA256", "0" * 64)  # chunks that do not match: refused
    path.unlink()
    with pytest.raises(Exception, match="checksum"):
        bundled.qwen_path()
