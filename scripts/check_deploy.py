#!/usr/bin/env python3
"""Cross-object checks on deploy/ that a schema validator cannot make.

kubernetes-validate checks each object against the Kubernetes OpenAPI schemas, but it has no
schema for the Prometheus Operator's PodMonitor/ServiceMonitor and it never looks across
objects. This script does: selectors against pod labels, port names against containers, probes
against the admin port, the security context, the ConfigMap key against the --config path, the
tensorgate.toml ports against the containerPorts, the shutdown timing, the Grafana dashboard's
structure and metric names, and the Dockerfile's user and ports.

Usage:
  check_deploy.py [--deploy-dir deploy]                 the source files, every YAML document under
                                                        deploy/ (optional components included)
  check_deploy.py --rendered FILE [--rendered FILE...]  the output of `kustomize build` instead,
                                                        one variant per file

Needs PyYAML; Python >= 3.11 (tomllib) or the tomli package.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

import yaml

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import dashboard_metrics  # noqa: E402

GATEWAY_CONTAINER = "tensorgate"
TRITON_CONTAINER = "triton"
TENSORGATE_UID = 10001
MONITORING_API = "monitoring.coreos.com/v1"

# The metric contract of the tensorgate binary (name -> type). Process metrics come from the
# prometheus crate's process collector.
KNOWN_METRICS = {
    "tensorgate_requests_total": "counter",
    "tensorgate_request_duration_seconds": "histogram",
    "tensorgate_upstream_duration_seconds": "histogram",
    "tensorgate_translation_duration_seconds": "histogram",
    "tensorgate_request_bytes_total": "counter",
    "tensorgate_response_bytes_total": "counter",
    "tensorgate_tensor_elements_total": "counter",
    "tensorgate_rule_violations_total": "counter",
    "tensorgate_upstream_errors_total": "counter",
    "tensorgate_in_flight_requests": "gauge",
    "tensorgate_build_info": "gauge",
    "tensorgate_access_log_dropped_total": "counter",
    "tensorgate_auth_failures_total": "counter",
    "tensorgate_authenticated_requests_total": "counter",
    "tensorgate_backend_replicas": "gauge",
    "tensorgate_dns_resolutions_total": "counter",
    "tensorgate_rate_limited_total": "counter",
    "tensorgate_replica_ejections_total": "counter",
    "tensorgate_replica_errors_total": "counter",
    "tensorgate_replica_in_flight": "gauge",
    "tensorgate_replica_models_not_ready": "gauge",
    "tensorgate_replica_request_duration_seconds": "histogram",
    "tensorgate_replica_requests_total": "counter",
    "tensorgate_replica_state": "gauge",
    "tensorgate_retries_total": "counter",
    "tensorgate_shadow_duration_seconds": "histogram",
    "tensorgate_shadow_requests_total": "counter",
    "tensorgate_config_reloads_total": "counter",
    "tensorgate_config_hash": "gauge",
    "process_cpu_seconds_total": "counter",
    "process_resident_memory_bytes": "gauge",
    "process_virtual_memory_bytes": "gauge",
    "process_open_fds": "gauge",
    "process_max_fds": "gauge",
    "process_start_time_seconds": "gauge",
    "process_threads": "gauge",
}


# ----------------------------------------------------------------------------- helpers

@dataclass
class Report:
    errors: list[str] = field(default_factory=list)
    checks: int = 0

    def check(self, ok: bool, msg: str) -> bool:
        self.checks += 1
        if not ok:
            self.errors.append(msg)
        return ok


def load_yaml_docs(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if isinstance(d, dict)]


def kind_of(obj: dict) -> str:
    return f'{obj.get("kind")}/{(obj.get("metadata") or {}).get("name")}'


def namespace_of(obj: dict) -> str | None:
    return (obj.get("metadata") or {}).get("namespace")


def parse_duration(text: Any) -> float:
    """'25s', '1m30s', '500ms', '2h' -> seconds (humantime-style)."""
    if isinstance(text, (int, float)):
        return float(text)
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "sec": 1, "m": 60,
             "min": 60, "h": 3600, "d": 86400}
    total, pos, s = 0.0, 0, str(text).replace(" ", "")
    for m in re.finditer(r"(\d+(?:\.\d+)?)([a-zµ]+)", s):
        if m.start() != pos or m.group(2) not in units:
            raise ValueError(f"bad duration {text!r}")
        total += float(m.group(1)) * units[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise ValueError(f"bad duration {text!r}")
    return total


def port_of(addr: str) -> tuple[str, int]:
    m = re.fullmatch(r"\[?([^\]]*)\]?:(\d+)", addr)
    if not m:
        raise ValueError(f"bad socket address {addr!r}")
    return m.group(1), int(m.group(2))


def selector_matches(selector: dict | None, labels: dict) -> bool:
    """A LabelSelector (matchLabels + matchExpressions) against a label set. Empty selects all."""
    selector = selector or {}
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def plain_selector_matches(selector: dict | None, labels: dict) -> bool:
    """A Service's map selector."""
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def container_ports(containers: list[dict]) -> dict[str, tuple[str, int]]:
    """port name -> (container name, containerPort)."""
    out = {}
    for c in containers:
        for p in c.get("ports") or []:
            if p.get("name"):
                out[p["name"]] = (c["name"], p["containerPort"])
    return out


