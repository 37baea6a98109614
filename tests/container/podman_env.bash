# shellcheck shell=bash
# tests/container/podman_env.bash: a real podman + runc for the container tests,
# isolated from the host's own container configuration.
#
# podman_test_env   exports CONTAINERS_CONF, CONTAINERS_STORAGE_CONF,
#                   CONTAINERS_REGISTRIES_CONF and XDG_RUNTIME_DIR pointing at
#                   files under $PODMAN_TEST_ROOT (default <repo>/.cache/podman),
#                   never at /etc/containers or ~/.config/containers.
# podman_test_image builds $PODMAN_TEST_IMAGE once: `podman import` of a tiny
#                   root tree (passwd, group, /tmp); /usr, the Python install and
#                   the project .venv come from the host, bind-mounted read-only
#                   by the container config this writes ($PODMAN_TEST_CONFIG, a
#                   container: section for ~/.primus.yaml).
# podman_test_check fails loudly (never skips) when podman cannot run a container.
#
# The sandbox this was written on forbids raising rlimits and crun rejects its
# hybrid cgroup layout, so containers.conf sets default_ulimits = [] and
# runtime = "runc" (cgroupfs manager, file events logger: no systemd), and the
# test config passes --ulimit host instead of the production ulimit defaults.

PODMAN_TEST_IMAGE=localhost/primus-runner-test:1

podman_test_env() {
  local repo=$1
  PODMAN_TEST_ROOT=${PODMAN_TEST_ROOT:-$repo/.cache/podman}
  mkdir -p "$PODMAN_TEST_ROOT"/{graph,run,tmp,xdg}
  chmod 700 "$PODMAN_TEST_ROOT/xdg"
  cat >"$PODMAN_TEST_ROOT/containers.conf" <<EOF
# written by tests/container/podman_env.bash
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$PODMAN_TEST_ROOT/events.log"
tmp_dir = "$PODMAN_TEST_ROOT/tmp"
EOF
  cat >"$PODMAN_TEST_ROOT/storage.conf" <<EOF
# written by tests/container/podman_env.bash
[storage]
driver = "vfs"
graphroot = "$PODMAN_TEST_ROOT/graph"
runroot = "$PODMAN_TEST_ROOT/run"
EOF
  # No registry to search or pull from: a missing image fails at once.
  cat >"$PODMAN_TEST_ROOT/registries.conf" <<'EOF'
unqualified-search-registries = []
EOF
  export CONTAINERS_CONF=$PODMAN_TEST_ROOT/containers.conf
  export CONTAINERS_STORAGE_CONF=$PODMAN_TEST_ROOT/storage.conf
  export CONTAINERS_REGISTRIES_CONF=$PODMAN_TEST_ROOT/registries.conf
  export XDG_RUNTIME_DIR=$PODMAN_TEST_ROOT/xdg
  export PODMAN_TEST_ROOT PODMAN_TEST_IMAGE
}

