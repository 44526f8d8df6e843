"""Model files only where the operator allows (issue 33, finding 1).

A prior file whose import writes a marker file stands for any visitor-chosen code: beyond
loopback without ``--prior-dir`` no file is imported; with ``--prior-dir DIR`` only the
``.py`` files under DIR are offered (a symlink or ``..`` out of DIR is neither offered nor
loaded); a refused prior gets one message that is the same whether the file exists or not
and quotes nothing of it. On loopback, typed ``PATH.py:NAME`` keeps working.
"""

import os

import pytest
from deferred_modules import deferred_module

from dprisk.explore.inputs import PriorPolicy, is_loopback, prior_policy
from dprisk.explore.notebook import message_html

app = deferred_module("dprisk.explore.app")  # Panel: imported by the first test that uses it

PRIOR = "from dprisk.models.priors.library import TruncatedUniform\nprior = TruncatedUniform(5)\n"


@pytest.fixture
def files(tmp_path):
    """An allowed folder with one good prior, and a marker-writing file outside it."""
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "good.py").write_text(PRIOR)
    marker = tmp_path / "MARKER"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w').write('ran')\nSECRET_LINE = 1\n{PRIOR}")
    os.symlink(evil, allowed / "link.py")
    return allowed, evil, marker


def _message(view, **values):
    for key, value in values.items():
        view.controls[key].value = value
    return view.message.object if view.message.visible else None


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
def test_loopback_is_recognised(host):
    assert is_loopback(host) and prior_policy(host).typed_files


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "example.org"])
def test_beyond_loopback_has_no_typed_files(host):
    policy = prior_policy(host)
    assert not policy.typed_files and policy.files() == []


def test_loopback_typed_path_still_loads(files):
    allowed, _, _ = files
    view = app.two_level_view(prior_policy("127.0.0.1"))
    view.refresh()
    assert _message(view, prior=f"{allowed / 'good.py'}:prior") is None
    assert view.current.numbers["prior"].endswith("good.py:prior")


def test_beyond_loopback_never_imports_a_typed_file(files, tmp_path):
    _, evil, marker = files
    for make in (app.two_level_view, app.p_correct_view):
        view = make(prior_policy("0.0.0.0"))
        view.refresh()
        refused = _message(view, prior=f"{evil}:prior")
        missing = _message(view, prior=f"{tmp_path / 'nothing.py'}:prior")
        assert refused == missing  # no existence leak
        assert "not allowed" in refused and "evil" not in refused and "SECRET" not in refused
        assert str(tmp_path) not in refused
        assert _message(view, prior="truncated:5") is None  # built-in priors still work
    assert not marker.exists()


def test_prior_dir_offers_only_its_own_files(files):
    allowed, evil, marker = files
    policy = prior_policy("0.0.0.0", allowed)
    assert policy.files() == ["good.py"]  # the symlink out of the folder is not offered
    view = app.two_level_view(policy)
    view.refresh()
    assert list(view.controls["prior_file"].options.values()) == ["", "good.py"]
    assert _message(view, prior_file="good.py", prior="prior") is None
    assert view.current.numbers["prior"].endswith("good.py:prior")
    # typed paths, a symlink out, and .. are refused the same way, and never imported
    view.controls["prior_file"].value = ""
    typed = _message(view, prior=f"{evil}:prior")
    for name in ("link.py", "../evil.py", str(evil), "missing.py"):
        with pytest.raises(ValueError) as err:
            policy.read("prior", 0, name)
        assert message_html(str(err.value)) == typed
    assert not marker.exists()


def test_a_failing_allowed_file_quotes_nothing(tmp_path):
    (tmp_path / "bad.py").write_text("x = SECRET_TOKEN_42\n")
    policy = PriorPolicy(typed_files=False, prior_dir=tmp_path)
    with pytest.raises(ValueError) as err:
        policy.read("prior", 0, "bad.py")
    assert "SECRET_TOKEN_42" not in str(err.value) and str(tmp_path) not in str(err.value)


@pytest.mark.parametrize("text", ["truncated:/evil.py:prior", "point:/evil.py:prior",
                                  "truncated:./evil.py:prior", "improper:/evil.py:prior"])
