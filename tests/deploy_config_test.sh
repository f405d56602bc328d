#!/usr/bin/env bash
# deploy/ cannot run here; this checks what can be checked offline:
#  - the Prometheus rules: promtool check rules, and promtool test rules
#    (alerts fire, and do not fire, on synthetic series);
#  - the PrometheusRule manifest holds exactly the same groups;
#  - every Kubernetes manifest parses and has apiVersion/kind/metadata.name;
#  - the kustomize base and each overlay, rendered (deploy/render_kustomize.py),
#    validate against the Kubernetes API's JSON schemas (strict: no unknown
#    fields) of 1.27 (gRPC probes GA) and 1.37, bundled in the pinned PyPI
#    package kubernetes-validate (tools/venv-requirements.txt; offline);
#  - the manifests agree with the server: every --flag in args is one the
#    binary has (its --helpfull), the ports, probe targets and the health
#    service name exist, and the metric names of the HPA, the adapter rule,
#    the dashboard and the rules are registered in engine/runtime/metrics.cc
#    or server/process_metrics.cc;
#  - the Grafana dashboard parses, and each panel's PromQL is valid (checked
#    by promtool as recording rules) and names only metric families that
#    exist (engine/runtime/metrics.cc, the process metrics, the recording
#    rules).
set -euo pipefail
RUNFILES="${TEST_SRCDIR:-$PWD/..}/diarization"
REPO="$(dirname "$(readlink -f "$RUNFILES/WORKSPACE")")"
VENV="${DIARIZATION_VENV:-$REPO/.venv}"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
D="$RUNFILES/deploy"
fail() { echo "FAIL: $*" >&2; exit 1; }

promtool check rules "$D/prometheus/diarization-rules.yml"
cp "$D/prometheus/diarization-rules.yml" "$D/prometheus/diarization-rules_test.yml" "$TMP/"
(cd "$TMP" && promtool test rules diarization-rules_test.yml)

/usr/bin/python3 - "$D" "$RUNFILES/engine/runtime/metrics.cc" "$TMP" <<'PY'
import json, re, sys, yaml
deploy, metrics_h, tmp = sys.argv[1:4]
rules = yaml.safe_load(open(f"{deploy}/prometheus/diarization-rules.yml"))
wrapper = yaml.safe_load(open(f"{deploy}/k8s/base/prometheusrule.yaml"))
assert wrapper["kind"] == "PrometheusRule", wrapper.get("kind")
assert wrapper["spec"]["groups"] == rules["groups"], "prometheusrule.yaml differs from diarization-rules.yml"

import glob
for name in glob.glob(f"{deploy}/k8s/**/*.yaml", recursive=True):
    for doc in yaml.safe_load_all(open(name)):
        if name.endswith("kustomization.yaml"):
            continue
        assert doc.get("apiVersion") and doc.get("kind") and doc["metadata"].get("name"), name

known = set(re.findall(r'Name\("(diarization_[a-z_]+)"\)', open(metrics_h).read()))
assert "diarization_backlog_audio_seconds" in known, "metric registrations not found"
known |= {"process_resident_memory_bytes", "process_virtual_memory_bytes",
          "process_cpu_seconds_total", "process_open_fds", "process_start_time_seconds", "up"}
recorded = {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}
dash = json.load(open(f"{deploy}/grafana/diarization-dashboard.json"))
exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
assert len(exprs) >= 10, "dashboard has too few queries"
check = {"groups": [{"name": "dashboard", "rules": []}]}
for i, e in enumerate(exprs):
    for m in re.findall(r"\b((?:diarization|process)_[a-z_]+)\b", e):
        base = re.sub(r"_(bucket|sum|count)$", "", m)
        assert base in known or m in known, f"dashboard uses unknown metric {m}"
    for m in re.findall(r"\b(diarization:[a-z_:0-9]+)\b", e):
        assert m in recorded, f"dashboard uses unknown recording rule {m}"
    # Grafana variables → a literal, so promtool can parse the query.
    check["groups"][0]["rules"].append({"record": f"dashboard:q{i}", "expr": e.replace("$job", ".*")})
for g in rules["groups"]:
    for r in g["rules"]:
        for m in re.findall(r"\b(diarization_[a-z_]+)\b", r["expr"]):
            base = re.sub(r"_(bucket|sum|count)$", "", m)
            assert base in known or m in known, f"rule uses unknown metric {m}"
yaml.safe_dump(check, open(f"{tmp}/dashboard_rules.yml", "w"))
print(f"{len(exprs)} dashboard queries, manifests and rule wrapper OK")
PY
promtool check rules "$TMP/dashboard_rules.yml"

# Kubernetes manifests: render, validate against the API schemas, and
# cross-check against the server.
if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c "import kubernetes_validate" 2>/dev/null; then
  fail "kubernetes-validate is not installed in $VENV; run 'bash tools/venv.sh' (or set DIARIZATION_VENV)"
fi
"$RUNFILES/server/diarization_server" --helpfull >"$TMP/server_flags.txt" 2>&1 || true
"$RUNFILES/clients/diarize_client" --helpfull >"$TMP/client_flags.txt" 2>&1 || true
"$VENV/bin/python" "$RUNFILES/tests/deploy_manifests_check.py" "$RUNFILES" "$TMP"
echo PASS