def resolve_port(ref: Any, container: dict) -> int | None:
    """A probe/targetPort reference (name or number) to a number on one container."""
    if isinstance(ref, int):
        return ref
    if isinstance(ref, str) and ref.isdigit():
        return int(ref)
    for p in container.get("ports") or []:
        if p.get("name") == ref:
            return p["containerPort"]
    return None


def effective_security(pod_spec: dict, container: dict) -> dict:
    """Container securityContext over the pod-level one (for the fields both have)."""
    pod = pod_spec.get("securityContext") or {}
    ctr = container.get("securityContext") or {}
    merged = {k: pod[k] for k in ("runAsNonRoot", "runAsUser", "runAsGroup", "seccompProfile")
              if k in pod}
    merged.update(ctr)
    return merged


def flag_value(args: list[str], flag: str) -> str | None:
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a[len(flag) + 1:]
    return None


# ----------------------------------------------------------------------------- model

@dataclass
class ConfigMapInfo:
    name: str
    data: dict[str, str]          # key -> content (None when unknown)
    origin: str


@dataclass
class Variant:
    label: str
    objects: list[dict]
    configmaps: dict[str, ConfigMapInfo]


def source_variant(deploy_dir: str, rep: Report) -> Variant:
    objects: list[dict] = []
    configmaps: dict[str, ConfigMapInfo] = {}
    for dirpath, dirnames, filenames in os.walk(deploy_dir):
        dirnames.sort()
        for fn in sorted(filenames):
            if not fn.endswith((".yaml", ".yml")):
                continue
            path = os.path.join(dirpath, fn)
            rel = os.path.relpath(path, deploy_dir)
            try:
                docs = load_yaml_docs(path)
            except yaml.YAMLError as exc:
                rep.check(False, f"{rel}: YAML error: {exc}")
                continue
            for doc in docs:
                if doc.get("kind") in ("Kustomization", "Component"):
                    check_kustomization(doc, dirpath, deploy_dir, rep, configmaps)
                else:
                    objects.append(doc)
    return Variant(f"{os.path.relpath(deploy_dir)}/ (source files)", objects, configmaps)


def rendered_variant(path: str, rep: Report) -> Variant:
    objects = load_yaml_docs(path)
    configmaps = {}
    for obj in objects:
        if obj.get("kind") == "ConfigMap":
            name = obj["metadata"]["name"]
            configmaps[name] = ConfigMapInfo(name, dict(obj.get("data") or {}), path)
    return Variant(f"{path} (rendered)", objects, configmaps)


def check_kustomization(doc: dict, kdir: str, deploy_dir: str, rep: Report,
                        configmaps: dict[str, ConfigMapInfo]) -> None:
    rel = os.path.relpath(os.path.join(kdir, "kustomization.yaml"), deploy_dir)
    listed = set()
    for res in doc.get("resources") or []:
        rep.check(os.path.exists(os.path.join(kdir, res)), f"{rel}: resource {res} does not exist")
        listed.add(os.path.normpath(res))
    for comp in doc.get("components") or []:
        rep.check(os.path.isdir(os.path.join(kdir, comp)), f"{rel}: component {comp} does not exist")
    # Every manifest beside the kustomization is listed (a forgotten file is never applied).
    for fn in sorted(os.listdir(kdir)):
        if fn.endswith((".yaml", ".yml")) and fn not in ("kustomization.yaml", "kustomization.yml"):
            rep.check(fn in listed, f"{rel}: {fn} is not listed under resources")
    for gen in doc.get("configMapGenerator") or []:
        data: dict[str, str] = {}
        for entry in gen.get("files") or []:
            key, _, file_ = entry.partition("=") if "=" in entry else (os.path.basename(entry), "", entry)
            fpath = os.path.join(kdir, file_)
            if rep.check(os.path.isfile(fpath), f"{rel}: configMapGenerator file {file_} missing"):
                with open(fpath, encoding="utf-8") as f:
                    data[key] = f.read()
        for lit in gen.get("literals") or []:
            k, _, v = lit.partition("=")
            data[k] = v
        configmaps[gen["name"]] = ConfigMapInfo(gen["name"], data, f"{rel} configMapGenerator")


# ----------------------------------------------------------------------------- checks

