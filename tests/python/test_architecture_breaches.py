"""The architecture test can fail: a small made-up tree (generated under tmp_path)
keeps every house rule, and each case below breaks exactly one, the way a real
change could, in a form an ``import``-only reader would miss. The check that
tests/python/test_architecture.py runs on the repository must name the breach.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import archscan
from test_architecture import FLOORS

BASH = "#!/usr/bin/env bash\n# runner/{name}: a made-up launcher script for the breach fixtures.\n"
CLEAN: dict[str, str] = {
    "python/primus_runner/__init__.py": '"""The made-up package."""\n',
    "python/primus_runner/__main__.py": "from primus_runner.cli import main\n\nmain()\n",
    "python/primus_runner/errors.py": '"""Errors."""\nCODE = 2\n',
    "python/primus_runner/cli.py": (
        "from primus_runner import errors\n"
        'COMMANDS = {"launch": "primus_runner.launch.helper"}\n\n\ndef main() -> None:\n'
        "    __import__(COMMANDS['launch'])\n"),
    "python/primus_runner/hardware/__init__.py": '"""Hardware."""\n',
    "python/primus_runner/hardware/devices.py": "from primus_runner.errors import CODE\n",
    "python/primus_runner/env/__init__.py": '"""Env."""\n',
    "python/primus_runner/env/rules/__init__.py": (
        "import importlib\n\n\ndef __getattr__(name: str) -> object:\n"
        '    return importlib.import_module(f"primus_runner.env.rules.{name}")\n'),
    "python/primus_runner/env/rules/engine.py": "from primus_runner.hardware import devices\n",
    "python/primus_runner/launch/__init__.py": '"""Launch."""\n',
    "python/primus_runner/launch/helper.py": (
        "from primus_runner.env.rules import engine\n\nif __name__ == '__main__':\n    pass\n"),
    "python/primus_runner/launch/plan.py": "from ..errors import CODE\n",
    "runner/primus-cli": BASH.format(name="primus-cli") + 'exec python3 -m primus_runner "$@"\n',
    "runner/lib/common.sh": "# shellcheck shell=bash\n# runner/lib/common.sh: made-up shared functions, sourced.\n",
    "runner/helpers/step.py": "from primus_runner.launch import helper\n",
}
DEVICES = "python/primus_runner/hardware/devices.py"
LAUNCHER = "runner/primus-cli-extra"


def build(root: Path, changes: dict[str, str]) -> Path:
    """The clean tree with ``changes``: a text starting with ``+`` is appended."""
    files = dict(CLEAN)
    for rel, text in changes.items():
        files[rel] = files[rel] + text[1:] if text.startswith("+") else text
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


CHECKS: dict[str, Callable[[Path], list[str]]] = {
    "circle": archscan.circles,
    "upward": lambda root: archscan.upward(root, FLOORS),
    "unread": archscan.unread,
    "too long": archscan.too_long,
    "no opening comment": archscan.bare_scripts,
    "dangling": archscan.dangling,
}
UP = "primus_runner.hardware.devices (floor 1) imports primus_runner.launch"
CASES = [
    ("from-import", {DEVICES: "+from primus_runner.launch import helper\n"}, "upward", UP + ".helper"),
    ("relative import", {DEVICES: "+from ..launch import helper\n"}, "upward", UP + ".helper"),
    ("import inside a function", {DEVICES: "+def f() -> None:\n    import primus_runner.launch.plan\n"},
     "upward", UP + ".plan"),
    ("importlib", {DEVICES: "+import importlib\nimportlib.import_module('primus_runner.launch.helper')\n"},
     "upward", UP + ".helper"),
    ("importlib relative", {DEVICES: "+import importlib\nimportlib.import_module('..launch', __package__)\n"},
     "upward", UP),
    ("__import__", {DEVICES: "+__import__('primus_runner.launch.plan')\n"}, "upward", UP + ".plan"),
    ("importlib f-string", {DEVICES: "+import importlib\nimportlib.import_module(f'primus_runner.launch.{x}')\n"},
     "upward", UP + ".plan"),
    ("runpy", {DEVICES: "+import runpy\nrunpy.run_module('primus_runner.launch.helper')\n"},
     "upward", UP + ".helper"),
    ("a table of module names", {DEVICES: "+TOOLS = ('primus_runner.launch.plan',)\n"}, "upward", UP + ".plan"),
    ("-m in an argv list",
     {DEVICES: "+import subprocess, sys\nsubprocess.run([sys.executable, '-m', 'primus_runner.launch.helper'])\n"},
     "upward", UP + ".helper"),
    ("-m in a shell command", {DEVICES: "+import os\nos.system('python3 -m primus_runner.launch.helper --x')\n"},
     "upward", UP + ".helper"),
    ("-c code in an argv list",
     {DEVICES: "+import subprocess\nsubprocess.run(['python3', '-c', 'from primus_runner.launch import plan'])\n"},
     "upward", UP),
    ("a plain circle", {"python/primus_runner/launch/plan.py": "+from primus_runner.launch import helper\n",
                        "python/primus_runner/launch/helper.py": "+from primus_runner.launch.plan import X\n"},
     "circle", "primus_runner.launch.helper <-> primus_runner.launch.plan"),
    ("a circle through __init__",
     {"python/primus_runner/env/rules/engine.py": "+from primus_runner.env.rules import NAME\n"},
     "circle", "primus_runner.env.rules <-> primus_runner.env.rules.engine"),
    ("bash without .sh over 400 lines", {LAUNCHER: BASH.format(name="primus-cli-extra") + "true\n" * 400},
     "too long", "runner/primus-cli-extra: 402 lines"),
    ("Python over 400 lines", {DEVICES: "+" + "X = 1\n" * 400}, "too long", "devices.py: 401 lines"),
    ("bash without .sh and without an opening comment", {LAUNCHER: "#!/bin/bash\nexec true\n"},
     "no opening comment", LAUNCHER),
    ("a sourced bash library without .sh", {"runner/lib/facts": "# shellcheck shell=bash\nX=1\n"},
     "no opening comment", "runner/lib/facts"),
    ("bash -m of a module that is gone", {LAUNCHER: BASH.format(name="x") + "python3 -m primus_runner.launch.gone\n"},
     "dangling", "runner/primus-cli-extra:3: primus_runner.launch.gone does not exist"),
    ("bash -m of a module with no __main__",
     {LAUNCHER: BASH.format(name="x") + "python3 -m primus_runner.launch.plan\n"},
     "dangling", "primus_runner.launch.plan has no __main__"),
    ("bash -m of a package with no __main__.py", {LAUNCHER: BASH.format(name="x") + "python3 -m primus_runner.env\n"},
     "dangling", "primus_runner.env has no __main__"),
    ("bash python -c code naming a module that is gone",
     {"runner/lib/common.sh": "+python3 -c 'from primus_runner.gone import main'\n"},
     "dangling", "runner/lib/common.sh:3: primus_runner.gone does not exist"),
    ("a usage line naming a module that is gone",
     {DEVICES: "+USAGE = 'usage: python3 -m primus_runner.hardware.gone ARGS'\n"},
     "dangling", "primus_runner.hardware.gone does not exist"),
    ("a script outside the package importing a module that is gone",
     {"runner/helpers/step.py": "from primus_runner.launch.gone import run\n"},
     "dangling", "runner/helpers/step.py: primus_runner.launch.gone does not exist"),
]


def test_the_clean_tree_keeps_every_rule(tmp_path: Path) -> None:
    root = build(tmp_path, {})
    assert {name: check(root) for name, check in CHECKS.items()} == {name: [] for name in CHECKS}
    bash = {str(p.relative_to(root)) for p in archscan.bash_files(root)}
    assert bash == {"runner/primus-cli", "runner/lib/common.sh"}


@pytest.mark.parametrize(("changes", "check", "named"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_breach_fails_its_check(tmp_path: Path, changes: dict[str, str], check: str, named: str) -> None:
    found = CHECKS[check](build(tmp_path, changes))
    assert any(named in line for line in found), found


def test_a_reader_that_sees_no_import_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty import list (a reader broken so it sees nothing) is itself a breach."""
    root = build(tmp_path, {})
    monkeypatch.setattr(archscan, "named_modules", lambda *_: set())
    assert archscan.circles(root) == [] and archscan.upward(root, FLOORS) == []
    assert archscan.unread(root) == ["0 import arrows among 12 modules"]
