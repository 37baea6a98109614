"""The hipBLASLt tuning flow's decisions (launch/hipblaslt.py), which the hook
runner/helpers/hooks/train/pretrain/hipblaslt_tuning.sh asks once and applies;
tests/bats/hooks.bats runs the hook itself."""
from __future__ import annotations

import pytest

from primus_runner.launch.hipblaslt import Files, plan, tune_root

CWD = "/work/run"


class FakeFiles(Files):
    def __init__(self, files: dict[str, int] | None = None, dirs: tuple[str, ...] = ()) -> None:
        self.files = files or {}
        self.dirs = dirs

    def is_file(self, path: str) -> bool:
        return path in self.files

    def non_empty(self, path: str) -> bool:
        return self.files.get(path, 0) > 0

    def has_entries(self, directory: str) -> bool:
        return directory in self.dirs


def kinds(records: list[tuple[str, str, str]]) -> list[str]:
    return [r[0] for r in records]


def envs(records: list[tuple[str, str, str]]) -> dict[str, str]:
    return {r[1]: r[2] for r in records if r[0] == "env"}


@pytest.mark.parametrize(("env", "args", "root"), [
    ({}, [], f"{CWD}/output/tune_hipblaslt/default"),
    ({}, ["--config", "exp/llama.yaml"], f"{CWD}/output/tune_hipblaslt/llama"),
    ({}, ["--config=a.yml", "--config", "b.yaml"], f"{CWD}/output/tune_hipblaslt/b"),
    ({}, ["--config"], f"{CWD}/output/tune_hipblaslt/default"),
    ({"PRIMUS_MODEL": "m"}, ["--config", "x.yaml"], f"{CWD}/output/tune_hipblaslt/m"),
    ({"PRIMUS_WORKSPACE": "/ws/"}, [], "/ws/tune_hipblaslt/default"),
    ({"PRIMUS_WORKSPACE": "./ws"}, [], f"{CWD}/ws/tune_hipblaslt/default"),
    ({"PRIMUS_PATH": "/primus"}, [], "/primus/output/tune_hipblaslt/default"),
    ({"PRIMUS_PATH": "/primus", "PRIMUS_WORKSPACE": "/ws"}, [], "/ws/tune_hipblaslt/default"),
])
def test_tune_root(env: dict[str, str], args: list[str], root: str) -> None:
    assert tune_root(env, args, CWD) == root


@pytest.mark.parametrize(("env", "expected"), [
    # switches and stage: bad values are configuration errors, named first to last
    ({"PRIMUS_HIPBLASLT_TUNING": "yes"}, ["config-error"]),
    ({"PRIMUS_DETERMINISTIC": "2"}, ["config-error"]),
    ({"TE_HIPBLASLT_TUNING": "on"}, ["config-error"]),
    ({"PRIMUS_HIPBLASLT_TUNING": "1", "PRIMUS_HIPBLASLT_TUNING_STAGE": "4"}, ["config-error"]),
    # deterministic: nothing with tuning (env check refuses), else TE counts 0
    ({"PRIMUS_DETERMINISTIC": "1", "PRIMUS_HIPBLASLT_TUNING": "1"}, ["info"]),
    ({"PRIMUS_DETERMINISTIC": "1"}, ["env", "env"]),
    ({"PRIMUS_DETERMINISTIC": "1", "PRIMUS_HIPBLASLT_TUNING_STAGE": "2"}, ["warn", "env", "env"]),
    # tuning off: a stage is ignored; TE alone gets the online counts
    ({"PRIMUS_HIPBLASLT_TUNING_STAGE": "1"}, ["warn"]),
    ({"TE_HIPBLASLT_TUNING": "1"}, ["env", "env"]),
    ({"TE_HIPBLASLT_TUNING": "1", "TE_HIPBLASLT_TUNING_RUN_COUNT": "x"}, ["config-error"]),
    # stage 0 with tuning: online counts
    ({"PRIMUS_HIPBLASLT_TUNING": "1"}, ["env", "env"]),
])
def test_branches(env: dict[str, str], expected: list[str]) -> None:
    assert kinds(plan(env, [], CWD, FakeFiles())) == expected


def test_counts_defaults_and_user_values() -> None:
    assert envs(plan({"PRIMUS_HIPBLASLT_TUNING": "1"}, [], CWD, FakeFiles())) == {
        "TE_HIPBLASLT_TUNING_RUN_COUNT": "10", "TE_HIPBLASLT_TUNING_ALGO_COUNT": "50"}
    assert envs(plan({"TE_HIPBLASLT_TUNING": "1", "TE_HIPBLASLT_TUNING_RUN_COUNT": "3",
                      "TE_HIPBLASLT_TUNING_ALGO_COUNT": "7"}, [], CWD, FakeFiles())) == {
        "TE_HIPBLASLT_TUNING_RUN_COUNT": "3", "TE_HIPBLASLT_TUNING_ALGO_COUNT": "7"}
    assert envs(plan({"PRIMUS_DETERMINISTIC": "1", "TE_HIPBLASLT_TUNING": "1"}, [], CWD, FakeFiles())) == {
        "TE_HIPBLASLT_TUNING_RUN_COUNT": "0", "TE_HIPBLASLT_TUNING_ALGO_COUNT": "0"}