def check_config_files(err, dname: str, gw: dict, cfg_dir: str, server: dict, backends: dict,
                       routes: list) -> None:
    """Files the config names (TLS, API keys) must be in a directory mount of the gateway (a
    subPath mount never sees an update, so a renewed certificate would never be reloaded), and no
    gateway mount may lie inside another (the kubelet rewrites each volume's directory)."""
    mounts = [m for m in gw.get("volumeMounts") or [] if m.get("mountPath")]
    for a in mounts:
        for b in mounts:
            if a is not b:
                err(not b["mountPath"].startswith(a["mountPath"].rstrip("/") + "/"),
                    f"{dname}: {GATEWAY_CONTAINER} mount {b['mountPath']} is inside mount {a['mountPath']}")
    named = []
    tls = server.get("tls") or {}
    named += [(f"[server.tls].{k}", tls[k]) for k in ("cert_file", "key_file", "client_ca_file") if k in tls]
    for bname, b in backends.items():
        named += [(f"backends.{bname}.{k}", b[k]) for k in ("tls_ca_file", "tls_cert_file", "tls_key_file")
                  if k in b]
    for r in routes:
        auth = r.get("auth") or {}
        if "keys_file" in auth:
            named.append((f"route {r.get('name')!r} auth.keys_file", auth["keys_file"]))
    for what, path in named:
        path = path if os.path.isabs(path) else os.path.normpath(os.path.join(cfg_dir, path))
        inside = [m for m in mounts if path.startswith(m["mountPath"].rstrip("/") + "/")]
        err(bool(inside) and not any(m.get("subPath") for m in inside),
            f"{dname}: config {what} {path} is not in a directory mount of {GATEWAY_CONTAINER}")


