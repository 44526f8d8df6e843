"""Shared checks of the figure tests (imported as the top-level module ``figure_checks``)."""

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_png(fig, tmp_path, name, *, dpi=60):
    """Save ``fig`` as ``name.png`` under ``tmp_path`` and check it is a non-trivial PNG."""
    path = tmp_path / f"{name}.png"
    fig.savefig(path, dpi=dpi)
    data = path.read_bytes()
    assert len(data) > 1000 and data[:8] == PNG_SIGNATURE
