#!/usr/bin/env bash
# deploy/ cannot run here; this checks what can be checked offline:
#  - the Prometheus rules: promtool check rules, and promtool test rules
#    (alerts fire, and do not fire, on synthetic series);
#  - the PrometheusRule manifest holds exactly the same groups;
#  - every Kubernetes manifest parses and has apiVersion/kind/metadata.name;
#  - the Grafana dashboard parses, and each panel's PromQL is valid (checked
#    by promtool as recording rules) and names only metric families that
#    exist (engine/runtime/metrics.h, the process metrics, the recording
#    rules).
set -euo pipefail
RUNFILES="${TEST_SRCDIR:-$PWD/..}/diarization"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
D="$RUNFILES/deploy"
fail() { echo "FAIL: $*" >&2; exit 1; }

promtool check rules "$D/prometheus/diarization-rules.yml"
cp "$D/prometheus/diarization-rules.yml" "$D/prometheus/diarization-rules_test.yml" "$TMP/"
(cd "$TMP" && promtool test rules diarization-rules_test.yml)

/usr/bin/python3 - "$D" "$RUNFILES/engine/runtime/metrics.h" "$TMP" <<'PY'
import json, re, sys, yaml
deploy, metrics_h, tmp = sys.argv[1:4]
rules = yaml.safe_load(open(f"{deploy}/prometheus/diarization-rules.yml"))
wrapper = yaml.safe_load(open(f"{deploy}/k8s/prometheusrule.yaml"))
assert wrapper["kind"] == "PrometheusRule", wrapper.get("kind")
assert wrapper["spec"]["groups"] == rules["groups"], "prometheusrule.yaml differs from diarization-rules.yml"

for name in ["deployment.yaml", "service.yaml", "servicemonitor.yaml", "pdb.yaml", "prometheusrule.yaml"]:
    for doc in yaml.safe_load_all(open(f"{deploy}/k8s/{name}")):
        assert doc.get("apiVersion") and doc.get("kind") and doc["metadata"].get("name"), name
dep = yaml.safe_load(open(f"{deploy}/k8s/deployment.yaml"))
c = dep["spec"]["template"]["spec"]["containers"][0]
assert c["readinessProbe"]["grpc"]["port"] == 50051, "readiness must use gRPC health"
drain = [a for a in c["args"] if a.startswith("--drain_timeout_s=")]
assert drain and float(drain[0].split("=")[1]) < dep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"], \
    "the drain must end before the grace period"

known = set(re.findall(r"\b(diarization_[a-z_]+)\b", open(metrics_h).read()))
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
echo PASS
