"""Each CONTRIBUTING.md recipe, performed with a dummy on a copy of the package: the dummy is wired in
(the running code sees it) and every size limit still holds. An extension point has room to grow: adding
one more item must not push a function or class over its limit, or touch a function that grows."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_code_shape import too_long

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A copy of the checkout's package, templates and pyproject (the templates are found as in a checkout)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.js")
    shutil.copytree(ROOT / "zettel_amem", tmp_path / "zettel_amem", ignore=ignore)
    shutil.copytree(ROOT / "templates", tmp_path / "templates", ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def insert(path: Path, anchor: str, text: str, after: bool = True) -> None:
    """Put `text` right after (or before) the one place `anchor` is written in `path`."""
    source = path.read_text(encoding="utf-8")
    assert source.count(anchor) == 1, f"the recipe's anchor {anchor!r} is not written once in {path.name}"
    at = source.index(anchor) + (len(anchor) if after else 0)
    path.write_text(source[:at] + text + source[at:], encoding="utf-8")


def run(checkout: Path, code: str, *env_pairs: tuple[str, str]) -> str:
    """Python code run on the copy (a fresh interpreter: what the recipe changed is what it imports)."""
    env = {**os.environ, "PYTHONPATH": str(checkout), **dict(env_pairs)}
    done = subprocess.run([sys.executable, "-c", code], cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def limits_hold(checkout: Path) -> None:
    assert too_long(checkout / "zettel_amem") == []


def wired_in(checkout: Path, expected: list[str], *statements: str) -> None:
    """The statements, run on the copy, print the expected lines; and every limit still holds."""
    assert run(checkout, "\n".join(statements)).splitlines() == expected
    limits_hold(checkout)


def test_add_an_import_format(checkout):
    package = checkout / "zettel_amem" / "ingest"
    (package / "dummy_log.py").write_text('''"""A dummy format: one turn per line, "who|what"."""

from __future__ import annotations

from .turns import Turn


def parse_dummy_log(stream, default_session):
    for index, raw in enumerate(stream):
        speaker, _, text = raw.decode("utf-8").strip().partition("|")
        if text:
            yield Turn(text, speaker or None, None, default_session, None, index, index + 1)


def detect(probe):
    return None
''', encoding="utf-8")
    insert(package / "formats.py", '    Format("markdown", ', '    Format("dummy_log", ".dummy_log:parse_dummy_log", '
           'STREAMED, ".dummy_log:detect"),\n', after=False)
    wired_in(checkout, ["dummy_log", "Ann 안녕"],
             "import io; from zettel_amem.ingest import formats as f; fmt = f.get('dummy_log')",
             "print(f.names()[-2])",
             "turns = list(f._load(fmt.parser)(io.BytesIO('Ann|안녕\\n'.encode()), 's1'))",
             "print(turns[0].speaker, turns[0].text)")


def test_add_a_setting(checkout):
    config = checkout / "zettel_amem" / "core" / "config.py"
    insert(config, "    max_links: int = ranged(5, 0, 50)  # outgoing links per note\n",
           "    dummy_cap: int = ranged(3, 0, 10)  # a dummy cap\n")
    home = checkout / "home"
    home.mkdir()
    code = ("from pathlib import Path; from zettel_amem.core.config import Settings; "
            "from zettel_amem.core.errors import InvalidInput\n"
            "try:\n    print(Settings.load(Path('home')).dummy_cap)\n"
            "except InvalidInput as exc:\n    print(exc)")
    (home / "config.toml").write_text("dummy_cap = 7\n", encoding="utf-8")
    assert run(checkout, code).strip() == "7"
    (home / "config.toml").write_text("dummy_cap = 11\n", encoding="utf-8")
    assert run(checkout, code).strip().endswith("config.toml: must be between 0 and 10")
    limits_hold(checkout)


def test_add_an_mcp_tool(checkout):
    tools = checkout / "zettel_amem" / "mcp" / "tools.py"
    tools.write_text(tools.read_text(encoding="utf-8") + '''

@tool("How many notes the notebook holds.")
def note_count(zk: ZkTools) -> SearchOut:
    return SearchOut(episodes=[], notes=[])
''', encoding="utf-8")
    out = run(checkout, "import asyncio, json; from zettel_amem.mcp.server import build_server; "
                        "server = build_server('home', 'default'); "
                        "print(json.dumps([t.name for t in asyncio.run(server.list_tools())]))",
              ("ZK_NO_WORKER", "1"))
    assert json.loads(out.strip().splitlines()[-1])[-1] == "note_count"
    limits_hold(checkout)


def test_add_a_question_kind(checkout):
    answering = checkout / "zettel_amem" / "answering"
    insert(answering / "questions.py", '    ("now", _NOW),\n',
           '    ("where", re.compile(r"어디|\\bwhere\\b", re.I)),\n', after=False)
    insert(answering / "journal_answer.py", "ANSWERERS: dict[str, Answerer] = {\n", '    "where": answer_where,\n')
    answerer = 'def answer_where(question, evidence):\n    return "somewhere", []\n\n\n'
    insert(answering / "journal_answer.py", "ANSWERERS: dict[str, Answerer] = {\n", answerer, after=False)
    wired_in(checkout, ["where where", "somewhere"],
             "from zettel_amem.answering.questions import analyse, kind_of",
             "from zettel_amem.answering.journal_answer import answer_one",
             "print(kind_of('Where did I run now?'), kind_of('지금 어디서 달려?'))",
             "print(answer_one(analyse('Where did I run?'), [])[0])")


def test_add_a_command(checkout):
    cli = checkout / "zettel_amem" / "cli"
    (cli / "browse.py").write_text((cli / "browse.py").read_text(encoding="utf-8") + '''

def hello(name: str = typer.Argument(..., help="Who to greet."), as_json: bool = JSON_OPT) -> None:
    """Greet someone (a dummy command)."""
    from . import render

    render.print_json({"hello": name}) if as_json else render.console.print(f"안녕, {render.escape(name)}")
''', encoding="utf-8")
    insert(cli / "__init__.py", '    ("stats", browse.stats),\n', '    ("hello", browse.hello),\n')
    out = run(checkout, "import sys; sys.argv = ['zk', '--help']; from zettel_amem.cli import main; main()")
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("  ") and line.split()]
    assert listed.index("stats") + 1 == listed.index("hello") == listed.index("completion") - 1
    assert run(checkout, "import sys; sys.argv = ['zk', 'hello', '민지', '--json']; "
                         "from zettel_amem.cli import main; main()").strip() == '{\n  "hello": "민지"\n}'
    limits_hold(checkout)