STAGE1 = {"PRIMUS_HIPBLASLT_TUNING": "1", "PRIMUS_HIPBLASLT_TUNING_STAGE": "1", "NODE_RANK": "2"}


@pytest.mark.parametrize(("extra", "mask"), [({}, "32"), ({"HIPBLASLT_LOG_MASK": "1"}, "33"),
                                             ({"HIPBLASLT_LOG_MASK": "96"}, "96")])
def test_stage1_dumps_shapes(extra: dict[str, str], mask: str) -> None:
    out = plan({**STAGE1, **extra}, [], CWD, FakeFiles())
    root = f"{CWD}/output/tune_hipblaslt/default"
    assert out[0] == ("mkdir", f"{root}/gemm_shape", "")
    assert envs(out) == {"HIPBLASLT_LOG_MASK": mask,
                         "HIPBLASLT_LOG_FILE": f"{root}/gemm_shape/dump_hipblaslt_gemm_shape_2_%i.txt",
                         "HIPBLASLT_TUNING_OVERRIDE_FILE": "", "TE_HIPBLASLT_TUNING_RUN_COUNT": "0",
                         "TE_HIPBLASLT_TUNING_ALGO_COUNT": "0"}


@pytest.mark.parametrize("extra", [{"HIPBLASLT_LOG_LEVEL": ""}, {"HIPBLASLT_LOG_MASK": "0x20"}])
def test_stage1_refusals(extra: dict[str, str]) -> None:
    assert kinds(plan({**STAGE1, **extra}, [], CWD, FakeFiles())) == ["config-error"]


def test_te_switch_is_overridden_with_a_warning_in_an_offline_stage() -> None:
    assert plan({**STAGE1, "TE_HIPBLASLT_TUNING": "1"}, [], CWD, FakeFiles())[0][0] == "warn"


STAGE2 = {"PRIMUS_HIPBLASLT_TUNING": "1", "PRIMUS_HIPBLASLT_TUNING_STAGE": "2", "PRIMUS_ROOT": "/pr"}
ROOT = f"{CWD}/output/tune_hipblaslt/default"
TUNER = "/pr/examples/offline_tune/offline_tune_gemm.py"


def test_stage2_node0_runs_the_tuner() -> None:
    out = plan({**STAGE2, "GPUS_PER_NODE": "4"}, [], CWD, FakeFiles({TUNER: 1}, (f"{ROOT}/gemm_shape",)))
    assert [r[1] for r in out if r[0] == "arg"] == [
        "--dump-shape-path-or-file", f"{ROOT}/gemm_shape", "--tune-result-path",
        f"{ROOT}/gemm_tune/tune_hipblas_gemm_results.txt", "--num-devices", "4"]
    assert ("run", "python", TUNER) in out
    assert envs(out)["PRIMUS_SKIP_MAIN_LAUNCH"] == "1"


@pytest.mark.parametrize(("env", "files", "last"), [
    ({"NODE_RANK": "1"}, FakeFiles(), "env"),           # another node: skip the launch only
    ({"NODE_RANK": "00"}, FakeFiles(), "missing"),      # node 0 (any zeros): the tuner is missing
    ({}, FakeFiles({TUNER: 1}), "config-error"),         # no dumped shapes
    ({"GPUS_PER_NODE": "0"}, FakeFiles({TUNER: 1}, (f"{ROOT}/gemm_shape",)), "config-error"),
    ({"PRIMUS_HIPBLASLT_TUNER": "/t/tune"}, FakeFiles({"/t/tune": 1}, (f"{ROOT}/gemm_shape",)), "env"),
])
def test_stage2_checks(env: dict[str, str], files: FakeFiles, last: str) -> None:
    out = plan({**STAGE2, **env}, [], CWD, files)
    assert out[-1][0] == last
    if env.get("PRIMUS_HIPBLASLT_TUNER"):
        assert ("run", "exec", "/t/tune") in out


STAGE3 = {"PRIMUS_HIPBLASLT_TUNING": "1", "PRIMUS_HIPBLASLT_TUNING_STAGE": "3"}


@pytest.mark.parametrize(("given", "files", "result"), [
    ("", {f"{ROOT}/gemm_tune/tune_hipblas_gemm_results.txt": 5}, f"{ROOT}/gemm_tune/tune_hipblas_gemm_results.txt"),
    ("tuned.txt", {f"{CWD}/tuned.txt": 5}, f"{CWD}/tuned.txt"),
    ("/abs/t.txt", {}, None),
    ("", {}, None),
])
def test_stage3(given: str, files: dict[str, int], result: str | None) -> None:
    env = {**STAGE3, **({"HIPBLASLT_TUNING_OVERRIDE_FILE": given} if given else {})}
    out = plan(env, [], CWD, FakeFiles(files))
    if result is None:
        assert kinds(out) == ["config-error"]
        assert ("HIPBLASLT_TUNING_OVERRIDE_FILE='" in out[0][1]) == bool(given)
    else:
        assert envs(out)["HIPBLASLT_TUNING_OVERRIDE_FILE"] == result


def test_stage3_warns_about_an_empty_file() -> None:
    out = plan({**STAGE3, "HIPBLASLT_TUNING_OVERRIDE_FILE": "/t"}, [], CWD, FakeFiles({"/t": 0}))
    assert kinds(out)[0] == "warn"
