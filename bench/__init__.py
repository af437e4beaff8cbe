

def shipped_defaults_only() -> None:
    """Benchmarks measure the shipped settings and prompts, never the user's own config dir."""
    import os
    import tempfile

    os.environ["ZK_CONFIG_DIR"] = tempfile.mkdtemp(prefix="zk-bench-config-")