def check_variant(v: Variant, rep: Report) -> None:
    def err(ok: bool, msg: str) -> bool:
        return rep.check(ok, f"[{v.label}] {msg}")

    by_kind: dict[str, list[dict]] = {}
    for obj in v.objects:
        by_kind.setdefault(obj.get("kind", "?"), []).append(obj)

    deployments = [d for d in by_kind.get("Deployment", [])
                   if any(c.get("name") == GATEWAY_CONTAINER
                          for c in d["spec"]["template"]["spec"].get("containers", []))]
    if not err(len(deployments) == 1,
               f"expected exactly one Deployment with a '{GATEWAY_CONTAINER}' container, "
               f"found {len(deployments)}"):
        return
    dep = deployments[0]
    dname = kind_of(dep)
    ns = namespace_of(dep)
    tmpl = dep["spec"]["template"]
    pod_labels = (tmpl.get("metadata") or {}).get("labels") or {}
    pod_ann = (tmpl.get("metadata") or {}).get("annotations") or {}
    spec = tmpl["spec"]
    containers = {c["name"]: c for c in spec.get("containers", [])}
    ports = container_ports(spec.get("containers", []))

    err(selector_matches(dep["spec"].get("selector"), pod_labels),
        f"{dname}: spec.selector does not match the pod template labels")

    gw = containers[GATEWAY_CONTAINER]
    triton = containers.get(TRITON_CONTAINER)
    err(triton is not None, f"{dname}: no '{TRITON_CONTAINER}' container (sidecar layout)")

    # --- gateway ports
    http_port = resolve_port("http", gw)
    admin_port = resolve_port("admin", gw)
    err(http_port is not None, f"{dname}: container {GATEWAY_CONTAINER} has no port named 'http'")
    err(admin_port is not None, f"{dname}: container {GATEWAY_CONTAINER} has no port named 'admin'")
    err(len(ports) == sum(len(c.get("ports") or []) for c in containers.values()),
        f"{dname}: container port names are not unique across the pod")
    numbers = [p["containerPort"] for c in containers.values() for p in c.get("ports") or []]
    err(len(numbers) == len(set(numbers)), f"{dname}: a containerPort number is used twice")

    # --- probes
    def probe_ok(c: dict, kind: str, path: str, port: int | None, what: str) -> None:
        probe = c.get(kind)
        if not err(probe is not None and "httpGet" in probe,
                   f"{dname}: {c['name']}.{kind} must be an httpGet probe on {path}"):
            return
        hg = probe["httpGet"]
        err(hg.get("path") == path, f"{dname}: {c['name']}.{kind} path is {hg.get('path')!r}, want {path}")
        err(port is not None and resolve_port(hg.get("port"), c) == port,
            f"{dname}: {c['name']}.{kind} port {hg.get('port')!r} is not the {what} ({port})")
        err(hg.get("scheme", "HTTP") == "HTTP", f"{dname}: {c['name']}.{kind} scheme must be HTTP")

    probe_ok(gw, "livenessProbe", "/healthz", admin_port, "admin port")
    grpc_probe = (gw.get("readinessProbe") or {}).get("grpc")
    if grpc_probe is not None:
        # optional/grpc-probe: grpc.health.v1 on the data port (never routed,
        # authenticated or shed; NOT_SERVING while draining, like /readyz).
        err(grpc_probe.get("port") == http_port,
            f"{dname}: {GATEWAY_CONTAINER}.readinessProbe.grpc port {grpc_probe.get('port')!r} "
            f"is not the data port ({http_port})")
        err(grpc_probe.get("service", "") == "",
            f"{dname}: {GATEWAY_CONTAINER}.readinessProbe.grpc service must be \"\" (the gateway)")
    else:
        probe_ok(gw, "readinessProbe", "/readyz", admin_port, "admin port")
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        hg = (gw.get(kind) or {}).get("httpGet") or {}
        err(resolve_port(hg.get("port"), gw) != http_port if hg else True,
            f"{dname}: {GATEWAY_CONTAINER}.{kind} must not probe the data port")

    triton_http = resolve_port("triton-http", triton) if triton else None
    if triton:
        err(triton_http is not None, f"{dname}: container {TRITON_CONTAINER} has no port 'triton-http'")
        probe_ok(triton, "livenessProbe", "/v2/health/live", triton_http, "Triton HTTP port")
        probe_ok(triton, "readinessProbe", "/v2/health/ready", triton_http, "Triton HTTP port")
        if triton.get("startupProbe"):
            hg = triton["startupProbe"].get("httpGet") or {}
            err(hg.get("path") in ("/v2/health/live", "/v2/health/ready")
                and resolve_port(hg.get("port"), triton) == triton_http,
                f"{dname}: {TRITON_CONTAINER}.startupProbe must hit /v2/health/* on the Triton HTTP port")
        targs = (triton.get("command") or []) + (triton.get("args") or [])
        tflag = flag_value(targs, "--http-port")
        err(tflag is None or int(tflag) == triton_http,
            f"{dname}: Triton --http-port {tflag} != containerPort triton-http {triton_http}")
        mflag = flag_value(targs, "--metrics-port")
        mport = resolve_port("triton-metrics", triton)
        err(mflag is None or mport is None or int(mflag) == mport,
            f"{dname}: Triton --metrics-port {mflag} != containerPort triton-metrics {mport}")
        err(flag_value(targs, "--http-address") in (None, "0.0.0.0", "[::]", "::"),
            f"{dname}: Triton HTTP must listen on the pod IP for the kubelet's probes")

    # --- security
    seccomp_ok = ("RuntimeDefault", "Localhost")
    for c in containers.values():
        sc = effective_security(spec, c)
        cn = f"{dname}: container {c['name']}"
        err(sc.get("runAsNonRoot") is True, f"{cn}: runAsNonRoot must be true")
        err(sc.get("allowPrivilegeEscalation") is False, f"{cn}: allowPrivilegeEscalation must be false")
        err("ALL" in ((sc.get("capabilities") or {}).get("drop") or []), f"{cn}: capabilities must drop ALL")
        err(not (sc.get("capabilities") or {}).get("add"), f"{cn}: must not add capabilities")
        err(not sc.get("privileged"), f"{cn}: must not be privileged")
        err((sc.get("seccompProfile") or {}).get("type") in seccomp_ok,
            f"{cn}: seccompProfile must be RuntimeDefault")
        err(isinstance(sc.get("runAsUser"), int) and sc["runAsUser"] > 0,
            f"{cn}: set a numeric non-zero runAsUser")
        res = c.get("resources") or {}
        for section, keys in (("requests", ("cpu", "memory")), ("limits", ("cpu", "memory"))):
            for key in keys:
                err(key in (res.get(section) or {}), f"{cn}: resources.{section}.{key} missing")
    gsc = effective_security(spec, gw)
    err(gsc.get("runAsUser") == TENSORGATE_UID,
        f"{dname}: {GATEWAY_CONTAINER} must run as uid {TENSORGATE_UID} (the image's USER)")
    err(gsc.get("readOnlyRootFilesystem") is True,
        f"{dname}: {GATEWAY_CONTAINER} needs readOnlyRootFilesystem: true")
    err((spec.get("securityContext") or {}).get("seccompProfile", {}).get("type") in seccomp_ok,
        f"{dname}: pod securityContext.seccompProfile must be RuntimeDefault")
    err(spec.get("enableServiceLinks") is False,
        f"{dname}: enableServiceLinks must be false (Service env vars TENSORGATE_* would leak in)")

    # --- config: --config path, mount, ConfigMap key
    gargs = (gw.get("command") or []) + (gw.get("args") or [])
    err(bool(gw.get("args")) and gw["args"][0] == "serve",
        f"{dname}: {GATEWAY_CONTAINER} args must start with 'serve' (the image's default is the demo)")
    cfg_path = flag_value(gargs, "--config")
    toml_text = None
    if err(cfg_path is not None, f"{dname}: {GATEWAY_CONTAINER} has no --config argument"):
        cfg_dir, cfg_file = os.path.split(cfg_path)
        mounts = [m for m in gw.get("volumeMounts") or []
                  if m.get("mountPath") in (cfg_dir, cfg_path)]
        if err(len(mounts) == 1, f"{dname}: no single volumeMount at {cfg_dir} for --config {cfg_path}"):
            mount = mounts[0]
            err(mount.get("readOnly") is True, f"{dname}: the config mount must be readOnly")
            err(mount.get("mountPath") == cfg_dir and not mount.get("subPath"),
                f"{dname}: mount the config directory {cfg_dir}, not a subPath (subPath mounts never update)")
            vols = {vol["name"]: vol for vol in spec.get("volumes") or []}
            vol = vols.get(mount["name"])
            cm_ref = (vol or {}).get("configMap")
            if err(cm_ref is not None, f"{dname}: volume {mount['name']} is not a configMap"):
                cm = v.configmaps.get(cm_ref.get("name"))
                if err(cm is not None, f"{dname}: ConfigMap {cm_ref.get('name')!r} is not generated/defined"):
                    items = cm_ref.get("items")
                    if items:
                        item = next((i for i in items if i.get("path") == cfg_file), None)
                        key = item.get("key") if item else None
                        err(item is not None, f"{dname}: configMap items do not project {cfg_file}")
                    else:
                        key = cfg_file
                    if key is not None and err(key in cm.data,
                                               f"{dname}: ConfigMap {cm.name} has no key {key!r} "
                                               f"(keys: {sorted(cm.data)}) for --config {cfg_path}"):
                        toml_text = cm.data[key]

    # --- the TOML config against the pod
    grace = spec.get("terminationGracePeriodSeconds", 30)
    gw_prestop = ((gw.get("lifecycle") or {}).get("preStop") or {}).get("sleep", {}).get("seconds", 0)
    if toml_text is not None:
        try:
            cfg = tomllib.loads(toml_text)
        except tomllib.TOMLDecodeError as exc:
            err(False, f"config {cfg_path}: invalid TOML: {exc}")
            cfg = None
        if cfg is not None:
            server = cfg.get("server") or {}
            for key, want, pname in (("listen", http_port, "http"), ("admin_listen", admin_port, "admin")):
                try:
                    host, port = port_of(server.get(key, ""))
                except ValueError as exc:
                    err(False, f"config [server].{key}: {exc}")
                    continue
                err(port == want, f"config [server].{key} port {port} != containerPort {pname} {want}")
                err(host not in ("127.0.0.1", "localhost", "::1"),
                    f"config [server].{key} binds {host}: unreachable for the kubelet and the Service")
            try:
                drain = parse_duration(server.get("shutdown_grace", "0s"))
            except ValueError as exc:
                err(False, f"config [server].shutdown_grace: {exc}")
                drain = 0.0
            err(grace > gw_prestop + drain,
                f"{dname}: terminationGracePeriodSeconds {grace} must exceed the preStop sleep "
                f"{gw_prestop}s + shutdown_grace {drain:g}s")
            if triton:
                t_prestop = ((triton.get("lifecycle") or {}).get("preStop") or {}).get("sleep", {}).get("seconds", 0)
                err(t_prestop >= gw_prestop + drain,
                    f"{dname}: Triton's preStop sleep {t_prestop}s should cover tensorgate's "
                    f"preStop + drain ({gw_prestop + drain:g}s) so in-flight requests can finish")
                err(grace > t_prestop, f"{dname}: terminationGracePeriodSeconds must exceed Triton's preStop")
            backends = cfg.get("backends") or {}
            err(bool(backends), "config: no [backends.*]")
            for bname, b in backends.items():
                m = re.fullmatch(r"https?://(\[[^\]]+\]|[^:/]+)(?::(\d+))?(/.*)?", str(b.get("url", "")))
                if not err(m is not None, f"config backends.{bname}.url {b.get('url')!r} is not an http URL"):
                    continue
                if m.group(1) in ("127.0.0.1", "localhost", "[::1]"):
                    err(triton_http is not None and int(m.group(2) or 80) == triton_http,
                        f"config backends.{bname}.url {b['url']} is on loopback but not Triton's "
                        f"HTTP port {triton_http}")
            routes = cfg.get("routes") or []
            for r in routes:
                err(r.get("backend") in backends,
                    f"config route {r.get('name')!r} uses unknown backend {r.get('backend')!r}")
            err(sum(1 for r in routes if r.get("default")) <= 1, "config: more than one default route")
            check_config_files(err, dname, gw, os.path.dirname(cfg_path), server, backends, routes)

    # --- scrape annotations
    err(pod_ann.get("prometheus.io/scrape") == "true", f"{dname}: annotation prometheus.io/scrape must be \"true\"")
    err(pod_ann.get("prometheus.io/port") == str(admin_port),
        f"{dname}: annotation prometheus.io/port {pod_ann.get('prometheus.io/port')!r} != admin port {admin_port}")
    err(pod_ann.get("prometheus.io/path") == "/metrics", f"{dname}: annotation prometheus.io/path must be /metrics")

    # --- Services
    services = [s for s in by_kind.get("Service", []) if namespace_of(s) == ns]
    gateway_services = 0
    for svc in services:
        sname = kind_of(svc)
        sspec = svc.get("spec") or {}
        if not err(plain_selector_matches(sspec.get("selector"), pod_labels),
                   f"{sname}: selector does not select the {dname} pods"):
            continue
        headless = sspec.get("clusterIP") == "None"
        for p in sspec.get("ports") or []:
            target = p.get("targetPort", p.get("port"))
            resolved = None
            for c in containers.values():
                n = resolve_port(target, c) if not isinstance(target, int) else target
                if n is not None and any(cp["containerPort"] == n for cp in c.get("ports") or []):
                    resolved = (c["name"], n)
            err(resolved is not None, f"{sname}: port {p.get('name')} targets {target!r}, no such container port")
            if resolved is None:
                continue
            if headless:
                err(resolved[1] in (admin_port, resolve_port("triton-metrics", triton) if triton else None),
                    f"{sname}: headless metrics Service may only target metrics ports, not {target!r}")
            else:
                err(resolved == (GATEWAY_CONTAINER, http_port),
                    f"{sname}: port {p.get('name')} exposes {resolved[0]}:{resolved[1]}; only "
                    f"{GATEWAY_CONTAINER}'s data port {http_port} may be exposed")
                err(p.get("name") in ("http", "grpc"),
                    f"{sname}: the gateway ports must be named 'http' (and 'grpc')")
                if p.get("name") == "grpc":
                    err(p.get("appProtocol") in ("kubernetes.io/h2c", "grpc"),
                        f"{sname}: port grpc needs appProtocol kubernetes.io/h2c (gRPC in clear)")
        if not headless:
            gateway_services += 1
    err(gateway_services == 1, f"expected one (non-headless) gateway Service, found {gateway_services}")

    # --- PodMonitor / ServiceMonitor
    scrapes_admin = False
    for pm in by_kind.get("PodMonitor", []):
        pname = kind_of(pm)
        err(pm.get("apiVersion") == MONITORING_API, f"{pname}: apiVersion must be {MONITORING_API}")
        pspec = pm.get("spec") or {}
        err(namespace_ok(pspec.get("namespaceSelector"), namespace_of(pm), ns),
            f"{pname}: namespaceSelector does not include the Deployment's namespace")
        if not err(selector_matches(pspec.get("selector"), pod_labels) and bool(pspec.get("selector")),
                   f"{pname}: selector {pspec.get('selector')} does not match pod labels {pod_labels}"):
            continue
        endpoints = pspec.get("podMetricsEndpoints") or []
        err(bool(endpoints), f"{pname}: no podMetricsEndpoints")
        for ep in endpoints:
            err("targetPort" not in ep, f"{pname}: use `port` (a name), not the deprecated targetPort")
            pn = ep.get("port")
            err(pn in ports, f"{pname}: endpoint port {pn!r} is not a container port name in the pod "
                             f"(have {sorted(ports)})")
            err(ep.get("path") == "/metrics", f"{pname}: endpoint {pn} path must be /metrics (explicitly)")
            if pn == "admin" and ports.get(pn, ("", 0))[0] == GATEWAY_CONTAINER:
                scrapes_admin = True
    for sm in by_kind.get("ServiceMonitor", []):
        mname = kind_of(sm)
        err(sm.get("apiVersion") == MONITORING_API, f"{mname}: apiVersion must be {MONITORING_API}")
        mspec = sm.get("spec") or {}
        err(namespace_ok(mspec.get("namespaceSelector"), namespace_of(sm), ns),
            f"{mname}: namespaceSelector does not include the Deployment's namespace")
        selected = [s for s in services
                    if selector_matches(mspec.get("selector"), (s.get("metadata") or {}).get("labels") or {})
                    and plain_selector_matches((s.get("spec") or {}).get("selector"), pod_labels)]
        if not err(len(selected) == 1 and bool(mspec.get("selector")),
                   f"{mname}: selector must match exactly one Service of the pods, matched "
                   f"{[kind_of(s) for s in selected]}"):
            continue
        svc = selected[0]
        err(svc["spec"].get("clusterIP") == "None",
            f"{mname}: the selected Service {kind_of(svc)} should be headless (a metrics-only Service)")
        svc_ports = {p.get("name"): p for p in svc["spec"].get("ports") or []}
        for ep in mspec.get("endpoints") or []:
            pn = ep.get("port")
            if not err(pn in svc_ports, f"{mname}: endpoint port {pn!r} is not a port name of {kind_of(svc)}"):
                continue
            err(ep.get("path") == "/metrics", f"{mname}: endpoint {pn} path must be /metrics (explicitly)")
            target = svc_ports[pn].get("targetPort", svc_ports[pn].get("port"))
            if resolve_port(target, gw) == admin_port:
                scrapes_admin = True
    if by_kind.get("PodMonitor") or by_kind.get("ServiceMonitor"):
        err(scrapes_admin, f"no PodMonitor/ServiceMonitor endpoint scrapes {GATEWAY_CONTAINER}'s admin port")

    # --- HPA, PDB, NetworkPolicy
    hpas = [h for h in by_kind.get("HorizontalPodAutoscaler", [])
            if (h.get("spec") or {}).get("scaleTargetRef", {}).get("name") == dep["metadata"]["name"]]
    for h in by_kind.get("HorizontalPodAutoscaler", []):
        ref = (h.get("spec") or {}).get("scaleTargetRef") or {}
        err(ref.get("kind") == "Deployment" and ref.get("apiVersion") == "apps/v1"
            and ref.get("name") == dep["metadata"]["name"],
            f"{kind_of(h)}: scaleTargetRef {ref} is not {dname}")
    if hpas:
        err("replicas" not in dep["spec"],
            f"{dname}: do not set spec.replicas when an HPA scales it (apply would reset the count)")
    pdbs = by_kind.get("PodDisruptionBudget", [])
    for pdb in pdbs:
        err(selector_matches((pdb.get("spec") or {}).get("selector"), pod_labels),
            f"{kind_of(pdb)}: selector does not match the pod labels")
    if pdbs:
        for h in hpas:
            err((h["spec"].get("minReplicas") or 1) >= 2,
                f"{kind_of(h)}: minReplicas must be >= 2 or the PodDisruptionBudget blocks every drain")
    for np_ in by_kind.get("NetworkPolicy", []):
        nspec = np_.get("spec") or {}
        err(selector_matches(nspec.get("podSelector"), pod_labels),
            f"{kind_of(np_)}: podSelector does not match the pod labels")
        for rule in nspec.get("ingress") or []:
            for p in rule.get("ports") or []:
                ref = p.get("port")
                err(isinstance(ref, int) or ref in ports,
                    f"{kind_of(np_)}: port {ref!r} is not a container port name")
                err(ref not in ("triton-http", triton_http),
                    f"{kind_of(np_)}: must not open Triton's HTTP port to other pods")


