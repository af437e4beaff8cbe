"""The import-format registry (ingest/formats.py): a format is one module and one registry line, and its
name is written in one code module only."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from zettel_amem.ingest import formats
from zettel_amem.ingest.detect import BY_PATH, Probe
from zettel_amem.ingest.turns import Item, ParseProblem, Turn, iter_lines

PACKAGE = Path(__file__).resolve().parents[1] / "zettel_amem"


# -- a throwaway format: tab-separated "speaker<TAB>text" lines ------------------------------------------
def parse_tsv(stream: BinaryIO, default_session: str) -> Iterator[Item]:
    index = 0
    for lineno, line in iter_lines(stream):
        if isinstance(line, ParseProblem) or not line.strip():
            continue
        speaker, _, text = line.partition("\t")
        yield Turn(text, speaker or None, None, default_session, None, index, lineno)
        index += 1


def detect_tsv(probe: Probe) -> int | None:
    return BY_PATH if probe.is_folder_or_suffix(".tsv") and not probe.path.is_dir() else None


def test_a_format_registered_in_one_line_is_detected_and_imported(zk, monkeypatch, tmp_path):
    monkeypatch.setitem(formats.REGISTRY, "tsv", formats.Format("tsv", f"{__name__}:parse_tsv", "streamed",
                                                                f"{__name__}:detect_tsv"))
    log = tmp_path / "chat.tsv"
    log.write_text("Alice\tthe tab-separated knee report\n민수\t내일 강남역에서 만나요\n", encoding="utf-8")
    code, out, err = zk("import", str(log), "--json", "--no-llm")
    assert code == 0, err
    report = __import__("json").loads(out)
    assert report["format"] == "tsv" and report["added"] == 2
    shown = zk("list", "--json").json()
    assert {(n["speaker"], n["content"]) for n in shown} == {("Alice", "the tab-separated knee report"),
                                                            ("민수", "내일 강남역에서 만나요")}
    # `zk import --format`'s help is formats.listed(), read when cli/imports.py is first imported (in a test run
    # that is before this test registers its format), so the registry's listing is what is checked here.
    assert "tsv" in formats.listed()
    # Given by name, it is used whatever the file is called.
    other = tmp_path / "other.txt"
    other.write_text("Bob\tanother line\n", encoding="utf-8")
    assert zk("import", str(other), "--format", "tsv", "--json", "--no-llm").json()["format"] == "tsv"


def test_an_unknown_format_is_one_line_naming_the_registered_ones(zk, tmp_path):
    log = tmp_path / "a.txt"
    log.write_text("hi\n", encoding="utf-8")
    code, _, err = zk("import", str(log), "--format", "csv", "--quiet")  # (the progress bar aside)
    assert code != 0 and len(err.strip().splitlines()) == 1
    assert all(name in err for name in formats.names())


def _meaningful_constants(tree: ast.AST) -> Iterator[ast.Constant]:
    """String constants, but not JSON keys: `obj.get("text")`, `obj["text"]`, `"text" in obj`, {"text": ..}."""
    keys: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "get" and node.args:
            keys.add(id(node.args[0]))
        elif isinstance(node, ast.Subscript):
            keys.add(id(node.slice))
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn) \
                and not isinstance(node.comparators[0], ast.Tuple | ast.List | ast.Set):
            keys.add(id(node.left))
        elif isinstance(node, ast.Dict):
            keys.update(id(k) for k in node.keys if k is not None)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in keys:
            yield node


# The same words with other meanings, each checked by hand: `zk export --format` writes formats of its own
# (cli/imports.py's export), a vault's sync entry has a "text" field, and "text" names a JSON type in a
# model's reply.
OTHER_MEANINGS = {("jsonl", "cli/imports.py"), ("markdown", "cli/imports.py"), ("text", "ingest/vault.py"),
                  ("text", "backends/llm/openai_compat.py")}


def test_each_format_name_is_written_in_one_code_module():
    where: dict[str, set[str]] = {name: set() for name in formats.names()}
    for path in PACKAGE.rglob("*.py"):
        module = path.relative_to(PACKAGE).as_posix()
        for node in _meaningful_constants(ast.parse(path.read_text(encoding="utf-8"))):
            if node.value in where and (node.value, module) not in OTHER_MEANINGS:
                where[node.value].add(module)
    assert where == {name: {"ingest/formats.py"} for name in formats.names()}
