"""Shared checks of the figure tests (imported as the top-level module ``figure_checks``)."""

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_png(fig, tmp_path, name, *, dpi=60):
    """Write ``fig`` as ``name.png`` under ``tmp_path`` as the report writes its figures and
    check it is a non-trivial PNG.

    The report draws each figure once into its PNG
    (:func:`dprisk.validation.figures.png.png_bytes`, the writer of
    ``dprisk.validation.report.runner``); ``fig.savefig`` would lay it out and draw it twice
    (about 0.3-0.5 s of CPU more per figure, issue 36). That the two give the same picture is
    checked by ``tests/validation/figures/test_png.py``.
    """
    from dprisk.validation.figures.png import png_bytes

    path = tmp_path / f"{name}.png"
    path.write_bytes(png_bytes(fig, dpi))
    data = path.read_bytes()
    assert len(data) > 1000 and data[:8] == PNG_SIGNATURE
