#!/usr/bin/env bash
# Builds every fuzz target under fuzz/ and runs each for SECONDS (default 30),
# then prints one line per target: executions, corpus size, crashes.
#
#   scripts/fuzz-smoke.sh [SECONDS]
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). cargo-fuzz passes nightly
# flags (-Zsanitizer=address, sancov passes): a nightly toolchain is used when
# rustup has one; otherwise the stable compiler is told to accept them with
# RUSTC_BOOTSTRAP=1. Override with FUZZ_TOOLCHAIN=+nightly / FUZZ_TOOLCHAIN=
# (empty: the default toolchain) and FUZZ_SANITIZER=address|none.
#
# Corpora live in fuzz/corpus/<target> (git-ignored) and are seeded from the
# golden vectors on first use; crashes land in fuzz/artifacts/<target>.
# Exits non-zero if any target crashed.
set -euo pipefail

SECONDS_PER_TARGET="${1:-30}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
FUZZ="$ROOT/fuzz"
SANITIZER="${FUZZ_SANITIZER:-address}"

if [[ -z "${FUZZ_TOOLCHAIN+set}" ]]; then
    if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
        FUZZ_TOOLCHAIN="+nightly"
    else
        FUZZ_TOOLCHAIN=""
        export RUSTC_BOOTSTRAP=1
    fi
fi
# `cargo +nightly fuzz` or plain `cargo fuzz`.
cargo_fuzz() {
    if [[ -n "$FUZZ_TOOLCHAIN" ]]; then
        cargo "$FUZZ_TOOLCHAIN" fuzz "$@"
    else
        cargo fuzz "$@"
    fi
}

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is not installed: cargo install cargo-fuzz" >&2
    exit 2
fi

cd "$FUZZ"
TARGETS=$(cargo_fuzz list)

# Writes a seed file: the given prefix bytes (printf escapes) then a file or
# a literal.
seed() { # dir name prefix [file|-literal]
    local dir="$1" name="$2" prefix="$3" body="${4:-}"
    mkdir -p "$dir"
    {
        printf '%b' "$prefix"
        if [[ "$body" == -* ]]; then printf '%s' "${body#-}"; elif [[ -n "$body" ]]; then cat "$body"; fi
    } >"$dir/$name"
}

