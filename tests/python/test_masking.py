"""Secret masking: the Python rule and its shell twin agree (docs/security.md "Secrets")."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from primus_runner.masking import is_secret, mask, mask_text

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["HF_TOKEN", "WANDB_API_KEY", "DATABRICKS_TOKEN", "GITHUB_TOKEN", "MY_SECRET", "DB_PASSWORD",
         "OPENAI_API_KEY", "hf_token", "TOKEN", "SECRET_SAUCE", "PASSWORD_FILE", "NCCL_DEBUG",
         "MASTER_ADDR", "API_KEY_ID", "X_TOKENS"]
# The rule is wider than the list of names docs/security.md "Secrets" gives: SECRET and PASSWORD
# anywhere, TOKEN as a whole word.
EXPECTED = {"HF_TOKEN", "WANDB_API_KEY", "DATABRICKS_TOKEN", "GITHUB_TOKEN", "MY_SECRET", "DB_PASSWORD",
            "OPENAI_API_KEY", "hf_token", "TOKEN", "SECRET_SAUCE", "PASSWORD_FILE"}


@pytest.mark.parametrize("name", NAMES)
def test_python_rule(name: str) -> None:
    assert is_secret(name) == (name in EXPECTED)


def test_shell_twin_agrees() -> None:
    script = (f'source "{ROOT}/runner/lib/common.sh"; for n in "$@"; do '
              'if primus_is_secret_name "$n"; then echo "$n"; fi; done')
    out = subprocess.run(["bash", "-c", script, "x", *NAMES], capture_output=True, text=True, check=True)
    assert set(out.stdout.split()) == EXPECTED


def test_shell_log_lines_mask_secret_values() -> None:
    script = f'source "{ROOT}/runner/lib/common.sh"; LOG_INFO "token=$HF_TOKEN pw=$DB_PASSWORD"'
    env = {"PATH": "/usr/bin:/bin", "HF_TOKEN": "hf_abc123", "DB_PASSWORD": "p a$$ w0rd",
           "PRIMUS_LOG_TIMESTAMP": "0"}
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, check=True)
    # Every log line is on stderr (one stream).
    assert "hf_abc123" not in out.stderr and "w0rd" not in out.stderr and out.stdout == ""
    assert "token=**** pw=****" in out.stderr


def test_mask_value_and_text() -> None:
    assert mask("HF_TOKEN", "abc") == "****"
    assert mask("NCCL_DEBUG", "INFO") == "INFO"
    assert mask_text("x hf_abc123 y", {"HF_TOKEN": "hf_abc123"}) == "x **** y"


@pytest.mark.parametrize("lister", ["compgen", "prefix expansions"])
def test_shell_masks_every_kind_of_secret_variable(lister: str) -> None:
    """Exported, shell-only, lower-case, '_'-prefixed and function-local secrets
    are all masked, whichever way the variable names are listed (compgen -v,
    or the fallback when there is no compgen or no fork)."""
    force = '__PRIMUS_COMPGEN=""; ' if lister != "compgen" else ""
    script = (f'source "{ROOT}/runner/lib/common.sh"; {force}'
              'SHELL_SECRET=shell-only-1; my_token=lower-case-2; _UNDER_TOKEN=under-score-3; '
              'f() { local LOCAL_PASSWORD=local-var-4; '
              'LOG_INFO "a $HF_TOKEN b $SHELL_SECRET c $my_token d $_UNDER_TOKEN e $LOCAL_PASSWORD"; }; f')
    env = {"PATH": "/usr/bin:/bin", "HF_TOKEN": "exported-0", "PRIMUS_LOG_TIMESTAMP": "0"}
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, check=True)
    assert "a **** b **** c **** d **** e ****" in out.stderr, out.stderr
