"""`zk graph --html FILE`: one offline page with notes, links and entities, rendered by a real browser
(headless Chromium, started here; skipped with the reason when it is not installed)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

import pytest

from tests.test_vault import journal, zk  # noqa: F401 - fixtures: a small journal with links and entities

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def page_data(page: str) -> dict:
    raw = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S).group(1)
    return json.loads(raw.replace("<\\/", "</").replace("<\\!--", "<!--"))


def test_page_is_self_contained_and_holds_the_graph(zk, journal, tmp_path):  # noqa: F811
    target = tmp_path / "graph.html"
    code, out, err = zk("graph", "--html", str(target), "--json")
    assert code == 0, err
    summary = json.loads(out)
    page = target.read_text(encoding="utf-8")
    notes = journal.store.notes()
    assert summary["notes"] == len(notes) == 7 and summary["entities"] >= 2 and summary["links"] >= 1
    assert "vis-network" in page and "<script src" not in page and "https://cdn" not in page
    assert not re.search(r"<(link|img|iframe)[^>]+(href|src)=\"https?:", page)  # nothing fetched from the net
    data = page_data(page)
    assert len(data["nodes"]) == summary["nodes"] and {n["id"] for n in data["nodes"] if n["kind"] == "note"} == \
        {n.id for n in notes}
    links = {(e["from"], e["to"]) for e in data["edges"] if e["kind"] == "link"}
    assert links == {(n.id, t) for n in notes for t in n.links}
    mentions = {(e["from"], e["to"]) for e in data["edges"] if e["kind"] == "mention"}
    onbiseo = next(n["id"] for n in data["nodes"] if n["kind"] == "entity" and n["label"] == "Onbiseo")
    assert {to for frm, to in mentions if frm == onbiseo} == {n.id for n in notes if "Onbiseo" in n.content}
    assert any(n.get("user_tags") == ["running", "무릎"] for n in data["nodes"])
    korean = next(n for n in notes if n.content.startswith("나는"))
    assert korean.content in {n.get("text") for n in data["nodes"]}  # the whole note, for the click panel


def test_bad_graph_options_are_one_line(zk, journal, tmp_path):  # noqa: F811
    code, _, err = zk("graph", "Onbiseo", "--html", str(tmp_path / "g.html"))
    assert code == 1 and len(err.strip().splitlines()) == 1 and "whole notebook" in err
    code, _, err = zk("graph", "--html", str(tmp_path / "no-such-dir" / "g.html"))
    assert code == 1 and "cannot write" in err
    code, out, _ = zk("graph", "Onbiseo", "--json")  # the entity view still works
    assert code == 0 and json.loads(out)["entity"]["name"] == "Onbiseo"


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)")
def test_headless_chromium_renders_every_node(zk, journal, tmp_path):  # noqa: F811
    target = tmp_path / "graph.html"
    assert zk("graph", "--html", str(target))[0] == 0
    nodes = len(page_data(target.read_text(encoding="utf-8"))["nodes"])
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--virtual-time-budget=5000", "--dump-dom", target.as_uri()],
        capture_output=True, text=True, timeout=120).stdout
    count = re.search(r'<span id="count" data-nodes="(\d+)">([^<]*)</span>', dom)
    assert count, dom[-2000:]
    assert int(count.group(1)) == nodes  # written by the page's script from vis-network's own DataSet
    assert html.unescape(count.group(2)).startswith("7 notes, ")
    assert "<canvas" in dom  # vis-network drew its canvas
