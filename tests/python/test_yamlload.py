"""primus_runner.yamlload: PyYAML imported with patterns compiled on first use
must parse exactly as PyYAML imported the ordinary way, with either loader."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Every implicit resolver of YAML 1.1 (bool, int in all bases, float, null,
# timestamp, merge, value) and a quoted twin of each.
TEXT = """\
bools: [yes, No, "yes", on, OFF, true, False]
ints: [0, -12, +7, 0x1F, 0o17, 017, 0b101, 1_000, "12", 190:20:30]
floats: [1.5, -.5, 1e3, 6.8523015e+5, .inf, -.Inf, .NaN, 190:20:30.15, "1.5"]
nulls: [~, null, Null, "", "null"]
stamps: [2001-12-14, 2001-12-14t21:59:43.10-05:00, "2001-12-14"]
base: &b {x: 1, y: 2}
merged:
  <<: *b
  y: 3
text: "a: b # not a comment"
"""

_DUMP = """
import json, math, sys
def plain(v):
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    if not isinstance(v, (str, int, float, bool, type(None))):
        return type(v).__name__ + ":" + str(v)
    return v
"""


def _run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    done = subprocess.run([sys.executable, "-c", _DUMP + code], input=TEXT, env=env,
                          capture_output=True, text=True, check=True)
    return done.stdout


def test_same_values_as_an_ordinary_import_with_both_loaders() -> None:
    ordinary = _run("import yaml\n"
                    "print(json.dumps(plain(yaml.load(sys.stdin.read(), Loader=yaml.SafeLoader))))")
    lazy_c = _run("from primus_runner.yamlload import import_yaml, safe_loader\n"
                  "y = import_yaml()\n"
                  "print(json.dumps(plain(y.load(sys.stdin.read(), Loader=safe_loader(y)))))")
    lazy_py = _run("from primus_runner.yamlload import import_yaml\n"
                   "y = import_yaml()\n"
                   "print(json.dumps(plain(y.load(sys.stdin.read(), Loader=y.SafeLoader))))")
    data = json.loads(ordinary)
    assert data["ints"][3] == 31 and data["bools"][0] is True and data["merged"] == {"x": 1, "y": 3}
    assert lazy_c == ordinary
    assert lazy_py == ordinary


def test_the_import_compiles_no_pattern_and_restores_re_compile() -> None:
    out = _run("import re\n"
               "real = re.compile\n"
               "from primus_runner.yamlload import import_yaml, safe_loader\n"
               "y = import_yaml()\n"
               "from yaml.reader import Reader\n"
               "print(re.compile is real, type(Reader.NON_PRINTABLE).__name__)\n"
               "y.load('a: 1', Loader=safe_loader(y))\n"
               "print(Reader.NON_PRINTABLE._compiled is None)\n")
    assert out.split() == ["True", "_LazyPattern", "True"]


def test_a_non_printable_character_is_still_refused_by_the_python_reader() -> None:
    out = _run("from primus_runner.yamlload import import_yaml\n"
               "y = import_yaml()\n"
               "try:\n"
               "    y.load('a: \\x07', Loader=y.SafeLoader)\n"
               "except y.reader.ReaderError as exc:\n"
               "    print('refused', exc.character == 7)\n")
    assert out.split() == ["refused", "True"]


def test_malformed_yaml_names_the_line() -> None:
    out = _run("from primus_runner.config.files import parse_yaml\n"
               "from primus_runner.errors import UsageError\n"
               "try:\n"
               "    parse_yaml('a: [1, 2\\nb: 3\\n', 'x.yaml')\n"
               "except UsageError as exc:\n"
               "    print(str(exc).split(':')[0:3])\n")
    assert "x.yaml" in out


def test_only_pyyaml_modules_get_lazy_patterns_during_the_import() -> None:
    out = _run("import re, sys\n"
               "import primus_runner.yamlload as yl\n"
               "seen = []\n"
               "class Finder:\n"
               "    def find_spec(self, name, path=None, target=None):\n"
               "        if name == 'yaml.nodes':\n"
               "            seen.append(type(re.compile('x+')).__name__)\n"
               "        return None\n"
               "sys.meta_path.insert(0, Finder())\n"
               "yl.import_yaml()\n"
               "print(seen[0] if seen else 'none')\n")
    assert out.split() == ["Pattern"]
