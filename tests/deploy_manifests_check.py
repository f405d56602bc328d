#!/usr/bin/env python3
"""The Kubernetes part of //tests:deploy_config_test (see its header).

    deploy_manifests_check.py RUNFILES TMP

TMP holds server_flags.txt and client_flags.txt (the binaries' --helpfull).
Runs in the tools venv (kubernetes-validate, PyYAML).
"""
import glob
import os
import re
import sys

import kubernetes_validate
import yaml

RUNFILES, TMP = sys.argv[1:3]
DEPLOY = os.path.join(RUNFILES, "deploy")
sys.path.insert(0, DEPLOY)
import render_kustomize  # noqa: E402

# Oldest release with GA gRPC probes, and the newest schemas the package has.
VERSIONS = ["1.27.0", "1.37.0"]
# Custom resources: no upstream schema; checked structurally below.
CRDS = {"ServiceMonitor", "PrometheusRule"}
errors = []


def check(condition, message):
    if not condition:
        errors.append(message)


def flags_of(path):
    # absl --helpfull lists "--name (help)"; the names are what matter.
    return set(re.findall(r"^\s+--([a-z_0-9]+) ", open(path).read(), re.M))


server_flags = flags_of(os.path.join(TMP, "server_flags.txt"))
client_flags = flags_of(os.path.join(TMP, "client_flags.txt"))
check({"listen", "metrics_listen", "models", "device", "drain_timeout_s"} <= server_flags,
      f"could not read the server's flags from --helpfull (got {len(server_flags)})")

source = open(os.path.join(RUNFILES, "engine/runtime/metrics.cc")).read()
metrics = set(re.findall(r'Name\("(diarization_[a-z_]+)"\)', source))
metrics |= set(re.findall(r'Gauge\("(process_[a-z_]+)"',
                          open(os.path.join(RUNFILES, "server/process_metrics.cc")).read()))
http_paths = set(re.findall(r'std::strcmp\(url, "(/[a-z]+)"\)',
                            open(os.path.join(RUNFILES, "server/metrics_endpoint.cc")).read()))
check("/healthz" in http_paths, f"the metrics endpoint's paths not found ({http_paths})")
health_names = {""} | set(re.findall(
    r'SetServingStatus\("([^"]+)"', open(os.path.join(RUNFILES, "server/service_state.cc")).read()))
check("diarization.v1.Diarization" in health_names, "health service names not found")

# The container's listening ports, from the image's entrypoint.
dockerfile = open(os.path.join(DEPLOY, "Dockerfile")).read()
grpc_port = int(re.search(r'"--listen=0\.0\.0\.0:(\d+)"', dockerfile).group(1))
metrics_port = int(re.search(r'"--metrics_listen=0\.0\.0\.0:(\d+)"', dockerfile).group(1))


def validate(doc, where):
    kind = doc["kind"]
    if kind in CRDS:
        check(doc["apiVersion"] == "monitoring.coreos.com/v1", f"{where}: {kind} apiVersion")
        return
    for version in VERSIONS:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            path = "/".join(str(p) for p in e.path)
            errors.append(f"{where}: {kind}/{doc['metadata']['name']} invalid for "
                          f"Kubernetes {version} at {path}: {e.message}")
        except kubernetes_validate.SchemaNotFoundError:
            errors.append(f"{where}: no schema for {doc['apiVersion']} {kind} in {version}")


def port_number(container, port):
    if isinstance(port, int):
        return port
    named = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    check(port in named, f"port name {port!r} is not a container port")
    return named.get(port)


