"""container_opts / container: option parsing, passthrough, config mapping, runtime choice."""
from __future__ import annotations

import os
import socket

import pytest

from primus_runner.config.files import Config
from primus_runner.errors import MissingError, UsageError
from primus_runner.launch import container, container_opts, container_runtime


class _Plan:
    def __init__(self) -> None:
        self.logs: list[tuple[str, str]] = []
        self.env: dict[str, str] = {}

    def log(self, level: str, message: str) -> None:
        self.logs.append((level, message))

    def pass_env(self, name: str, value: str) -> None:
        self.env[name] = value


def cfg(options: dict) -> Config:
    return Config(values={"container": {"options": options}})


def test_ours_and_passthrough_forms():
    a = container_opts.parse_args(["--image", "img", "--env=A=1", "-e", "B", "--shm-size=8G",
                                   "--cap-add", "IPC_LOCK", "--privileged", "-v", "/a:/b",
                                   "--rm", "--", "--single", "--", "x"])
    assert a.image == "img" and a.env_items == ["A=1", "B"]
    assert a.passthrough == [("--shm-size", "8G", True), ("--cap-add", "IPC_LOCK", False),
                             ("--privileged", None, False), ("--volume", "/a:/b", False),
                             ("--rm", None, False)]
    assert a.inner == ["--single", "--", "x"] and not a.clean_only


def test_clean_without_dashdash_only_cleans():
    assert container_opts.parse_args(["--clean"]).clean_only
    assert not container_opts.parse_args(["--clean", "--", "preflight"]).clean_only


def test_a_word_that_is_no_option_starts_the_direct_arguments():
    # upstream's container mode reads `container train pretrain` so.
    a = container_opts.parse_args(["--image", "img", "train", "pretrain", "--x", "1"])
    assert a.image == "img" and a.inner == ["train", "pretrain", "--x", "1"]
    assert not a.clean_only and a.passthrough == []


@pytest.mark.parametrize("argv", [["--image"], ["--image", "--"]])
def test_bad_container_arguments(argv):
    with pytest.raises(UsageError):
        container_opts.parse_args(argv)


def test_config_mapping_list_true_false_and_cli_merge():
    plan = _Plan()
    opts = container_opts.merge_options(
        cfg({"ipc": "host", "shm_size": "64G", "cap_add": ["SYS_PTRACE"], "privileged": True,
             "init": False, "ulimit": ["memlock=-1", "stack=67108864"], "env": ["X"],
             "image": "i"}),
        [("--cap-add", "IPC_LOCK", False), ("--ulimit", "memlock=1", True), ("--ipc", "private", False)],
        plan)
    words = opts.render(always=[("--rm", None)])
    assert words == ["--rm", "--ipc", "private", "--shm-size", "64G", "--cap-add", "SYS_PTRACE",
                     "--cap-add", "IPC_LOCK", "--privileged", "--ulimit", "stack=67108864",
                     "--ulimit=memlock=1"]


def test_shm_size_dropped_with_ipc_host_and_ulimit_host_replaces_all():
    plan = _Plan()
    opts = container_opts.merge_options(
        cfg({"ipc": "host", "shm-size": "64G", "ulimit": ["memlock=-1", "stack=1"]}),
        [("--ulimit", "host", False)], plan)
    assert opts.render(always=[]) == ["--ipc", "host", "--ulimit", "host"]
    assert plan.logs and plan.logs[0][0] == "DEBUG"


def test_config_option_that_is_a_mapping_is_an_error():
    with pytest.raises(UsageError, match=r"container\.options\.label"):
        container_opts.merge_options(cfg({"label": {"a": "b"}}), [], _Plan())


def test_inner_env_values_move_to_the_runtime_environment(tmp_path):
    env_file = tmp_path / "a.env"
    env_file.write_text("# c\nF=1 2\n\n")
    plan = _Plan()
    args, mounts = container_opts.rewrite_inner(
        ["--env", "T_TOKEN=s$(x)", "--env", str(env_file), "--config", "c.yaml", "--", "--env", "Z=1"],
        "/w", {}, plan, container.env_item)
    assert args == ["--env", "T_TOKEN", "--env", "F", "--config", "/w/c.yaml", "--", "--env", "Z=1"]
    assert plan.env == {"T_TOKEN": "s$(x)", "F": "1 2"}
    assert mounts == ["/w/c.yaml:/w/c.yaml:ro"]


