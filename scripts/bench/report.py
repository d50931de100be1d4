"""Tables for scripts/bench-proxy.sh: reads the raw results of one run from
WORK, prints the Markdown section, optionally writes it into
docs/PERFORMANCE.md between the markers, and in smoke mode exits 1 when a
result is past half its target (targets.py). Reads results only; never
runs or times anything.

    python3 report.py WORK [--doc docs/PERFORMANCE.md] [--smoke]

WORK holds meta.txt (key=value lines), proxy.tsv (proxy_runs.py) and
triton.tsv (triton_runs.py).
"""

import os
import sys

import targets
from fmt import value
from proxy_runs import Proxy
from triton_runs import Triton, per_round

BEGIN = "<!-- BEGIN bench-proxy: written by scripts/bench-proxy.sh, do not edit by hand -->"
END = "<!-- END bench-proxy -->"
HEADING = "## The gateway against nginx, HAProxy and Caddy, and against direct access"
# Headings earlier versions wrote above BEGIN, replaced with the section.
OLD_HEADINGS = ("## The gateway against nginx and against direct access",)
PEER_NAMES = {"nginx": "nginx", "haproxy": "HAProxy", "caddy": "Caddy"}


def read_meta(work):
    meta = {}
    with open(os.path.join(work, "meta.txt")) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("=")
            meta[key] = value
    return meta


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def versions(meta):
    found = [f"{name} {meta[f'version_{key}']}" for key, name in PEER_NAMES.items() if meta.get(f"version_{key}")]
    floor = f" hyper alone: {meta['version_floor']}." if meta.get("version_floor") else ""
    return (f" Peers (Debian's packages): {', '.join(found)}." if found else "") + floor


def proxy_section(meta, proxy):
    c, d, r = meta["connections"], meta["duration"], meta["rounds"]
    return ["### Plain proxy: wrk against the demo backend, through each proxy", "",
            "The demo backend (`tensorgate demo-backend`) and, each a separate process in front of it, "
            "nginx (`nginx-light`, 2 workers, a keep-alive upstream pool of 128, HTTP/1.1 upstream, no "
            "request or response buffering; `scripts/bench/nginx.sh`), HAProxy (`mode http`, `nbthread 2`, "
            "`http-reuse always`; `scripts/bench/haproxy.sh`), Caddy (`reverse_proxy`, `admin off`, "
            "`auto_https off`, 128 idle upstream connections; `scripts/bench/caddy.sh`) and tensorgate "
            "(`--backend`, default settings). Every proxy writes one access-log line per request to a file"
            + (", except hyper alone (`examples/hyper_floor.rs` with 2 threads, `scripts/bench/floor.sh`: "
               "hyper's server and client with one kept backend connection per client connection and no "
               "feature at all, the floor for a proxy that keeps hyper on both sides). "
               if "floor" in proxy.targets else ". ") +
            f"`wrk -t1 -c{c} -d{d}s --latency` runs against each target in turn (the order moves by one "
            f"every round), for both cases, then `wrk -t1 -c1` with the small infer; {r} round(s). The "
            "peers forward the JSON infer request as it is; tensorgate converts it to the binary extension "
            "for the backend and the reply back to JSON. Figures are medians over the rounds. CPU per "
            "request is user+system time (fields 14 and 15 of `/proc/PID/stat`, of every process of the "
            "server, in 10 ms ticks) over the run, divided by the requests wrk counted.", ""] + \
        proxy.load_table() + ["", "What each hop adds to one request when nothing else waits "
                              "(`wrk -t1 -c1`, the small JSON infer; added = the target's latency minus "
                              "direct's, difference of the medians, per-round differences in brackets):", ""] + \
        proxy.sequential_table() + [""] + proxy.ratio_table() + [""]


