"""Shared helper of the import tests: which modules a piece of code loads in a new interpreter.

The code runs in a fresh ``python -c`` (so nothing the test session imported counts); a report
appended after it prints the names in ``sys.modules`` (entries set to ``None``, i.e. blocked,
are not loaded) on a marked last line, so the code may print output of its own.
"""

import json
import subprocess
import sys

_MARK = "LOADED "
_REPORT = (
    "import json, sys\n"
    "loaded = sorted(name for name, module in list(sys.modules.items()) if module is not None)\n"
    f"print('\\n{_MARK}' + json.dumps(loaded))\n"
)


def modules_loaded_by(code: str) -> set[str]:
    """Names in ``sys.modules`` after running ``code`` in a new interpreter (which must succeed)."""
    done = subprocess.run([sys.executable, "-c", code + "\n" + _REPORT], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    line = [text for text in done.stdout.splitlines() if text.startswith(_MARK)][-1]
    return set(json.loads(line[len(_MARK):]))


def packages_loaded_by(code: str) -> set[str]:
    """Top-level packages in ``sys.modules`` after running ``code`` in a new interpreter."""
    return {name.split(".")[0] for name in modules_loaded_by(code)}
