"""launch/helper.py secret_names_record: the launcher's list of the secret names
it inherited (runner/lib/secrets.sh primus_secret_known), decided by the one rule."""
from __future__ import annotations

from primus_runner.launch.helper import secret_names_record


def test_the_rule_decides_with_the_environment_s_own_secret_names() -> None:
    env = {
        "HF_TOKEN": "x", "DB_PASSWORD": "x", "CORP_KEYRING": "x", "PLAIN": "x",
        "PRIMUS_SECRET_NAMES": "*_keyring", "PRIMUS_SECRET_EXTRA": "x",
        "NOT-AN-IDENTIFIER_TOKEN": "x",
    }
    kind, names, user = secret_names_record(env)
    assert kind == "secret-names"
    # Exempt names (PRIMUS_SECRET_*) and names bash cannot hold are left out.
    assert names.split() == ["CORP_KEYRING", "DB_PASSWORD", "HF_TOKEN"]
    assert user == "*_keyring"


def test_without_user_names_only_the_built_in_rule() -> None:
    _kind, names, user = secret_names_record({"CORP_KEYRING": "x", "GITHUB_PAT": "x"})
    assert (names, user) == ("GITHUB_PAT", "")