def namespace_ok(selector: dict | None, monitor_ns: str | None, target_ns: str | None) -> bool:
    if not selector:
        return monitor_ns == target_ns
    if selector.get("any"):
        return True
    return target_ns in (selector.get("matchNames") or [])


def check_dashboard(path: str, rep: Report) -> None:
    def err(ok: bool, msg: str) -> bool:
        return rep.check(ok, f"[{path}] {msg}")

    try:
        with open(path, encoding="utf-8") as f:
            dash = json.load(f)
    except (OSError, ValueError) as exc:
        err(False, f"not valid JSON: {exc}")
        return
    err(isinstance(dash.get("schemaVersion"), int) and dash["schemaVersion"] >= 36,
        "schemaVersion must be >= 36")
    err(bool(dash.get("uid")) and bool(dash.get("title")), "uid and title are required")
    err(dash.get("id") is None, "id must be null so the dashboard imports as a new one")
    variables = {var.get("name"): var for var in (dash.get("templating") or {}).get("list", [])}
    ds = variables.get("datasource") or {}
    err(ds.get("type") == "datasource" and ds.get("query") == "prometheus",
        "needs a `datasource` variable of type datasource, query prometheus")
    route = variables.get("route") or {}
    rq = route.get("query")
    rq = rq.get("query") if isinstance(rq, dict) else rq
    err(route.get("type") == "query" and rq == "label_values(tensorgate_requests_total, route)",
        "needs a `route` query variable label_values(tensorgate_requests_total, route)")

    ids = []
    for panel in dashboard_metrics._panels(dash.get("panels", [])):
        pid = panel.get("id")
        ids.append(pid)
        where = f'panel {pid} "{panel.get("title")}"'
        gp = panel.get("gridPos") or {}
        err(all(isinstance(gp.get(k), int) for k in "hwxy") and gp["x"] + gp["w"] <= 24,
            f"{where}: bad gridPos {gp}")
        if panel.get("type") == "row":
            continue
        err((panel.get("datasource") or {}).get("uid") == "${datasource}",
            f"{where}: datasource must be the ${{datasource}} variable")
        refs = [t.get("refId") for t in panel.get("targets") or []]
        err(bool(refs) and len(refs) == len(set(refs)), f"{where}: targets need unique refIds")
        for t in panel.get("targets") or []:
            err((t.get("datasource") or {}).get("uid") in (None, "${datasource}"),
                f"{where}: target {t.get('refId')} datasource must be ${{datasource}}")
    err(len(ids) == len(set(ids)) and None not in ids, "panel ids must be unique and set")

    for name in sorted(dashboard_metrics.dashboard_metric_names(dash)):
        base = next((name[: -len(s)] for s in dashboard_metrics.HIST_SUFFIXES
                     if name.endswith(s) and KNOWN_METRICS.get(name[: -len(s)]) == "histogram"), name)
        err(base in KNOWN_METRICS, f"queries {name}, which tensorgate does not export")