def triton_section(meta, triton):
    return ["### JSON client to a real Triton, direct and through tensorgate" + (" and nginx" if triton.has("nginx") else ""), "",
            "Triton 2.51 (`scripts/triton-backend.sh`, model `identity_fp32`: Python backend, "
            "FP32 `[-1]`) and tensorgate (`--backend`) in front of it. The client "
            "(`scripts/bench/json_client.py`, `http.client` on a keep-alive connection) posts the "
            "same V2 JSON request (random FP32 values written as `json.dumps` of a numpy float32 "
            "array's `tolist()` does) and times it to the last byte of the JSON reply; every reply "
            "is parsed and checked afterwards, the first of each kind value for value. Size by "
            "size, smallest first (no round of a small size follows a large request), each round "
            f"sends {per_round(meta['requests'])} to Triton directly and the same through "
            "tensorgate" + (" and through nginx (`scripts/bench/nginx.sh`), which forwards the JSON "
                            "as it is: what one hop costs in that place, translating nothing"
                            if triton.has("nginx") else "") +
            ", each round starting one target further on"
            f"; {meta['triton_rounds']} round(s), after a few warm-up requests of the size. Medians of "
            "the per-request latencies." + (
                f" Triton's processes ran pinned to CPU {meta['triton_cpu']} and the client, tensorgate "
                "and nginx to the other CPUs (`--triton-cpu`), as with a Triton that has cores of its own; "
                "without it the scheduler spreads everything over both cores."
                if meta.get("triton_cpu") else ""), ""] + triton.tables(meta) + [""] + with_gap(triton.binary_table())


def with_gap(lines):
    """`lines` and an empty line after them, or nothing."""
    return lines + [""] if lines else []


def section(meta, proxy, triton):
    out = [HEADING, "", BEGIN, ""]
    if meta.get("note"):
        out += [meta["note"], ""]
    out += ["```sh", meta["command"], "```", "",
            f"Run on {meta['date']}, commit {meta['commit']}, took {meta['elapsed']} s. "
            f"Machine: {meta['machine']}.{versions(meta)} Load average (1, 5, 15 min) {meta['load_before']} "
            f"before the run, {meta['load_after']} after it"
            + ("; each wrk run's is in the raw table below. " if proxy.runs else ". ") +
            "Everything (servers, proxies, clients) shares these cores, and other work ran on the "
            "machine at the same time: read the ratios, which come from runs taken seconds apart, "
            "rather than the absolute numbers, and the per-round range as the noise.", ""]
    if proxy.runs:
        out += proxy_section(meta, proxy)
    if triton.reqs:
        out += triton_section(meta, triton)
    checks = proxy.checks() + triton.checks()
    out += ["### Against issue 25's targets", ""] + targets.table(checks) + [
        "", "A result whose per-round range straddles its target is at the line, not clearly on either "
        "side of it. `--smoke` (CI) fails past half a target: a ceiling above twice it, a floor below "
        "half of it.", "", "<details><summary>Raw numbers, per round</summary>", ""]
    if proxy.runs:
        out += proxy.raw() + [""]
    if triton.reqs:
        out += triton.raw() + [""]
    out += ["</details>", "", END]
    return out, checks


def write_doc(path, lines):
    text = open(path).read() if os.path.exists(path) else ""
    new = "\n".join(lines) + "\n"
    if BEGIN in text and END in text:
        start = text.index(BEGIN)
        for heading in (HEADING,) + OLD_HEADINGS:
            at = text.rfind(heading, 0, start)
            if at != -1 and text[at:start].strip() == heading:
                start = at
                break
        end = text.index(END) + len(END) + 1
        text = text[:start] + new + text[end:]
    else:
        text = text.rstrip("\n") + "\n\n" + new
    with open(path, "w") as f:
        f.write(text)


def main(argv):
    work = argv[0]
    doc = argv[argv.index("--doc") + 1] if "--doc" in argv else None
    meta = read_meta(work)
    proxy = Proxy(read_tsv(os.path.join(work, "proxy.tsv")), meta.get("targets", "").split())
    triton = Triton(read_tsv(os.path.join(work, "triton.tsv")))
    lines, checks = section(meta, proxy, triton)
    print("\n".join(lines))
    if doc:
        write_doc(doc, lines)
        print(f"bench-proxy: wrote the section into {doc}", file=sys.stderr)
    for c in checks:
        shown = "-" if c.value is None else value(c.value, c.unit)
        print(f"bench-proxy: {c.name}: {shown} ({c.state()})", file=sys.stderr)
    failed = [c for c in checks if c.smoke_failed()]
    if "--smoke" in argv and failed:
        for c in failed:
            print(f"bench-proxy: SMOKE FAIL: {c.failure()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
