# shellcheck shell=bash
# tests/bats/helpers/podman.bash: the set-up the real-podman suites share
# (container_podman, hang_container, exit_codes, helpers_watched_container).
# Podman runs with runc under a test-local configuration: CONTAINERS_CONF,
# CONTAINERS_STORAGE_CONF, CONTAINERS_REGISTRIES_CONF and XDG_RUNTIME_DIR point
# under <repo>/.cache/podman (tests/container/podman_env.bash), never at the
# host's own container configuration. A suite loads it at its top (it loads
# helpers/launcher and defines setup_file) and calls podman_suite_setup first
# in its setup:
#
#   load helpers/podman
#   setup() { podman_suite_setup; ...; }
#
# setup_file, podman_suite_setup_file: once per file: the configuration, the
#   test image (built once), and one real container run; fails, never skips,
#   when podman cannot run a container.
# podman_suite_setup: per test: launcher_setup (a fresh HOME, working
#   directory and workspace), the configuration again, the test's container
#   settings as the user's ~/.primus.yaml, no inherited DOCKER_IMAGE,
#   NCCL_DEBUG, PRIMUS_KILL_GRACE or PRIMUS_HOOKS_DIR, and the cpu accelerator.

load helpers/launcher

setup_file() {
  podman_suite_setup_file
}

podman_suite_setup_file() {
  REPO_ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  # shellcheck source=tests/container/podman_env.bash
  source "$REPO_ROOT/tests/container/podman_env.bash"
  podman_test_env "$REPO_ROOT"
  podman_test_image "$REPO_ROOT"
  podman_test_check
}

podman_suite_setup() {
  launcher_setup
  # shellcheck source=tests/container/podman_env.bash
  source "$REPO_ROOT/tests/container/podman_env.bash"
  podman_test_env "$REPO_ROOT"
  podman_test_image "$REPO_ROOT"
  # The machine's container settings are the user's ~/.primus.yaml: it also
  # proves the user config reaches the launcher (and, mounted, the inner direct).
  cp "$PODMAN_TEST_CONFIG" "$HOME/.primus.yaml"
  unset DOCKER_IMAGE NCCL_DEBUG PRIMUS_KILL_GRACE PRIMUS_HOOKS_DIR
  export PRIMUS_ACCELERATOR=cpu
}
