"""The top-level templates/ folder is installed as `zettel_amem.templates`: in a built wheel and through an
editable install, each checked in a Python that sees only that install (`-S`, no other site-packages)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(p.name for p in (ROOT / "templates").iterdir() if p.suffix in (".txt", ".md"))
# Loads a prompt and a note template through zettel_amem.core.prompts, as zk does.
CHECK = ("import sys, site; site.addsitedir(sys.argv[1]); from datetime import datetime\n"
         "import zettel_amem.core.prompts as p\n"
         "print(p.shipped_dir()); print(p.Prompts().raw('answer_system')[:20])\n"
         "print(p.Prompts().note_template('daily', datetime(2026, 3, 28)).splitlines()[0])\n")


def _source_copy(tmp_path: Path) -> Path:
    """Only what a build reads, so the build leaves nothing in the work tree."""
    src = tmp_path / "src-copy"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "zettel_amem", src / "zettel_amem", ignore=ignore)
    shutil.copytree(ROOT / "templates", src / "templates", ignore=ignore)
    return src


def _has_build_backend() -> bool:
    try:
        import setuptools
    except ImportError:
        return False
    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    return (major, minor) >= (70, 1)  # bdist_wheel built in; older ones need the `wheel` package too


needs_backend = pytest.mark.skipif(not _has_build_backend(), reason="needs setuptools>=70.1 (the test extra)")


@needs_backend
def test_built_wheel_carries_every_template_and_finds_them(tmp_path):
    src = _source_copy(tmp_path)
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(dist), str(src)], check=True, capture_output=True)
    [wheel] = dist.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert sorted(n.split("/")[-1] for n in names if n.startswith("zettel_amem/templates/")
                  and not n.endswith(".py")) == SHIPPED
    assert "daily.md" in SHIPPED and "answer.txt" in SHIPPED and "zettel_amem/templates/__init__.py" in names
    assert not any(n.startswith("templates/") for n in names)  # inside the package, not beside it
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    out = subprocess.run([sys.executable, "-S", "-c", CHECK, str(site)], capture_output=True, text=True,
                         check=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}).stdout.splitlines()
    assert out[0] == str(site / "zettel_amem" / "templates")
    assert out[1] == (ROOT / "templates" / "answer_system.txt").read_text(encoding="utf-8")[:20]
    assert out[2] == "# 2026-03-28 (토요일)"
    # Installed into a fresh venv (the dependencies come from this Python's site-packages), the wheel's
    # own `zk` runs and imports the wheel's package, not this checkout.
    venv = tmp_path / "wheel-venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", str(wheel)], check=True, capture_output=True)
    helped = subprocess.run([str(venv / "bin" / "zk"), "--help"], capture_output=True, text=True, cwd=tmp_path,
                            env={"PATH": "/usr/bin:/bin"})
    assert helped.returncode == 0 and "Usage: zk" in helped.stdout, helped.stderr
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import zettel_amem; print(zettel_amem.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path,
                           env={"PATH": "/usr/bin:/bin"}).stdout.strip()
    assert where.startswith(str(venv))


@needs_backend
def test_editable_install_maps_the_templates_folder(tmp_path):
    src = _source_copy(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                    "--no-build-isolation", "-e", str(src)], check=True, capture_output=True)
    [site] = venv.glob("lib/python3*/site-packages")
    mapping_check = ("import sys, site; site.addsitedir(sys.argv[1])\n"
                     "import importlib.resources as r, zettel_amem.templates as t\n"
                     "print(t.__file__); print(r.files('zettel_amem.templates').joinpath('daily.md').is_file())")
    out = subprocess.run([str(python), "-S", "-c", mapping_check, str(site)], capture_output=True, text=True,
                         check=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}).stdout.splitlines()
    assert out == [str(src / "templates" / "__init__.py"), "True"]
    out = subprocess.run([str(python), "-S", "-c", CHECK, str(site)], capture_output=True, text=True, check=True,
                         cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}).stdout.splitlines()
    assert out[0] == str(src / "templates") and out[2] == "# 2026-03-28 (토요일)"