def test_a_file_disguised_as_a_built_in_prior_is_never_imported(tmp_path, monkeypatch, text):
    """Finding "prior policy bypass beyond loopback": with a folder named ``truncated:`` in
    the server's working directory, ``truncated:/evil.py:prior`` was read as a built-in prior
    by its first word, then loaded as a model file by parse_prior (which looks for ``.py:``
    first). A built-in prior is now read strictly; anything else is refused."""
    folder = tmp_path / text.partition(":")[0]
    folder = folder.with_name(folder.name + ":")
    folder.mkdir()
    marker = tmp_path / "MARKER"
    (folder / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n{PRIOR}")
    monkeypatch.chdir(tmp_path)
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    for policy in (prior_policy("0.0.0.0"), prior_policy("127.0.0.1", allowed)):
        with pytest.raises(ValueError, match="not allowed here") as err:
            policy.read(text)
        assert "evil" not in str(err.value)
    assert not marker.exists()
    policy = prior_policy("0.0.0.0")
    assert policy.read(" truncated:5 ").upper == 5 and policy.read("point:0").k == 0
    assert type(policy.read("improper")).__name__ == "ImproperUniform"
    for other in ("truncated:\u0663", "truncated:5:x", "point:", "truncated"):
        with pytest.raises(ValueError, match="not allowed here"):
            policy.read(other)


def test_a_prior_dir_file_is_named_without_the_server_s_paths(files):
    """Finding "--prior-dir shows absolute paths": the numbers, the downloads and a refusal of
    the prior's support named the file by the server's absolute path; now by the name chosen
    from the list."""
    allowed, _, _ = files
    policy = prior_policy("0.0.0.0", allowed)
    assert policy.read("prior", 0, "good.py").spec == "good.py:prior"
    with pytest.raises(ValueError) as err:  # TruncatedUniform(5) leaves no X2 for m = 5
        policy.read("prior", 5, "good.py")
    assert "good.py:prior" in str(err.value) and str(allowed) not in str(err.value)
    view = app.two_level_view(policy)
    view.refresh()
    assert _message(view, prior_file="good.py", prior="prior") is None
    assert view.current.numbers["prior"] == "good.py:prior"
    assert str(allowed) not in view.current.to_json().decode()


def test_the_model_file_list_walks_only_the_folders_it_lists(tmp_path, monkeypatch):
    """Finding "--prior-dir at a project folder made every page load 10 s": the list of model
    files walked the whole tree under DIR (rglob), then dropped the hidden folders and those
    deeper than PRIOR_DIR_DEPTH, so a project folder with its .venv took 5.2 s a call, twice
    on every page load (9.4-15 s against 4-6 s on the loaded 2-core machine). The folders
    it never lists are now never walked (os.scandir is never called on them); the list is
    the same: visible .py files at most PRIOR_DIR_DEPTH deep, sorted by their parts."""
    from dprisk.explore.inputs import PRIOR_DIR_DEPTH

    root = tmp_path / "models"
    deep = root.joinpath(*"abcd")  # a/b/c/d: its files are 5 parts deep
    for folder in (deep, root / ".venv" / "lib", root / "a.py.d"):
        folder.mkdir(parents=True)
    for rel in ("top.py", "a.py", "a/one.py", "a/b/c/three.py", "a/b/c/d/four.py",
                ".venv/lib/site.py", ".hidden.py", "notes.txt"):
        (root / rel).write_text(PRIOR)
    walked = []
    real_scandir = os.scandir

    def recording(path="."):
        walked.append(os.path.relpath(path, root.resolve()))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", recording)
    listed = PriorPolicy(typed_files=False, prior_dir=root).files()
    assert listed == ["a/b/c/three.py", "a/one.py", "a.py", "top.py"]
    folders = [folder.split(os.sep) for folder in walked if folder != "."]  # "." is DIR
    assert not any(part.startswith(".") for parts in folders for part in parts), walked
    assert max(len(parts) for parts in folders) == PRIOR_DIR_DEPTH - 1, walked


@pytest.mark.parametrize(("make", "key", "sent"), [
    ("two_level_view", "prior_file", "../evil.py"), ("budget_view", "measure", "tail")])
def test_a_choice_not_offered_is_ignored_without_a_traceback(files, caplog, make, key, sent):
    """Finding "a hand-written client's choice left two tracebacks": the model-file list and
    the budget's measure are Panel Selects, which raised ValueError ('../evil.py not in list')
    for a value not among their options, logged by Panel and again by Bokeh with its
    traceback (about 45 lines a message). The value sent is ignored: the choice, the view's
    numbers and the log stay as they were, and nothing is imported."""
    allowed, _, marker = files
    policy = PriorPolicy(typed_files=False, prior_dir=allowed)
    view = getattr(app, make)(policy) if make == "two_level_view" else getattr(app, make)()
    view.refresh()
    widget, before = view.controls[key], view.controls[key].value
    widget._process_events({"value": sent})  # as Panel applies a websocket message
    assert widget.value == before and view.current is not None
    assert "Traceback" not in caplog.text and "not in list" not in caplog.text
    assert not marker.exists()
    if key == "prior_file":  # an offered file is still chosen as before
        widget._process_events({"value": "good.py"})
        assert widget.value == "good.py"
