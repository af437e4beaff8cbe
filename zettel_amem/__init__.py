"""zk: a local-first Zettelkasten that organises itself (A-MEM)."""

__version__ = "0.1.0"  # pyproject.toml says the same (tests/test_packaging.py); the server restarts when it changes
