#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell
# primus-cli k8s without a cluster: kubectl is a stub on PATH that records its
# argv (one word a line) and its stdin, so each test asserts exactly what kubectl
# was asked: `apply --server-side -f -` with the manifest on stdin, `delete ... -l
# primus-runner/name=NAME` for stop, `logs -l ...` for logs.

load helpers/launcher

setup() {
  launcher_setup
  unset_scheduler_vars
  STUB_DIR=$TEST_DIR/bin
  mkdir -p "$STUB_DIR"
  cat >"$STUB_DIR/kubectl" <<EOF
#!/usr/bin/env bash
printf '%s\n' "\$@" >"$TEST_DIR/kubectl.argv"
cat >"$TEST_DIR/kubectl.stdin"
echo "kubectl stub: \$1 done"
EOF
  chmod +x "$STUB_DIR/kubectl"
  export PATH=$STUB_DIR:$PATH
}

teardown() {
  launcher_teardown
}

@test "k8s without --dry-run pipes the manifest to kubectl apply --server-side -f -" {
  run "$PRIMUS_CLI" k8s --image registry.example/primus:1 --nodes 2 --preset trn1 --name llama \
    -- direct -- train pretrain --config exp.yaml
  assert_success
  assert_output --partial "kubectl stub: apply done"
  [[ $(paste -sd' ' "$TEST_DIR/kubectl.argv") == "apply --server-side -f -" ]]
  grep -qx "kind: JobSet" "$TEST_DIR/kubectl.stdin"
  grep -qx "  name: llama" "$TEST_DIR/kubectl.stdin"
  grep -q "vpc.amazonaws.com/efa: 8" "$TEST_DIR/kubectl.stdin"
}

@test "k8s --dry-run (and primus-cli --dry-run k8s) print the manifest and never call kubectl" {
  run "$PRIMUS_CLI" --dry-run k8s --image i --nodes 2 --preset mi300x --name llama -- -- train
  assert_success
  assert_line "kind: JobSet"
  [[ ! -e $TEST_DIR/kubectl.argv ]]
  run "$PRIMUS_CLI" k8s --dry-run --image i --nodes 2 --preset mi300x --name llama --as pytorchjob -- -- train
  assert_success
  assert_line "kind: PyTorchJob"
  [[ ! -e $TEST_DIR/kubectl.argv ]]
}

@test "a refused variable or bad option applies nothing (exit 2)" {
  run "$PRIMUS_CLI" k8s --image i --nodes 2 --preset mi300x --name llama --env NCCL_ALGO=bogus -- -- train
  assert_failure 2
  assert_output --partial "rule nccl_algo_values"
  [[ ! -e $TEST_DIR/kubectl.argv ]]
  run "$PRIMUS_CLI" k8s --image i --nodes 2 --preset mi300x --name Bad_Name -- -- train
  assert_failure 2
  assert_output --partial "RFC 1035"
  [[ ! -e $TEST_DIR/kubectl.argv ]]
}

@test "k8s stop NAME deletes by the label; --as trainjob also its runtime" {
  run "$PRIMUS_CLI" k8s stop llama --namespace team
  assert_success
  [[ $(paste -sd' ' "$TEST_DIR/kubectl.argv") == "delete jobset --namespace team -l primus-runner/name=llama" ]]
  run "$PRIMUS_CLI" k8s stop llama --as trainjob
  assert_success
  [[ $(paste -sd' ' "$TEST_DIR/kubectl.argv") == "delete trainjob,clustertrainingruntime -l primus-runner/name=llama" ]]
}

@test "k8s logs NAME reads every pod by the label, extra words passed on" {
  run "$PRIMUS_CLI" k8s logs llama -f
  assert_success
  [[ $(paste -sd' ' "$TEST_DIR/kubectl.argv") == "logs -l primus-runner/name=llama --prefix --tail=-1 --max-log-requests=1000 -f" ]]
}

@test "kubectl missing: exit 1 with a clear message, before anything else" {
  rm "$STUB_DIR/kubectl"
  # A PATH with every tool of this machine but kubectl.
  local tools=$TEST_DIR/tools f
  mkdir -p "$tools"
  for f in /usr/bin/* /bin/*; do
    [[ ${f##*/} == kubectl || -e $tools/${f##*/} || -L $tools/${f##*/} ]] || ln -s "$f" "$tools/${f##*/}"
  done
  PATH=$tools run "$PRIMUS_CLI" k8s stop llama
  assert_failure 1
  assert_output --partial "'kubectl' not found on PATH"
  PATH=$tools run "$PRIMUS_CLI" k8s --image i --nodes 2 --preset mi300x --name llama -- -- train
  assert_failure 1
  assert_output --partial "'kubectl' not found on PATH"
}

@test "k8s stacks NAME: lists the pods by the label, runs primus-cli stacks --json in each, one summary" {
  cat >"$STUB_DIR/kubectl" <<EOF
#!/usr/bin/env bash
printf '%s\n' "\$*" >>"$TEST_DIR/kubectl.calls"
case \$1 in
  get) printf 'pod/llama-node-0-0\npod/llama-node-0-1\n' ;;
  exec) n=\${*: -5:1}; printf '{"node": %s, "host": "h%s", "places": [], "verdict": ""}\n' "\${n##*-}" "\${n##*-}" ;;
esac
EOF
  run "$PRIMUS_CLI" k8s stacks llama --namespace team
  assert_success
  assert_output --partial "stacks of llama across 2 pod(s):"
  assert_output --partial "run monitor of node 1 (h1)"
  run cat "$TEST_DIR/kubectl.calls"
  assert_line --index 0 "get pods --namespace team -l primus-runner/name=llama -o name"
  assert_line --index 1 "exec --namespace team llama-node-0-0 -- primus-cli stacks --json"
  assert_line --index 2 "exec --namespace team llama-node-0-1 -- primus-cli stacks --json"
}
