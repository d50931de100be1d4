#!/usr/bin/env bash
# Validate deploy/, the Grafana dashboard and the Dockerfile without a cluster.
#
#   bash scripts/validate-deploy.sh
#
# 1. a Python venv with pinned kubernetes-validate, PyYAML and promql-parser, kept in
#    ${TENSORGATE_CACHE_DIR:-$HOME/.cache/tensorgate}/venv-deploy (re-created only when the
#    pins change, so a warm run is quick);
# 2. deploy/tensorgate.toml parses as TOML;
# 3. the kustomization is rendered with `kustomize build` or `kubectl kustomize`, whichever is
#    on PATH: the base and each optional component. Without either (neither PyPI nor Debian
#    packages kustomize itself), the rendering steps are skipped and step 4 alone covers the
#    manifests, plus the ConfigMap that configMapGenerator would generate;
# 4. kubernetes-validate --strict, against the oldest (1.30: the `sleep` preStop action) and
#    newest Kubernetes it knows, on every manifest file, on that generated ConfigMap and on
#    the renderings. It has no schema for PodMonitor/ServiceMonitor: those two warnings are
#    expected, any other warning (an unknown kind or apiVersion) fails;
# 5. scripts/check_deploy.py on the source files and on each rendering (selectors, ports,
#    probes, securityContext, config mount, shutdown timing, dashboard, Dockerfile);
# 6. scripts/dashboard_metrics.py --self-test, and --syntax on the dashboard (PromQL parses).
#
# Optional, when set:
#   TENSORGATE_BIN=target/release/tensorgate    also run `tensorgate check-config` on deploy/tensorgate.toml
#   TENSORGATE_SCRAPE_FILE=scrape.txt           also check the dashboard's metrics against a real
#                                               /metrics scrape (take it after sending traffic)
#   TENSORGATE_KUSTOMIZE=none                   skip rendering even if a renderer is on PATH
#
# Exits non-zero if any step fails; every step runs regardless, so one run lists every problem.
set -uo pipefail

KUBERNETES_VALIDATE_VERSION=1.37.0
PYYAML_VERSION=6.0.3
PROMQL_PARSER_VERSION=0.11.0
K8S_VERSIONS=(1.30.0 1.37.0)
ALLOWED_SCHEMALESS='^(PodMonitor|ServiceMonitor) with api version monitoring\.coreos\.com/v1$'

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT" || exit 2
CACHE_DIR="${TENSORGATE_CACHE_DIR:-${HOME:-/tmp}/.cache/tensorgate}"
VENV="$CACHE_DIR/venv-deploy"
START=$(date +%s.%N)
FAILED=()

