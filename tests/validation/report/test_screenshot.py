"""The report as a person sees it: figures render, every record is in the table, Chromium."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure

from dprisk.validation.report import build as report
from dprisk.validation.report.build import StudyResult, write_report
from dprisk.validation.report.screenshot import check_report, find_chromium, screenshot


def _study(*, paper_scale):
    fig = Figure()
    fig.add_subplot().plot(np.arange(5), np.arange(5) ** 2)
    records = [{"id": f"demo/{i}", "source": "Table 0", "published": 0.1 * i, "computed": 0.1 * i,
                "mcse": None, "status": "match", "explanation": ""} for i in range(3)]
    return StudyResult(name="demo", title="Demo", records=records, figures={"figure0": fig})


@pytest.fixture(scope="module")
def pristine_report(tmp_path_factory):
    """The demo study's report, written once for the module (0.2-0.3 s of CPU a write)."""
    out = tmp_path_factory.mktemp("pristine") / "report"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report, "STUDIES", [("demo", _study)])
        write_report(out, progress=False)
    return out


@pytest.fixture
def written_report(pristine_report, tmp_path):
    """A copy of the report of its own for each test (the tests damage it)."""
    return Path(shutil.copytree(pristine_report, tmp_path / "report"))


def test_check_report_counts_figures_and_records(written_report):
    assert check_report(written_report) == {"figures": 1, "records": 3}


def test_check_report_catches_a_missing_record_and_an_empty_figure(written_report):
    records = json.loads((written_report / "results.json").read_text())
    records.append({**records[0], "id": "demo/not-in-page"})
    (written_report / "results.json").write_text(json.dumps(records))
    with pytest.raises(ValueError, match="not-in-page"):
        check_report(written_report)
    (written_report / "figures" / "figure0.png").write_bytes(b"")
    with pytest.raises(ValueError, match="figure0"):
        check_report(written_report)


@pytest.mark.skipif(find_chromium() is None, reason="chromium not installed (make screenshot)")
def test_chromium_screenshot_is_a_real_image(written_report):
    from matplotlib.image import imread

    png = screenshot(written_report / "index.html", written_report / "shot.png", height=1200)
    image = imread(png)
    assert image.shape[0] == 1200 and float(image.std()) > 0.01  # not a blank page


def test_check_report_wants_captions_and_the_summary_first(written_report):
    page = written_report / "index.html"
    html = page.read_text()
    page.write_text(html.replace("<figcaption>", "<p>").replace("</figcaption>", "</p>"))
    with pytest.raises(ValueError, match="caption"):
        check_report(written_report)
    summary = html[html.index("<section id='summary'>"):html.index("</section>") + 10]
    page.write_text(html.replace(summary, "").replace("</body>", summary + "</body>"))
    with pytest.raises(ValueError, match="summary"):
        check_report(written_report)


@pytest.mark.skipif(find_chromium() is None, reason="chromium not installed (make screenshot)")
def test_each_figure_section_is_rendered(written_report):
    from matplotlib.image import imread

    from dprisk.validation.report.screenshot import screenshot_figures

    (png,) = screenshot_figures(written_report, height=700)
    assert png.name == "figure-figure0.png" and float(imread(png).std()) > 0.01
