"""Find a test's own source line by a ``# <- tag`` comment, so assertions on locations survive edits."""


def line_of(path: str, tag: str) -> str:
    """``"path:N"`` for the one line of ``path`` that ends with ``# <- tag``."""
    with open(path, encoding="utf-8") as f:
        hits = [i for i, line in enumerate(f, 1) if line.rstrip().endswith(f"# <- {tag}")]
    assert len(hits) == 1, f"marker {tag!r} found {len(hits)} times in {path}"
    return f"{path}:{hits[0]}"