def test_env_item_forms(tmp_path):
    assert container.env_item("A=b=c", "--env", {}) == [("A", "b=c")]
    assert container.env_item("HOSTVAR", "--env", {"HOSTVAR": "v"}) == [("HOSTVAR", "v")]
    with pytest.raises(UsageError, match="neither"):
        container.env_item("UNSET_X", "--env", {})
    with pytest.raises(UsageError, match="valid variable name"):
        container.env_item("1A=2", "--env", {})


def _exe(folder, name):
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return str(path)


def test_pick_runtime_skips_docker_without_engine(tmp_path):
    _exe(tmp_path, "docker")
    podman = _exe(tmp_path, "podman")
    plan = container.Plan()
    env = {"PATH": str(tmp_path), "DOCKER_HOST": f"unix://{tmp_path}/none.sock"}
    assert container_runtime.pick_runtime("", "", env, plan.log) == ("podman", podman)
    assert any("skipped" in r[2] for r in plan.records)


def test_pick_runtime_prefers_docker_whose_engine_answers(tmp_path):
    docker = _exe(tmp_path, "docker")
    _exe(tmp_path, "podman")
    sock_path = str(tmp_path / "d.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(sock_path)
    server.listen(1)
    try:
        env = {"PATH": str(tmp_path), "DOCKER_HOST": f"unix://{sock_path}"}
        assert container_runtime.pick_runtime("", "", env, container.Plan().log) == ("docker", docker)
    finally:
        server.close()


def test_pick_runtime_missing_is_exit_1_with_the_fix(tmp_path):
    with pytest.raises(MissingError, match="apt-get install podman"):
        container_runtime.pick_runtime("", "", {"PATH": str(tmp_path)}, container.Plan().log)
    with pytest.raises(MissingError, match=r"'podman' \(--runtime\) not found"):
        container_runtime.pick_runtime("podman", "--runtime", {"PATH": str(tmp_path)}, container.Plan().log)
    with pytest.raises(UsageError, match="accepted: docker, podman"):
        container_runtime.pick_runtime("lxc", "--runtime", {"PATH": str(tmp_path)}, container.Plan().log)


def test_devices_by_existence(tmp_path):
    (tmp_path / "dev" / "dri").mkdir(parents=True)
    (tmp_path / "dev" / "kfd").touch()
    plan = container.Plan()
    got = container.device_list("rocm", [], [("--device", "/dev/kfd:/dev/kfd:rwm")], str(tmp_path), plan)
    assert got == ["/dev/kfd", "/dev/dri", "/dev/kfd:/dev/kfd:rwm"]
    with pytest.raises(UsageError, match="device '/dev/infiniband' given by config"):
        container.device_list("cpu", [], [("config", "/dev/infiniband")], str(tmp_path), plan)
    assert os.path.exists(tmp_path / "dev" / "kfd")


def test_a_host_only_volume_mounts_at_the_same_path_as_upstream():
    # upstream's container --help: "If only HOST given, mounts to same path".
    class P:
        def log(self, level, message):
            pass

    cfg = {"container.options": {"volume": ["/cfg"]}}

    class C:
        def get(self, key):
            return cfg.get(key)

    opts = container_opts.merge_options(C(), [("--volume", "/data", False),
                                              ("--volume", "/a:/b", False),
                                              ("--volume", "named", False)], P())
    assert [v for v, _ in opts.items["--volume"]] == ["/cfg:/cfg", "/data:/data", "/a:/b", "named"]


def test_a_value_the_defaults_already_give_is_passed_once():
    # The runner's defaults add --cap-add SYS_PTRACE, --group-add video and
    # --security-opt seccomp=unconfined; the user's own copy (any spelling of
    # the capability) is not passed twice; a new value is added.
    opts = container_opts.merge_options(
        cfg({"cap_add": ["SYS_PTRACE", "SYS_PTRACE"], "group_add": ["video"],
             "security_opt": ["seccomp=unconfined"]}),
        [("--cap-add", "SYS_PTRACE", False), ("--cap-add", "cap_sys_ptrace", True),
         ("--cap-add", "NET_ADMIN", False), ("--group-add", "video", False),
         ("--security-opt", "seccomp=unconfined", True), ("--volume", "/a:/a", False),
         ("--volume", "/a", False)], _Plan())
    assert opts.render(always=[]) == ["--cap-add", "SYS_PTRACE", "--cap-add", "NET_ADMIN",
                                      "--group-add", "video", "--security-opt", "seccomp=unconfined",
                                      "--volume", "/a:/a"]
    assert opts.has_value("--volume", "/a:/a") and not opts.has_value("--volume", "/b:/b")

