"""Bash and Python read the same facts (registry shared_facts -> facts.py and
runner/lib/facts.sh) and give the same answers on the same inputs: secret names,
log levels, the log switches (timestamp; colour uses the same switch)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from primus_runner import masking
from primus_runner.env import registry, shared_facts

ROOT = Path(__file__).resolve().parents[2]
COMMON = ROOT / "runner" / "lib" / "common.sh"
NAMES = ["HF_TOKEN", "hf_token", "MY_API_KEY", "X_SECRET", "DB_PASSWORD", "a_password", "TOKEN",
         "MY_TOKENS", "WANDB_API_KEY", "wandb_api_key", "DATABRICKS_TOKEN", "PASSWORD", "SECRETS",
         "NCCL_IB_HCA", "API_KEY", "_TOKEN", "AWS_SECRET_ACCESS_KEY", "GITHUB_PAT",
         "AZURE_CLIENT_SECRET", "MY_ACCESS_KEY", "GCP_CREDENTIALS", "SSH_PRIVATE_KEY", "DBPASSWD",
         "TOKEN_FILE", "A_TOKEN_B", "TOKENIZED_DATA_PATH", "PRIMUS_TOKENIZED_DATA_PATH", "PATH",
         "PRIMUS_SECRET_NAMES", "MY_CORP_KEY", "corp_sign_cert", "PATTERN", "SPAT",
         "PRIMUS_SECRET_MOVED", "__PRIMUS_SECRET_VARS"]
USER_NAMES = "my_corp_key, CORP_*_CERT bad-word"
LEVELS = ["DEBUG", "debug", "INFO", "Info", "WARN", "warn", "WARNING", "ERROR", "bogus", ""]
SWITCHES = ["1", "0", "", "yes", "true", "on"]


def _bash(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "--norc", "-c", f"source '{COMMON}'; {script}"], env=env,
                          capture_output=True, text=True, check=False)


def _python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**env, "PYTHONPATH": str(ROOT / "python")}
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True,
                          check=False)


def _base_env() -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "NODE_RANK": "0", "PRIMUS_LOG_COLOR": "0"}


def test_generated_readers_are_current() -> None:
    assert shared_facts.stale(registry.read_data()) == []


@pytest.mark.parametrize("user", ["", USER_NAMES])
def test_secret_names_agree(user: str) -> None:
    script = "for n in " + " ".join(NAMES) + "; do primus_is_secret_name $n && echo $n; done"
    env = {**_base_env(), "PRIMUS_SECRET_NAMES": user}
    bash = set(_bash(script, env).stdout.split())
    python = {n for n in NAMES if masking.is_secret(n, user)}
    assert bash == python
    assert {"HF_TOKEN", "hf_token", "MY_API_KEY", "X_SECRET", "DB_PASSWORD", "SECRETS",
            "AWS_SECRET_ACCESS_KEY", "GITHUB_PAT", "AZURE_CLIENT_SECRET", "MY_ACCESS_KEY",
            "GCP_CREDENTIALS", "SSH_PRIVATE_KEY", "DBPASSWD", "TOKEN_FILE", "A_TOKEN_B"} <= python
    assert not {"MY_TOKENS", "NCCL_IB_HCA", "TOKENIZED_DATA_PATH", "PRIMUS_TOKENIZED_DATA_PATH",
                "PATH", "PRIMUS_SECRET_NAMES", "PATTERN", "SPAT", "PRIMUS_SECRET_MOVED",
                "__PRIMUS_SECRET_VARS"} & python
    user_only = {"MY_CORP_KEY", "corp_sign_cert"}
    assert (user_only <= python) == bool(user) and (user_only & python or not user)


@pytest.mark.parametrize("level", LEVELS)
def test_log_level_filter_and_streams_agree(level: str) -> None:
    env = {**_base_env(), "PRIMUS_LOG_LEVEL": level, "PRIMUS_LOG_TIMESTAMP": "0"}
    bash = _bash("LOG_DEBUG d; LOG_INFO i; LOG_WARN w; LOG_ERROR e", env)
    python = _python("from primus_runner import log\n"
                     "log.debug('d'); log.info('i'); log.warn('w'); log.error('e')", env)
    assert bash.returncode == python.returncode == 0, (bash.stderr, python.stderr)
    assert bash.stdout == python.stdout
    assert bash.stderr == python.stderr


@pytest.mark.parametrize("value", SWITCHES)
def test_log_switch_agrees(value: str) -> None:
    env = {**_base_env(), "PRIMUS_LOG_TIMESTAMP": value}
    bash = _bash("LOG_INFO x", env).stdout
    python = _python("from primus_runner import log\nlog.info('x')", env).stdout
    assert bash.startswith("[20") == python.startswith("[20"), (bash, python)


def test_secret_values_masked_the_same_in_log_lines() -> None:
    env = {**_base_env(), "PRIMUS_LOG_TIMESTAMP": "0", "MY_API_KEY": "s3cr3t-value",
           "hf_token": "hf_abcdef"}
    bash = _bash("LOG_INFO 'key s3cr3t-value and hf_abcdef'", env).stdout
    python = _python("from primus_runner import log\nlog.info('key s3cr3t-value and hf_abcdef')",
                     env).stdout
    assert bash == python
    assert "s3cr3t" not in bash and "hf_abcdef" not in bash


def test_srun_native_words_are_the_registry_values() -> None:
    from primus_runner import facts

    var = registry.load().get("PRIMUS_SLURM_SRUN_NATIVE")
    assert var is not None and var.values is not None
    assert tuple(var.values) == facts.SRUN_NATIVE_ON + facts.SRUN_NATIVE_OFF


@pytest.mark.parametrize("user", ["", USER_NAMES])
def test_stream_masking_follows_the_same_secret_rule(user: str) -> None:
    # NAME=VALUE words in a hook's output: masked exactly when Python calls NAME secret
    # (the exempt internal names are left out: a regex cannot subtract them).
    names = [n for n in NAMES if not n.startswith(("PRIMUS_SECRET_", "__PRIMUS_"))]
    text = "".join(f"{n}=value-of-{n}\n" for n in names)
    bash = subprocess.run(["bash", "--norc", "-c", f"source '{COMMON}'; primus_mask_stream"],
                          input=text, env={**_base_env(), "PRIMUS_SECRET_NAMES": user},
                          capture_output=True, text=True, check=True)
    for name, line in zip(names, bash.stdout.splitlines(), strict=True):
        masked = line == f"{name}=****"
        assert masked == masking.is_secret(name, user), line


def test_masking_cost_does_not_grow_with_the_environment() -> None:
    # 10,000 exported variables: masking lists them once, not per line;
    # a secret set after that first listing through a user-input path is still masked.
    env = {**_base_env(), **{f"BULK_VARIABLE_{i}": f"v{i}" for i in range(10000)},
           "AWS_SECRET_ACCESS_KEY": "early-secret-value"}
    script = ("LOG_INFO 'a early-secret-value'; primus_read_nul_exports "
              "< <(printf 'GITHUB_PAT\\0late-secret-value\\0'); t0=$EPOCHREALTIME; for i in 1 2 3 4 5 6 7 8 9 10; do "
              "LOG_INFO \"b late-secret-value early-secret-value\"; done; t1=$EPOCHREALTIME; "
              "echo \"took $(( (${t1/./} - ${t0/./}) / 1000 )) ms\" >&2")
    out = _bash(script, {**env, "PRIMUS_LOG_TIMESTAMP": "0"})
    assert out.returncode == 0, out.stderr
    # The launcher's own lines go to stderr (one stream, docs/run-on-one-node.md "What you see, and where it goes").
    logged = out.stderr.split("took ")[0]
    assert "secret-value" not in out.stderr and logged.count("****") == 21, out.stderr
    took = int(out.stderr.split("took ")[1].split()[0])
    assert took < 500, out.stderr


def test_no_hand_copy_of_the_secret_rule_in_runner() -> None:
    # The suffixes live in data/variables.yaml and the generated facts.sh only.
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "runner").rglob("*.sh")
                 if p.name != "facts.sh" and "_PASSWORD" in p.read_text()]
    assert offenders == []
