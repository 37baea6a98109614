"""primus_runner.sitepaths: a process started with -S (the launch helper) gets
its site-packages only when it imports PyYAML or psutil, once."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.join(ROOT, "python")


def _run(flags: list[str], code: str) -> list[str]:
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    done = subprocess.run([sys.executable, *flags, "-c", code], env=env,
                          capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_without_site_yaml_comes_only_through_the_package() -> None:
    out = _run(["-S"], "\n".join([
        "import sys",
        "try:",
        "    import yaml",
        "    print('direct-import-worked')",
        "except ImportError:",
        "    print('no-yaml-without-site')",
        "from primus_runner.yamlload import import_yaml",
        "y = import_yaml()",
        "print(y.safe_load('a: 1')['a'])",
        "before = len(sys.path)",
        "from primus_runner.sitepaths import ensure_site",
        "ensure_site()",
        "print(len(sys.path) == before)",
    ]))
    assert out == ["no-yaml-without-site", "1", "True"]


def test_in_a_normal_process_ensure_site_changes_nothing() -> None:
    out = _run([], "\n".join([
        "import sys",
        "before = list(sys.path)",
        "from primus_runner.sitepaths import ensure_site",
        "ensure_site()",
        "print(sys.path == before)",
    ]))
    assert out == ["True"]


def test_the_launch_helper_is_started_without_site() -> None:
    with open(os.path.join(ROOT, "runner", "lib", "launch_helper.sh"), encoding="utf-8") as handle:
        text = handle.read()
    assert 'exec "$PRIMUS_PYTHON" -S -c "$__PRIMUS_HELPER_MAIN"' in text