say() { printf '==> %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; FAILED+=("$1"); }
elapsed() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1fs", e - s }'; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/validate-deploy.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
WORK="$(cd "$WORK" && pwd -P)"

# ---------------------------------------------------------------------------- 1. venv
t0=$(date +%s.%N)
PY_SYS="${PYTHON:-python3}"
if ! "$PY_SYS" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
    echo "FAIL: need Python >= 3.9 ($PY_SYS)"; exit 2
fi
REQS="kubernetes-validate==$KUBERNETES_VALIDATE_VERSION pyyaml==$PYYAML_VERSION promql-parser==$PROMQL_PARSER_VERSION"
if ! "$PY_SYS" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    REQS="$REQS tomli==2.2.1"   # tomllib is in the standard library from 3.11
fi
STAMP="$VENV/.tensorgate-reqs"
if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$REQS" ]] \
    && "$VENV/bin/python" -c 'import kubernetes_validate, yaml, promql_parser' 2>/dev/null; then
    say "venv: $VENV (up to date)"
else
    say "venv: creating $VENV"
    rm -rf "$VENV"
    mkdir -p "$CACHE_DIR"
    # shellcheck disable=SC2086  # $REQS is a list of requirement specifiers
    if "$PY_SYS" -m venv "$VENV" \
        && "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check $REQS; then
        printf '%s' "$REQS" > "$STAMP"
    else
        echo "FAIL: could not install $REQS into $VENV"; exit 2
    fi
fi
PY="$VENV/bin/python"
KV="$VENV/bin/kubernetes-validate"
say "venv ready in $(elapsed "$t0")"

# ---------------------------------------------------------------------------- 2. TOML
say "deploy/tensorgate.toml: TOML syntax"
if "$PY" - deploy/tensorgate.toml <<'EOF'
import sys
try:
    import tomllib
except ImportError:
    import tomli as tomllib
with open(sys.argv[1], "rb") as f:
    cfg = tomllib.load(f)
print(f"    ok: sections {sorted(cfg)}; {len(cfg.get('routes', []))} routes")
EOF
then :; else fail "tensorgate.toml is not valid TOML"; fi

if [[ -n "${TENSORGATE_BIN:-}" ]]; then
    say "tensorgate check-config deploy/tensorgate.toml ($TENSORGATE_BIN)"
    "$TENSORGATE_BIN" check-config deploy/tensorgate.toml || fail "tensorgate check-config"
fi

# ---------------------------------------------------------------------------- 3. render
RENDER=()
if [[ "${TENSORGATE_KUSTOMIZE:-}" == "none" ]]; then
    :
elif command -v kustomize >/dev/null 2>&1; then
    RENDER=(kustomize build)
elif command -v kubectl >/dev/null 2>&1 && kubectl kustomize --help >/dev/null 2>&1; then
    RENDER=(kubectl kustomize)
fi

RENDERED=()
render_variant() { # name component...
    local name="$1"; shift
    local dir="$WORK/overlay-$name" rel
    mkdir -p "$dir"
    # kustomize refuses absolute paths: point at deploy/ relative to the overlay.
    rel="$("$PY" -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$ROOT/deploy" "$dir")"
    {
        echo "apiVersion: kustomize.config.k8s.io/v1beta1"
        echo "kind: Kustomization"
        echo "resources: [\"$rel\"]"
        if (($#)); then
            echo "components:"
            for c in "$@"; do echo "  - \"$rel/optional/$c\""; done
        fi
    } > "$dir/kustomization.yaml"
    if "${RENDER[@]}" "$dir" > "$WORK/rendered-$name.yaml" 2> "$WORK/render-$name.err"; then
        RENDERED+=("$WORK/rendered-$name.yaml")
        printf '    %-16s %s objects\n' "$name" "$(grep -c '^kind:' "$WORK/rendered-$name.yaml")"
    else
        sed 's/^/    /' "$WORK/render-$name.err"
        fail "kustomize render: $name"
    fi
}

if ((${#RENDER[@]})); then
    say "render with '${RENDER[*]}'"
    render_variant base
    render_variant servicemonitor servicemonitor
    render_variant networkpolicy networkpolicy
    render_variant grpc-probe grpc-probe
else
    say "render: no kustomize or kubectl on PATH (or TENSORGATE_KUSTOMIZE=none); validating the files one by one"
fi

# ---------------------------------------------------------------------------- 4. kubernetes-validate
# The ConfigMap configMapGenerator makes (name without the content hash), so it is validated
# even when nothing renders.
"$PY" - deploy "$WORK/generated-configmap.yaml" <<'EOF' || fail "generate ConfigMap"
import os, sys, yaml
deploy, out = sys.argv[1], sys.argv[2]
with open(os.path.join(deploy, "kustomization.yaml")) as f:
    kust = yaml.safe_load(f)
docs = []
for gen in kust.get("configMapGenerator") or []:
    data = {}
    for entry in gen.get("files") or []:
        key, _, path = entry.rpartition("=")
        with open(os.path.join(deploy, path)) as f:
            data[key or os.path.basename(path)] = f.read()
    meta = {"name": gen["name"]}
    labels = (gen.get("options") or {}).get("labels")
    if labels:
        meta["labels"] = labels
    docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data})
with open(out, "w") as f:
    yaml.safe_dump_all(docs, f, sort_keys=False)
EOF

mapfile -t MANIFESTS < <(find deploy -name '*.yaml' ! -name kustomization.yaml | LC_ALL=C sort)
K_ARGS=()
for v in "${K8S_VERSIONS[@]}"; do K_ARGS+=(-k "$v"); done
say "kubernetes-validate $KUBERNETES_VALIDATE_VERSION --strict ${K_ARGS[*]}: ${#MANIFESTS[@]} files + generated ConfigMap + ${#RENDERED[@]} renderings"
"$KV" --strict "${K_ARGS[@]}" "${MANIFESTS[@]}" "$WORK/generated-configmap.yaml" ${RENDERED[@]+"${RENDERED[@]}"} \
    > "$WORK/kv.log" 2>&1
kv_rc=$?
sed -e "s#$WORK/##g" "$WORK/kv.log" > "$WORK/kv.txt"
printf '    %s resources passed\n' "$(grep -c '^INFO .* passed ' "$WORK/kv.txt")"
grep -v '^INFO ' "$WORK/kv.txt" | sed 's/^/    /'
if ((kv_rc != 0)); then
    fail "kubernetes-validate (exit $kv_rc)"
fi
# Schema-less kinds only warn: allow exactly the Prometheus Operator CRDs.
unexpected="$( { grep '^WARN ' "$WORK/kv.txt" \
        | sed -n 's/.*Couldn.t find schema for kind \(.*\) for kubernetes version .*/\1/p' \
        | grep -Ev "$ALLOWED_SCHEMALESS"
    grep '^WARN ' "$WORK/kv.txt" | grep -v "Couldn't find schema for kind"
} | LC_ALL=C sort -u | paste -sd ';' -)"
if [[ -n "$unexpected" ]]; then
    fail "kubernetes-validate: unexpected warnings (unknown kind or apiVersion?): $unexpected"
fi

# ---------------------------------------------------------------------------- 5. check_deploy
say "check_deploy.py: source files"
"$PY" scripts/check_deploy.py | sed 's/^/    /'
((PIPESTATUS[0] == 0)) || fail "check_deploy.py (source)"
if ((${#RENDERED[@]})); then
    say "check_deploy.py: renderings"
    R_ARGS=()
    for r in "${RENDERED[@]}"; do R_ARGS+=(--rendered "$r"); done
    "$PY" scripts/check_deploy.py "${R_ARGS[@]}" | sed -e "s#$WORK/##g" -e 's/^/    /'
    ((PIPESTATUS[0] == 0)) || fail "check_deploy.py (rendered)"
fi

# ---------------------------------------------------------------------------- 6. dashboard
say "dashboard_metrics.py --self-test"
"$PY" scripts/dashboard_metrics.py --self-test | sed 's/^/    /'
((PIPESTATUS[0] == 0)) || fail "dashboard_metrics.py --self-test"
say "dashboard_metrics.py --syntax deploy/grafana/tensorgate.json"
if n="$("$PY" scripts/dashboard_metrics.py --syntax deploy/grafana/tensorgate.json | wc -l)" \
    && ((n > 0)); then
    printf '    %s metric names queried, every expression parses\n' "$n"
else
    fail "dashboard PromQL"
fi
if [[ -n "${TENSORGATE_SCRAPE_FILE:-}" ]]; then
    say "dashboard metrics present in $TENSORGATE_SCRAPE_FILE"
    "$PY" scripts/dashboard_metrics.py deploy/grafana/tensorgate.json --check "$TENSORGATE_SCRAPE_FILE" \
        || fail "dashboard metrics missing from the scrape"
fi

# ---------------------------------------------------------------------------- summary
if ((${#FAILED[@]})); then
    printf '\nvalidate-deploy: %d step(s) FAILED in %s:\n' "${#FAILED[@]}" "$(elapsed "$START")"
    printf '  - %s\n' "${FAILED[@]}"
    exit 1
fi
printf '\nvalidate-deploy: OK in %s\n' "$(elapsed "$START")"