# podman_test_mounts REPO: the read-only mounts that give the image its /usr,
# the Python install and the project .venv (their real paths).
podman_test_mounts() {
  local repo=$1 venv prefix
  venv=$(readlink -f "$repo/.venv")
  prefix=$("$venv/bin/python" -c 'import sys; print(sys.base_prefix)')
  PODMAN_TEST_VENV=$venv
  PODMAN_TEST_VOLUMES=("/usr:/usr:ro")
  [[ $prefix == /usr || $prefix == /usr/* ]] || PODMAN_TEST_VOLUMES+=("$prefix:$prefix:ro")
  [[ $venv == "$repo"/* ]] || PODMAN_TEST_VOLUMES+=("$venv:$venv:ro")
}

podman_test_image() {
  local repo=$1
  podman_test_mounts "$repo"
  PODMAN_TEST_CONFIG=$PODMAN_TEST_ROOT/user-config.yaml
  {
    echo "# written by tests/container/podman_env.bash"
    echo "container:"
    echo "  runtime: podman"
    echo "  image: $PODMAN_TEST_IMAGE"
    echo "  options:"
    echo "    ulimit: [host]"
    echo "    volume:"
    printf '      - %s\n' "${PODMAN_TEST_VOLUMES[@]}"
  } >"$PODMAN_TEST_CONFIG"
  export PODMAN_TEST_CONFIG
  podman image exists "$PODMAN_TEST_IMAGE" 2>/dev/null && return 0
  podman_test_rootfs
  podman import --quiet --change "ENV=PATH=$PODMAN_TEST_VENV/bin:/usr/local/bin:/usr/bin:/bin" \
    "$PODMAN_TEST_ROOT/rootfs.tar" "$PODMAN_TEST_IMAGE" >/dev/null
}

# podman_test_rootfs: $PODMAN_TEST_ROOT/rootfs.tar, the tiny root tree both
# test images are imported from (passwd, group, /tmp, the /usr links).
podman_test_rootfs() {
  local tree=$PODMAN_TEST_ROOT/rootfs
  rm -rf "$tree"
  mkdir -p "$tree"/{usr,etc,proc,sys,dev,root,run,var/tmp,tmp}
  chmod 1777 "$tree/tmp" "$tree/var/tmp"
  ln -s usr/bin "$tree/bin"
  ln -s usr/lib "$tree/lib"
  ln -s usr/lib64 "$tree/lib64"
  ln -s usr/sbin "$tree/sbin"
  printf 'root:x:0:0:root:/root:/bin/bash\n' >"$tree/etc/passwd"
  printf 'root:x:0:\nvideo:x:44:\n' >"$tree/etc/group"
  tar -C "$tree" -cf "$PODMAN_TEST_ROOT/rootfs.tar" .
}

# podman_test_check: one real container run, or a loud failure with podman's words.
podman_test_check() {
  local cmd out
  for cmd in podman runc catatonit; do
    command -v "$cmd" >/dev/null || {
      echo "container tests: '$cmd' is not installed; run 'make setup-system' (apt-get install podman runc catatonit)" >&2
      return 1
    }
  done
  local -a vols=()
  local v
  for v in "${PODMAN_TEST_VOLUMES[@]}"; do vols+=(--volume "$v"); done
  if ! out=$(podman run --rm --ulimit host --network host --ipc host --init "${vols[@]}" \
    "$PODMAN_TEST_IMAGE" python3 -c 'print("ok")' 2>&1) || [[ $out != *ok* ]]; then
    echo "container tests: podman cannot run a container here: $out" >&2
    return 1
  fi
}

# podman_bare_image REPO: a second test image, $PODMAN_BARE_IMAGE, as a user
# with a plain image brings it: the same tiny root tree, /usr and the Python
# install mounted, and on PATH first a user's own venv
# ($PODMAN_TEST_ROOT/bare-venv) that holds torch and numpy and what torch
# itself requires (filelock, typing_extensions, setuptools, sympy, mpmath,
# networkx, jinja2, markupsafe, fsspec), linked from the torch user env
# (tests/userenv/setup.sh), nothing else: no psutil, no PyYAML. The venv does
# not see the Python install's own site-packages. Writes $PODMAN_BARE_CONFIG
# (a container: section for ~/.primus.yaml) and needs podman_test_image first.
podman_bare_image() {
  local repo=$1 torch tsite site pkg prefix
  torch=$(readlink -f "${PRIMUS_USERENV_DIR:-$repo/.userenv}/torch")
  [[ -x $torch/bin/python ]] || {
    echo "container tests: no torch user env at $torch; run 'make setup-userenv'" >&2
    return 1
  }
  PODMAN_BARE_VENV=$PODMAN_TEST_ROOT/bare-venv
  PODMAN_BARE_IMAGE=localhost/primus-runner-bare:1
  prefix=$("$torch/bin/python" -c 'import sys; print(sys.base_prefix)')
  tsite=$("$torch/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  if [[ ! -x $PODMAN_BARE_VENV/bin/python ]]; then
    rm -rf "$PODMAN_BARE_VENV"
    "$prefix/bin/python3" -m venv --without-pip "$PODMAN_BARE_VENV"
    site=$("$PODMAN_BARE_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    for pkg in torch torchgen functorch numpy numpy.libs filelock typing_extensions.py setuptools \
      _distutils_hack sympy mpmath networkx jinja2 markupsafe fsspec isympy.py; do
      [[ -e $tsite/$pkg ]] || continue
      ln -s "$tsite/$pkg" "$site/$pkg"
    done
    for pkg in "$tsite"/{torch,numpy,filelock,typing_extensions,setuptools,sympy,mpmath,networkx,jinja2,markupsafe,fsspec}-*.dist-info; do
      [[ -e $pkg ]] && ln -s "$pkg" "$site/${pkg##*/}"
    done
  fi
  PODMAN_BARE_CONFIG=$PODMAN_TEST_ROOT/bare-config.yaml
  {
    echo "# written by tests/container/podman_env.bash (podman_bare_image)"
    echo "container:"
    echo "  runtime: podman"
    echo "  image: $PODMAN_BARE_IMAGE"
    echo "  options:"
    echo "    ulimit: [host]"
    echo "    volume:"
    echo "      - /usr:/usr:ro"
    [[ $prefix == /usr || $prefix == /usr/* ]] || echo "      - $prefix:$prefix:ro"
    echo "      - $torch:$torch:ro"
    [[ $PODMAN_BARE_VENV == "$repo"/* ]] || echo "      - $PODMAN_BARE_VENV:$PODMAN_BARE_VENV:ro"
  } >"$PODMAN_BARE_CONFIG"
  export PODMAN_BARE_CONFIG PODMAN_BARE_IMAGE PODMAN_BARE_VENV
  podman image exists "$PODMAN_BARE_IMAGE" 2>/dev/null && return 0
  podman_test_rootfs
  podman import --quiet --change "ENV=PATH=$PODMAN_BARE_VENV/bin:/usr/local/bin:/usr/bin:/bin" \
    "$PODMAN_TEST_ROOT/rootfs.tar" "$PODMAN_BARE_IMAGE" >/dev/null
}