seed_corpora() {
    local v="$ROOT/tests/vectors/decthings" c="$FUZZ/corpus" f
    if [[ ! -d "$c/decthings_tensor" ]]; then
        for f in "$v"/current/*.bin; do seed "$c/decthings_tensor" "cur-$(basename "$f")" '\x00' "$f"; done
        for f in "$v"/legacy/*.bin; do seed "$c/decthings_tensor" "leg-$(basename "$f")" '\x01' "$f"; done
    fi
    if [[ ! -d "$c/decthings_rpc" ]]; then
        for f in "$v"/rpc/*.bin; do seed "$c/decthings_rpc" "$(basename "$f")" '' "$f"; done
    fi
    if [[ ! -d "$c/v2_document" ]]; then
        seed "$c/v2_document" req '\x00\x00\x20' '-{"id":"1","inputs":[{"name":"IN","shape":[2,2],"datatype":"FP32","data":[[1.5,-2e3],[NaN,"Infinity"]]},{"name":"B","datatype":"BYTES","shape":[1],"data":["h\u00e9\"llo"]},{"name":"C","datatype":"INT64","shape":[3],"parameters":{"binary_data_size":24}}],"outputs":[{"name":"OUT"}],"parameters":{"binary_data_output":true}}'
        seed "$c/v2_document" resp '\x01\x00\x05' '-{"model_name":"m","outputs":[{"data":[true,false],"name":"O","shape":[2],"datatype":"BOOL"},{"name":"S","datatype":"UINT8","shape":[1],"parameters":{"shared_memory_region":"r"}}]}'
    fi
    if [[ ! -d "$c/v2_json_data" ]]; then
        seed "$c/v2_json_data" fp32 '\x0b\x09\x05' '-[[0.7213459014892578, -1e-45],[3.4028235e38, "NaN"]]'
        seed "$c/v2_json_data" int64 '\x08\x00\x03' '-[-9223372036854775808, 9223372036854775807, 0]'
        seed "$c/v2_json_data" bytes '\x0d\x05\x04' '-["a\\u00e9\\ud83d\\ude00", "\\n"]'
        seed "$c/v2_json_data" bool '\x00\x00\x02' '-[true, false, true]'
    fi
    if [[ ! -d "$c/v2_framing" ]]; then
        seed "$c/v2_framing" two '\x04\x03\x02\x03\x02' '-{}{}abcde'
        seed "$c/v2_framing" ihcl '' '- 123 '
        seed "$c/v2_framing" sagemaker '' '-application/vnd.sagemaker-triton.binary+json;json-header-size=42'
    fi
    if [[ ! -d "$c/decthings_evaluate" ]]; then
        for f in "$v"/rpc/evaluate_http_body.bin; do seed "$c/decthings_evaluate" "$(basename "$f")" '' "$f"; done
    fi
    local s="$ROOT/tests/fixtures/sagemaker" t ext
    for t in sagemaker_csv:csv sagemaker_json:json sagemaker_jsonlines:jsonl sagemaker_recordio:recordio; do
        ext=${t#*:}; t=${t%%:*}
        if [[ ! -d "$c/$t" ]]; then
            for f in "$s"/*."$ext"; do seed "$c/$t" "$(basename "$f")" '' "$f"; done
        fi
    done
    if [[ ! -d "$c/auth_credentials" ]]; then
        seed "$c/auth_credentials" keys '\x00' $'-# keys\nalice:aaaaaaaaaaaaaaaa\nbob : bbbbbbbbbbbbbbbb\n'
        seed "$c/auth_credentials" bearer '\x01' $'-authorization: Bearer aaaaaaaaaaaaaaaa\n'
        seed "$c/auth_credentials" sigv4 '\x01' $'-authorization: AWS4-HMAC-SHA256 Credential=alice/20260115/us-east-1/sagemaker/aws4_request, SignedHeaders=host;x-amz-date, Signature=2ec261a6ceb1fae9f8c743bfe0967f81fa9ef2e66162d88961eea42f1783d0aa\nx-amz-date: 20260115T093000Z\nx-amz-content-sha256: UNSIGNED-PAYLOAD\n\n1,2\n'
    fi
    if [[ ! -d "$c/v2_value_writer" ]]; then
        seed "$c/v2_value_writer" mixed '\x03' '-\x00\x00\xc0\x7f\x05\x00\x00\x00hello'
    fi
}
seed_corpora

echo "building fuzz targets (toolchain: ${FUZZ_TOOLCHAIN:-default}${RUSTC_BOOTSTRAP:+ with RUSTC_BOOTSTRAP=1}, sanitizer: $SANITIZER)"
cargo_fuzz build --sanitizer "$SANITIZER"

LOGS="$FUZZ/target/smoke-logs"
mkdir -p "$LOGS"
SUMMARY=()
FAILED=0
for t in $TARGETS; do
    mkdir -p "corpus/$t" "artifacts/$t"
    before=$(find "artifacts/$t" -type f | wc -l)
    echo "== $t: ${SECONDS_PER_TARGET}s"
    status=0
    cargo_fuzz run --sanitizer "$SANITIZER" "$t" -- \
        -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 -rss_limit_mb=2048 \
        >"$LOGS/$t.log" 2>&1 || status=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$LOGS/$t.log" | grep -o '[0-9]*$' || true)
    corpus=$(find "corpus/$t" -type f | wc -l)
    crashes=$(($(find "artifacts/$t" -type f | wc -l) - before))
    if [[ $status -ne 0 || $crashes -gt 0 ]]; then
        FAILED=1
        tail -n 30 "$LOGS/$t.log"
    fi
    SUMMARY+=("$(printf '%-18s %12s %8s %8s %6s' "$t" "${execs:-?}" "$corpus" "$crashes" "$status")")
done

echo
printf '%-18s %12s %8s %8s %6s\n' target execs corpus crashes exit
printf '%s\n' "${SUMMARY[@]}"
echo "logs: $LOGS"
exit $FAILED
