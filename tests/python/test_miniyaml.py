"""The standard-library YAML reader (config/miniyaml.py) against PyYAML: the same
value for every YAML file of the repository it accepts, and a refusal by line
for what it does not read."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from primus_runner.config.miniyaml import MiniYamlError, load

ROOT = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".git", ".venv", ".userenv", "node_modules", ".cache"}


def _yaml_files() -> list[Path]:
    found = []
    for path in ROOT.rglob("*"):
        if path.suffix in (".yaml", ".yml") and not SKIP_DIRS & set(path.relative_to(ROOT).parts):
            found.append(path)
    return sorted(found)


def test_every_config_shaped_file_of_the_repository_reads_as_pyyaml_reads_it() -> None:
    files = _yaml_files()
    assert any(p.name == ".primus.yaml" for p in files)
    accepted = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        try:
            want = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        try:
            got = load(text)
        except MiniYamlError:
            continue  # outside the subset: refused, never guessed (see the cases below)
        assert got == want, path
        accepted += 1
    # runner/.primus.yaml and the examples are in the subset.
    defaults = (ROOT / "runner/.primus.yaml").read_text()
    assert load(defaults) == yaml.safe_load(defaults)
    assert accepted >= 5


CASES = [
    "a: 1\nb: -2\nc: 1.5\nd: 1e3\ne: 1.0e+3\nf: .inf\n",
    "a: true\nb: yes\nc: off\nd: ~\ne: null\nf:\ng: y\nh: No\n",
    "a: 'it''s'\nb: \"tab\\there \\u00e9 \\\"q\\\"\"\nc: plain text # comment\nd: 'x # not a comment'\n",
    "list:\n- a\n- 'b'\n-\n- [c, 'd, e', \"f\"]\n",
    "outer:\n  inner:\n    - x: 1\n      y: two\n    - z\n  flow: {a: 1, b: [1, 2], c: }\n",
    "env: [\"A=1\", B=2, 'C=$(x) ; `y`']\nempty: []\nnone: {}\n",
    "key with spaces: value\nurl: http://host:80/x\n",
    "- - a\n  - b\n- c\n",
    "---\na: 1\n",
    "a:\n  - 1\n  - 2\nb: 3\n",
    "\"quoted key\": 1\n'other': 2\n",
]


@pytest.mark.parametrize("text", CASES)
def test_the_subset_reads_as_pyyaml(text: str) -> None:
    want = yaml.safe_load(text)
    got = load(text)
    if isinstance(want, dict) and isinstance(want.get("f"), float) and math.isinf(want["f"]):
        assert math.isinf(got["f"])
        want.pop("f")
        got.pop("f")
    assert got == want


@pytest.mark.parametrize(("text", "line"), [
    ("a: &x 1\nb: *x\n", 1),
    ("a: |\n  text\n", 1),
    ("a: 1\nb: !tag 2\n", 2),
    ("a: one\n  two\n", 2),
    ("a: 1\n---\nb: 2\n", 2),
    ("a: 'open\n", 1),
    ("a:\n\t- 1\n", 2),
    ("a: [1, 2\n", 1),
    ("a: value: with colon\n", 1),
])
def test_outside_the_subset_is_refused_with_its_line(text: str, line: int) -> None:
    with pytest.raises(MiniYamlError) as caught:
        load(text)
    assert caught.value.line == line


def test_config_files_read_without_pyyaml_in_a_python_that_refuses_it(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("direct:\n  run_mode: single\n  env: [\"A=1\", 'B=two words']\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("direct:\n  script: &a x\n")
    code = (
        "import sys, importlib.abc\n"
        "class Refuse(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('yaml', 'psutil'):\n"
        "            raise ImportError('refused: ' + name)\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "from primus_runner.config import files\n"
        "from primus_runner.errors import UsageError\n"
        "cfg = files.load(sys.argv[1])\n"
        "print(cfg.get('direct.run_mode'), cfg.get('direct.env'), cfg.get('container.options.ipc'))\n"
        "try:\n"
        "    files.load(sys.argv[2])\n"
        "except UsageError as exc:\n"
        "    print('ERR', exc)\n"
        "assert 'yaml' not in sys.modules\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(cfg), str(bad)], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "python"), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
                         check=True).stdout
    assert "single ['A=1', 'B=two words'] host" in out
    assert f"ERR config file {bad}:2: '&'" in out
    assert "pip install PyYAML" in out