def check_dockerfile(path: str, rep: Report) -> None:
    def err(ok: bool, msg: str) -> bool:
        return rep.check(ok, f"[{path}] {msg}")

    with open(path, encoding="utf-8") as f:
        lines = [ln.strip() for ln in f.read().replace("\\\n", " ").splitlines()]
    instr = [ln for ln in lines if ln and not ln.startswith("#")]
    froms = [ln for ln in instr if ln.upper().startswith("FROM ")]
    err(len(froms) >= 2, "expected a multi-stage build")
    last_stage = instr[instr.index(froms[-1]):] if froms else instr
    users = [ln.split(None, 1)[1] for ln in last_stage if ln.upper().startswith("USER ")]
    err(bool(users) and users[-1].split(":")[0] == str(TENSORGATE_UID),
        f"runtime stage must end as USER {TENSORGATE_UID} (the uid deploy/ runs as)")
    exposed = {tok.split("/")[0] for ln in last_stage if ln.upper().startswith("EXPOSE ")
               for tok in ln.split()[1:]}
    for port in ("8000", "8080", "9090"):
        err(port in exposed, f"EXPOSE {port} missing")
    err(any("--locked" in ln for ln in instr if ln.upper().startswith("RUN ")),
        "cargo build must use --locked")
    # In a container, `-p` reaches only listeners on the container's own interfaces: the
    # default command and the baked-in configuration must not listen on loopback.
    cmd = next((ln for ln in reversed(last_stage) if ln.upper().startswith("CMD ")), "")
    err('"--listen", "0.0.0.0:' in cmd and '"--admin-listen", "0.0.0.0:' in cmd,
        "CMD must listen on 0.0.0.0 (data and admin), or `docker run -p` cannot reach it")
    baked = [ln.split()[1] for ln in last_stage
             if ln.upper().startswith("COPY ") and ln.split()[-1] == "/etc/tensorgate/tensorgate.toml"
             and not ln.split()[1].startswith("--")]
    if err(len(baked) == 1, "the runtime stage must COPY a config to /etc/tensorgate/tensorgate.toml"):
        config = os.path.join(os.path.dirname(os.path.abspath(path)), baked[0])
        with open(config, "rb") as f:
            server = tomllib.load(f).get("server", {})
        for key in ("listen", "admin_listen"):
            addr = server.get(key, "127.0.0.1")
            host = addr.rsplit(":", 1)[0]
            err(host in ("0.0.0.0", "[::]"),
                f"{baked[0]}: server.{key} = {addr!r}: the image's config must listen on 0.0.0.0 "
                "(a container's loopback is unreachable through -p)")


