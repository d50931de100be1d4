#!/usr/bin/env python3
"""Turns the results of `cargo bench --bench codecs` into the Markdown tables
of docs/PERFORMANCE.md: medians, values/s, MB/s, and the ratio to the
serde_json baseline measured in the same run.

    python3 benches/report.py [target/criterion]

Reads criterion's `*/new/estimates.json` and `benchmark.json` files, and the
input sizes the bench records in `codecs-input-sizes.json`.
"""

import json
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
OURS = "_tensorgate"
BASELINES = ("_serde_json_value", "_serde_json")


def load():
    results = {}
    for bench in ROOT.glob("**/new/benchmark.json"):
        meta = json.loads(bench.read_text())
        est = json.loads((bench.parent / "estimates.json").read_text())
        sample = json.loads((bench.parent / "sample.json").read_text())
        key = (meta["group_id"], meta["function_id"], meta.get("value_str") or "")
        results[key] = {
            "median_ns": est["median"]["point_estimate"],
            # The fastest sample (time per iteration): what the code costs
            # when the shared machine left it alone.
            "best_ns": min(t / i for t, i in zip(sample["times"], sample["iters"])),
            "throughput": meta.get("throughput") or {},
        }
    return results


def split(function_id):
    """`fp32_tensorgate` -> (`fp32`, True); `fp32_serde_json` -> (`fp32`, False)."""
    if function_id.endswith(OURS):
        return function_id[: -len(OURS)], True
    for suffix in BASELINES:
        if function_id.endswith(suffix):
            return function_id[: -len(suffix)], False
    return function_id, None


def fmt_time(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.0f} ns"


def main():
    results = load()
    sizes_file = ROOT / "codecs-input-sizes.json"
    sizes = json.loads(sizes_file.read_text()) if sizes_file.exists() else {}
    pairs = {}
    for (group, function, param), r in results.items():
        case, ours = split(function)
        if ours is None:
            continue
        pairs.setdefault((group, case, param), {})["ours" if ours else "base"] = r

    print("| group | case | tensorgate median | M values/s | MB/s | serde_json median "
          "| M values/s | speed-up | best-sample speed-up, M values/s ours / serde |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (group, case, param), p in sorted(pairs.items()):
        if group.endswith("_bytes") or "ours" not in p:
            continue
        ours, base = p["ours"], p.get("base")
        elements = ours["throughput"].get("Elements")
        size = sizes.get("/".join(x for x in (group, case, param) if x))
        secs = ours["median_ns"] / 1e9
        row = [group, f"{case} {param}".strip(), fmt_time(ours["median_ns"])]
        row.append(f"{elements / secs / 1e6:.1f}" if elements else "")
        row.append(f"{size / secs / 1e6:.0f}" if size else "")
        if base:
            bsecs = base["median_ns"] / 1e9
            row += [fmt_time(base["median_ns"]),
                    f"{elements / bsecs / 1e6:.1f}" if elements else "",
                    f"{bsecs / secs:.2f}x"]
            o, b = ours["best_ns"] / 1e9, base["best_ns"] / 1e9
            best = f"{b / o:.2f}x"
            if elements:
                best += f", {elements / o / 1e6:.1f} / {elements / b / 1e6:.1f}"
            row.append(best)
        else:
            row += ["", "", "", ""]
        print("| " + " | ".join(row) + " |")

    print()
    print("Measured with `Throughput::Bytes` (bytes of JSON per second):")
    print()
    print("| group | case | tensorgate MB/s | serde_json MB/s | speed-up |")
    print("|---|---|---|---|---|")
    for (group, case, param), p in sorted(pairs.items()):
        if not group.endswith("_bytes") or "ours" not in p or "base" not in p:
            continue
        n = p["ours"]["throughput"].get("Bytes")
        o, b = p["ours"]["median_ns"] / 1e9, p["base"]["median_ns"] / 1e9
        print(f"| {group} | {case} {param} | {n / o / 1e6:.0f} | {n / b / 1e6:.0f} "
              f"| {b / o:.2f}x |")

    print()
    print("| Decthings f32 | 1K elements | 1M elements |")
    print("|---|---|---|")
    for function in ("decode", "encode_parts"):
        cells = [fmt_time(results[k]["median_ns"]) if k in results else "?"
                 for k in (("decthings_f32", function, "1K"), ("decthings_f32", function, "1M"))]
        print(f"| {function} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