def cross_check(docs, where):
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    dep = by_kind["Deployment"][0]
    pod = dep["spec"]["template"]["spec"]
    c = next(c for c in pod["containers"] if c["name"] == "diarization")
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    check(ports.get("grpc") == grpc_port, f"{where}: container port grpc != {grpc_port} (Dockerfile)")
    check(ports.get("metrics") == metrics_port,
          f"{where}: container port metrics != {metrics_port} (Dockerfile)")
    # Every server flag exists; the listen flags are the image's, not overridden.
    for arg in c.get("args", []):
        name = arg[2:].split("=", 1)[0]
        check(arg.startswith("--") and name in server_flags,
              f"{where}: the server has no flag {arg!r}")
        check(name not in ("listen", "metrics_listen"),
              f"{where}: {arg} overrides the image's listen address (ports above)")
    drain = [float(a.split("=")[1]) for a in c["args"] if a.startswith("--drain_timeout_s=")]
    check(drain and drain[0] < pod.get("terminationGracePeriodSeconds", 30),
          f"{where}: the drain must end before the grace period")
    # Probes: readiness and start-up ask the gRPC health service of the gRPC
    # port (or run the bundled client); liveness asks its own health name
    # (SERVING while the port answers calls at all).
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        p = c.get(probe)
        check(p is not None, f"{where}: no {probe}")
        if p is None:
            continue
        if "grpc" in p:
            check(port_number(c, p["grpc"]["port"]) == grpc_port, f"{where}: {probe} port")
            check(p["grpc"].get("service", "") in health_names,
                  f"{where}: {probe} asks for health service {p['grpc'].get('service')!r}, "
                  f"the server reports {sorted(health_names)}")
        elif "httpGet" in p:
            # The metrics endpoint's /healthz (the gRPC health state, for
            # probes that cannot speak TLS).
            check(port_number(c, p["httpGet"]["port"]) == metrics_port, f"{where}: {probe} port")
            check(p["httpGet"]["path"] in http_paths,
                  f"{where}: {probe} GETs {p['httpGet']['path']}, the server serves {sorted(http_paths)}")
        elif "tcpSocket" in p:
            check(port_number(c, p["tcpSocket"]["port"]) == grpc_port, f"{where}: {probe} port")
        elif "exec" in p:
            cmd = p["exec"]["command"]
            check(cmd[0].endswith("diarize_client"), f"{where}: {probe} runs {cmd[0]}")
            for arg in cmd[1:]:
                check(arg[2:].split("=", 1)[0] in client_flags,
                      f"{where}: {probe}: the client has no flag {arg!r}")
        else:
            errors.append(f"{where}: {probe} has no grpc/tcpSocket/exec handler")
    check(any(k in c["readinessProbe"] for k in ("grpc", "exec", "httpGet")),
          f"{where}: readiness must use the server's health")
    if any(a.startswith("--tls_cert=") for a in c["args"]):
        for probe in ("startupProbe", "readinessProbe"):
            check("grpc" not in c[probe], f"{where}: {probe} is a gRPC probe, which cannot speak TLS")
    mounts = {m["name"] for m in c.get("volumeMounts", [])}
    volumes = {v["name"] for v in pod.get("volumes", [])}
    check(mounts <= volumes, f"{where}: volumeMounts {mounts - volumes} have no volume")
    ann = dep["spec"]["template"]["metadata"].get("annotations", {})
    if "prometheus.io/port" in ann:
        check(int(ann["prometheus.io/port"]) == metrics_port, f"{where}: prometheus.io/port")
    labels = dep["spec"]["template"]["metadata"]["labels"]

    def selects(selector):
        return all(labels.get(k) == v for k, v in selector.items())

    for svc in by_kind.get("Service", []):
        check(selects(svc["spec"]["selector"]), f"{where}: Service selector misses the pods")
        for p in svc["spec"]["ports"]:
            check(p["targetPort"] in ports or p["targetPort"] in ports.values(),
                  f"{where}: Service targetPort {p['targetPort']} is not a container port")
    for sm in by_kind.get("ServiceMonitor", []):
        svc_ports = {p["name"] for s in by_kind["Service"] for p in s["spec"]["ports"]}
        for e in sm["spec"]["endpoints"]:
            check(e["port"] in svc_ports, f"{where}: ServiceMonitor port {e['port']}")
            check(e.get("path", "/metrics") == "/metrics", f"{where}: ServiceMonitor path")
    for pdb in by_kind.get("PodDisruptionBudget", []):
        check(selects(pdb["spec"]["selector"]["matchLabels"]), f"{where}: PDB selector")
    for np in by_kind.get("NetworkPolicy", []):
        check(selects(np["spec"]["podSelector"]["matchLabels"]), f"{where}: NetworkPolicy selector")
        allowed = {p["port"] for rule in np["spec"]["ingress"] for p in rule["ports"]}
        check(allowed <= set(ports) | set(ports.values()),
              f"{where}: NetworkPolicy names ports {allowed - set(ports)} the pod lacks")
        check(set(ports) <= allowed, f"{where}: NetworkPolicy leaves a port closed")
    for hpa in by_kind.get("HorizontalPodAutoscaler", []):
        ref = hpa["spec"]["scaleTargetRef"]
        check(ref["kind"] == "Deployment" and ref["name"] == dep["metadata"]["name"],
              f"{where}: HPA target")
        backlog = [float(a.split("=")[1]) for a in c["args"] if a.startswith("--max_backlog_audio_s=")]
        for m in hpa["spec"]["metrics"]:
            name = m["pods"]["metric"]["name"]
            check(name in adapter_metrics, f"{where}: HPA metric {name} is not served by the adapter rule")
            # Scale before admission control refuses: the target must sit
            # well below the backlog at which calls get RESOURCE_EXHAUSTED.
            target = float(m["pods"]["target"]["averageValue"])
            check(backlog and target <= 0.8 * backlog[0],
                  f"{where}: HPA target {target} is not below 80% of --max_backlog_audio_s {backlog}")


# The adapter rule: which series it reads, which metric it serves.
adapter = yaml.safe_load(open(os.path.join(DEPLOY, "k8s/prometheus-adapter/configmap.yaml")))
validate(adapter, "prometheus-adapter/configmap.yaml")
adapter_metrics = set()
for rule in yaml.safe_load(adapter["data"]["config.yaml"])["rules"]:
    series = re.match(r"([a-z_:]+)", rule["seriesQuery"]).group(1)
    check(series in metrics, f"adapter rule reads {series}, which the server does not register")
    check(all(k in rule["metricsQuery"] for k in ("<<.Series>>", "<<.LabelMatchers>>", "<<.GroupBy>>")),
          "adapter metricsQuery must keep the adapter's placeholders")
    adapter_metrics.add(rule["name"].get("as", series))

overlays = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(DEPLOY, "k8s/overlays/*/kustomization.yaml")))
check(len(overlays) >= 2, f"expected the gpu and cpu overlays, found {overlays}")
rendered = 0
for directory in [os.path.join(DEPLOY, "k8s/base")] + overlays:
    where = os.path.relpath(directory, DEPLOY)
    docs = render_kustomize.render(directory)
    kinds = sorted(d["kind"] for d in docs)
    check(kinds == sorted(["Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy",
                           "HorizontalPodAutoscaler", "ServiceMonitor", "PrometheusRule"]),
          f"{where}: renders {kinds}")
    for d in docs:
        validate(d, where)
    cross_check(docs, where)
    rendered += len(docs)

if errors:
    print("\n".join(f"FAIL: {e}" for e in errors))
    sys.exit(1)
print(f"{len(overlays)} overlays + base, {rendered} rendered manifests valid for Kubernetes "
      f"{', '.join(VERSIONS)}; agree with the server's flags, ports, health and metrics")
