"""`env list|explain|check|docs` through the real entry point (python3 -m primus_runner)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from primus_runner import cli
from primus_runner.env import commands as env_cmd
from primus_runner.env.examples import full_environment
from primus_runner.env.registry import load

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "environment.md"
FIXTURE = ROOT / "tests" / "fixtures" / "reference_names.txt"


def run_cli(args: list[str], env: dict[str, str] | None = None,
            ) -> subprocess.CompletedProcess[str]:
    """`python3 -m primus_runner env ARGS` in a clean environment (PATH/HOME only) plus ``env``."""
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
            "PYTHONPATH": str(ROOT / "python")}
    base.update(env or {})
    return subprocess.run([sys.executable, "-m", "primus_runner", "env", *args], env=base,
                          capture_output=True, text=True, cwd=ROOT, check=False)


def reference_names() -> list[str]:
    return [line.strip() for line in FIXTURE.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


# --------------------------------------------------------------------------- check
def test_check_clean_environment_exits_0_and_prints_nothing():
    result = run_cli(["check"])
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    # primus-cli env check asks for one line on success.
    result = run_cli(["check", "--say-ok"])
    assert (result.returncode, result.stdout, result.stderr) == (0, "[env check] no problems found\n", "")


def test_check_error_exits_2_with_variable_value_reason_fix():
    result = run_cli(["check"], {"MASTER_PORT": "80"})
    assert result.returncode == 2
    assert result.stdout == ""
    line = result.stderr.splitlines()[0]
    assert line.startswith("[env check] ERROR MASTER_PORT='80': ")
    assert "1024-65535" in line and "Fix: export MASTER_PORT=" in line
    assert "launch blocked (exit 2)" in result.stderr


def test_check_warning_exits_0_and_strict_exits_2():
    env = {"NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS": "100"}
    plain = run_cli(["check"], env)
    assert plain.returncode == 0
    assert "WARNING NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS='100'" in plain.stderr
    assert "63" in plain.stderr
    strict = run_cli(["check", "--strict"], env)
    assert strict.returncode == 2
    assert "ERROR NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS='100'" in strict.stderr
    assert "[--strict]" in strict.stderr


def test_check_info_goes_to_stdout_and_exits_0():
    result = run_cli(["check", "--strict"], {"NEURON_RT_INSPECT_OUTPUT_DIR": "/fsx/p"})
    assert result.returncode == 0
    assert result.stderr == ""
    assert "INFO NEURON_RT_INSPECT_OUTPUT_DIR='/fsx/p'" in result.stdout


def test_check_json_format_and_masking():
    result = run_cli(["check", "--format", "json"],
                     {"NEURON_RT_API_TOKEN": "hunter2-secret", "MASTER_PORT": "80"})
    assert result.returncode == 2
    report = json.loads(result.stdout)
    assert report["exit_code"] == 2
    assert report["counts"] == {"error": 1, "warning": 1, "info": 0}
    by_name = {f["variable"]: f for f in report["findings"]}
    assert by_name["MASTER_PORT"]["severity"] == "error"
    assert by_name["MASTER_PORT"]["rule"] == "master_port_range"
    assert by_name["NEURON_RT_API_TOKEN"]["value"] == "****"
    assert "hunter2" not in result.stdout + result.stderr


def test_check_accelerator_option():
    env = {"NEURON_RT_VALIDATE_HASH": "yes"}
    assert run_cli(["check"], env).returncode == 2
    rocm = run_cli(["check", "--accelerator", "rocm"], env)
    assert rocm.returncode == 0
    assert "no effect: accelerator is rocm" in rocm.stdout
    bad = run_cli(["check", "--accelerator", "tpu"])
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_check_container_option():
    env = {"TE_HIPBLASLT_ALGO_SELECTION": "1"}
    assert run_cli(["check"], env).stderr == ""
    result = run_cli(["check", "--container"], env)
    assert result.returncode == 0
    assert "--env TE_HIPBLASLT_ALGO_SELECTION=1" in result.stderr


def test_check_env_file(tmp_path):
    env_file = tmp_path / "job.env"
    env_file.write_text("# a comment\n\nexport MASTER_PORT=80\n"
                        "PRIMUS_PATCHES='$(touch /tmp/primus-env-pwned); a b'\n"
                        "NEURON_RT_LOG_LEVEL=INFO\nNEURON_RT_LOG_LOCATION=console\n")
    # The current environment is not checked when --env-file is given.
    result = run_cli(["check", "--env-file", str(env_file), "--format", "json"],
                     {"NEURON_RT_VALIDATE_HASH": "yes"})
    assert result.returncode == 2
    findings = json.loads(result.stdout)["findings"]
    assert {(f["variable"], f["value"]) for f in findings} == {
        ("MASTER_PORT", "80"), ("PRIMUS_PATCHES", "$(touch /tmp/primus-env-pwned); a b")}
    assert not os.path.exists("/tmp/primus-env-pwned")
    # Unquoted, the command substitution is refused (never run), naming the line.
    env_file.write_text("PRIMUS_PATCHES=$(touch /tmp/primus-env-pwned)\n")
    result = run_cli(["check", "--env-file", str(env_file)])
    assert result.returncode == 2 and "line 1 (PRIMUS_PATCHES)" in result.stderr
    assert not os.path.exists("/tmp/primus-env-pwned")


def test_check_env_file_errors(tmp_path):
    missing = run_cli(["check", "--env-file", str(tmp_path / "absent.env")])
    assert missing.returncode == 1
    assert "absent.env" in missing.stderr and "not found" in missing.stderr
    bad = tmp_path / "bad.env"
    bad.write_text("GOOD=1\nthis is not an assignment\n")
    result = run_cli(["check", "--env-file", str(bad)])
    assert result.returncode == 2
    assert "line 2" in result.stderr and "KEY=VALUE" in result.stderr


def test_check_full_environment_has_no_errors(tmp_path):
    env = full_environment()
    # The detected Neuron facts must describe the example instance (trn2.48xlarge: 16
    # devices x 8 cores, default LNC 2, 64 logical cores), not per-type examples.
    assert env["PRIMUS_NEURON_INSTANCE"] == "trn2.48xlarge"
    env.update({"PRIMUS_NEURON_DEVICES": "16", "PRIMUS_NEURON_CORES_PER_DEVICE": "8",
                "PRIMUS_NEURON_DEFAULT_LNC": "2", "PRIMUS_NEURON_LOGICAL_CORES": "64"})
    env_file = tmp_path / "full.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    result = run_cli(["check", "--env-file", str(env_file)])
    assert result.returncode == 0, result.stderr
    assert "ERROR" not in result.stderr


def test_value_with_newline_stays_on_one_line():
    result = run_cli(["check"], {"NEURON_RT_VISIBLE_CORES": "0-3\nrm -rf /"})
    assert result.returncode == 2
    first = result.stderr.splitlines()[0]
    assert "NEURON_RT_VISIBLE_CORES='0-3\\nrm -rf /'" in first


# --------------------------------------------------------------------------- explain
def test_explain(capsys):
    assert cli.main(["env", "explain", "MASTER_PORT"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("MASTER_PORT\n")
    for text in ("type:", "port", "default:", "1234", "set by:", "used by:",
                 "forwarded", "master_port_range", "description:"):
        assert text in out


def test_explain_deprecated_and_family(capsys):
    assert cli.main(["env", "explain", "NEURON_RT_VIRTUAL_CORE_SIZE"]) == 0
    out = capsys.readouterr().out
    assert "deprecated:" in out and "NEURON_LOGICAL_NC_CONFIG" in out
    assert cli.main(["env", "explain", "NEURON_RT_LOG_LEVEL_HAL"]) == 0
    out = capsys.readouterr().out
    assert "family NEURON_RT_LOG_LEVEL_<submodule>" in out and "TDRV" in out


def test_explain_secret_shows_mask(capsys, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_abcdefgh")
    assert cli.main(["env", "explain", "HF_TOKEN"]) == 0
    out = capsys.readouterr().out
    assert "'****'" in out and "hf_abcdefgh" not in out


def test_explain_misspelt_name_suggests(capsys):
    assert cli.main(["env", "explain", "MASTR_PORT"]) == 2
    err = capsys.readouterr().err
    assert "unknown variable 'MASTR_PORT'" in err and "Did you mean MASTER_PORT?" in err
    assert cli.main(["env", "explain", "NEURON_RT_LOG_LEVEL_FOO"]) == 2
    assert "'FOO' is not a Neuron runtime submodule" in capsys.readouterr().err


def test_explain_names_every_rule(capsys):
    """env explain RULE: the id a finding names, for every registered rule."""
    from primus_runner.env.registry import load

    reg = load()
    for rule_id, rule in reg.rules.items():
        assert cli.main(["env", "explain", rule_id]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"{rule_id} (rule)") and f"severity:    {rule.severity}" in out
    assert cli.main(["env", "explain", "gpu_model_knwn"]) == 2
    assert "Did you mean gpu_model_known?" in capsys.readouterr().err


# --------------------------------------------------------------------------- list
def test_list_json_has_every_variable(capsys):
    assert cli.main(["env", "list", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = {row["name"] for row in rows}
    assert set(reference_names()) <= names
    port = next(row for row in rows if row["name"] == "MASTER_PORT")
    assert port["default"] == "1234" and port["forwarded"] is True
    token = next(row for row in rows if row["name"] == "HF_TOKEN")
    assert token["secret"] is True


def test_list_table_and_subsystem(capsys):
    assert cli.main(["env", "list", "--subsystem", "slurm"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "TYPE", "DEFAULT", "SUBSYSTEM", "FLAGS"]
    assert [line.split()[0] for line in lines[1:]] == [
        "SLURM_NNODES", "SLURM_JOB_NUM_NODES", "SLURM_NODEID", "SLURM_PROCID", "SLURM_JOB_ID"]
    assert cli.main(["env", "list", "--subsystem", "neuron", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    # 70 runtime-reference names plus 12 AWS-practice names (section neuron-aws).
    runtime = [r for r in rows if r["name"].startswith("NEURON_") and r["name"] != "NEURON_CC_FLAGS"]
    assert len(runtime) == 70 and len(rows) == 82


def test_list_unknown_subsystem(capsys):
    assert cli.main(["env", "list", "--subsystem", "neuronn"]) == 2
    assert "Did you mean 'neuron'?" in capsys.readouterr().err


# --------------------------------------------------------------------------- docs
def test_docs_are_current(tmp_path):
    fresh = tmp_path / "environment.md"
    result = run_cli(["docs", "--out", str(fresh)])
    assert result.returncode == 0, result.stderr
    assert fresh.read_text() == DOCS.read_text(), (
        "docs/environment.md is stale: run "
        "'python3 -m primus_runner env docs --out docs/environment.md'")


def test_docs_cover_every_variable():
    text = DOCS.read_text()
    for name in reference_names():
        assert f"### `{name}`" in text, name
    for var in load().variables:
        assert f"### `{var.name}`" in text
    for rule_id in load().rules:
        assert f"| `{rule_id}` |" in text


def test_docs_to_stdout_matches_file(capsys):
    assert cli.main(["env", "docs"]) == 0
    assert capsys.readouterr().out == DOCS.read_text()


def test_docs_out_into_missing_directory(tmp_path):
    result = run_cli(["docs", "--out", str(tmp_path / "no" / "such" / "env.md")])
    assert result.returncode == 1 and "does not exist" in result.stderr


# --------------------------------------------------------------------------- helpers
@pytest.mark.parametrize("value, shown", [("", "(unset)"), ("a b", "'a b'"),
                                          ("it's", "'it'\\''s'"), ("x\ty", "'x\\ty'")])
def test_shown(value, shown):
    assert env_cmd.shown(value) == shown


def test_help_for_every_subcommand():
    for sub in ("list", "explain", "check", "docs"):
        result = run_cli([sub, "--help"])
        assert result.returncode == 0 and "usage: primus-cli env " + sub in result.stdout
    assert run_cli([]).returncode == 2


@pytest.mark.parametrize("argv", [
    ["check"], ["check", "--strict"], ["check", "--container", "--format", "json"],
    ["check", "--accelerator=neuron", "--env-file", "a.env", "--env-file=b.env", "--strict"],
    ["check", "--format=text", "--accelerator", "rocm"],
])
def test_fast_check_args_agree_with_argparse(argv):
    fast = env_cmd.fast_check_args(argv)
    assert fast is not None
    assert vars(fast) == vars(env_cmd._parser().parse_args(argv))


@pytest.mark.parametrize("argv", [
    ["check", "--help"], ["check", "--accelerator", "tpu"], ["check", "--format"],
    ["check", "--strct"], ["check", "extra"], ["check", "--env-file", "--strict"],
    ["list"], [],
])
def test_fast_check_args_leave_the_rest_to_argparse(argv):
    assert env_cmd.fast_check_args(argv) is None