# ----------------------------------------------------------------------------- main

def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deploy-dir", default=os.path.join(ROOT, "deploy"))
    ap.add_argument("--rendered", action="append", default=[], metavar="FILE",
                    help="check kustomize output instead of the source files (repeatable)")
    ap.add_argument("--dashboard", default=None,
                    help="Grafana dashboard (default: DEPLOY_DIR/grafana/tensorgate.json)")
    ap.add_argument("--dockerfile", default=os.path.join(ROOT, "Dockerfile"))
    args = ap.parse_args(argv)

    rep = Report()
    variants = []
    if args.rendered:
        variants = [rendered_variant(p, rep) for p in args.rendered]
    else:
        variants = [source_variant(args.deploy_dir, rep)]
        dashboard = args.dashboard or os.path.join(args.deploy_dir, "grafana", "tensorgate.json")
        if rep.check(os.path.isfile(dashboard), f"dashboard {dashboard} missing"):
            check_dashboard(dashboard, rep)
        if os.path.isfile(args.dockerfile):
            check_dockerfile(args.dockerfile, rep)
    for v in variants:
        check_variant(v, rep)

    for e in rep.errors:
        print(f"ERROR {e}")
    what = ", ".join(v.label for v in variants)
    if rep.errors:
        print(f"check_deploy: {len(rep.errors)} of {rep.checks} checks failed ({what})")
        return 1
    print(f"check_deploy: all {rep.checks} checks passed ({what}; "
          f"{sum(len(v.objects) for v in variants)} objects)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
