#!/usr/bin/env bash
# Builds every fuzz target of both fuzz packages and runs each for SECONDS
# (default 30), then prints one line per target: executions, corpus size,
# crashes. The packages: fuzz/ (the codec targets, built on tensorgate-codec
# alone) and fuzz/gateway/ (targets that need the gateway crate).
#
#   scripts/fuzz-smoke.sh [SECONDS]
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). cargo-fuzz passes nightly
# flags (-Zsanitizer=address, sancov passes): a nightly toolchain is used when
# rustup has one; otherwise the stable compiler is told to accept them with
# RUSTC_BOOTSTRAP=1. Override with FUZZ_TOOLCHAIN=+nightly / FUZZ_TOOLCHAIN=
# (empty: the default toolchain) and FUZZ_SANITIZER=address|none.
#
# Corpora live in <package>/corpus/<target> (git-ignored) and are seeded from
# the golden vectors on first use; crashes land in <package>/artifacts/<target>.
# Exits non-zero if any target crashed.
set -euo pipefail

SECONDS_PER_TARGET="${1:-30}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
FUZZ="$ROOT/fuzz"
GATEWAY="$FUZZ/gateway"
PACKAGES=("$FUZZ" "$GATEWAY")
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

# Corpora of the gateway targets from before they had a package of their
# own (fuzz/corpus/<target>) move to it.
for t in auth_credentials decthings_evaluate; do
    if [[ -d "$FUZZ/corpus/$t" && ! -e "$GATEWAY/corpus/$t" ]]; then
        mkdir -p "$GATEWAY/corpus"
        mv "$FUZZ/corpus/$t" "$GATEWAY/corpus/$t"
    fi
done

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
    local v="$ROOT/tests/vectors/decthings" c="$FUZZ/corpus" cg="$GATEWAY/corpus" f
    if [[ ! -d "$c/decthings_tensor" ]]; then
        for f in "$v"/current/*.bin; do seed "$c/decthings_tensor" "cur-$(basename "$f")" '\x00' "$f"; done
        for f in "$v"/legacy/*.bin; do seed "$c/decthings_tensor" "leg-$(basename "$f")" '\x01' "$f"; done
    fi
    if [[ ! -d "$c/decthings_rpc" ]]; then
        for f in "$v"/rpc/*.bin; do seed "$c/decthings_rpc" "$(basename "$f")" '' "$f"; done
    fi
    if [[ ! -d "$c/v2_document" ]]; then
        seed "$c/v2_document" req '\x00\x00\x20' '-{"id":"1","inputs":[{"name":"IN","shape":[2,2],"datatype":"FP32","data":[[1.5,-2e3],[NaN,"Infinity"]]},{"name":"B","datatype":"BYTES","shape":[1],"data":["h\u00e9\"llo"]},{"name":"C","datatype":"INT64","shape":[3],"parameters":{"binary_data_size":24}}],"outputs":[{"name":"OUT"}],"parameters":{"binary_data_output":true}}'
        # Large fixed-size data, so that chunks get cut (DocParser::split).
        seed "$c/v2_document" req-large '\x00\x00\x40' '-{"inputs":[{"name":"X","shape":[300],"datatype":"FP32","data":[-1.5625, -0.984375, -0.40625, 0.171875, 0.75, 1.328125, -1.21875, -0.640625, -0.0625, 0.515625, 1.09375, -1.453125, -0.875, -0.296875, 0.28125, 0.859375, 1.4375, -1.109375, -0.53125, 0.046875, 0.625, 1.203125, -1.34375, -0.765625, -0.1875, 0.390625, 0.96875, 1.546875, -1.0, -0.421875, 0.15625, 0.734375, 1.3125, -1.234375, -0.65625, -0.078125, 0.5, 1.078125, -1.46875, -0.890625, -0.3125, 0.265625, 0.84375, 1.421875, -1.125, -0.546875, 0.03125, 0.609375, 1.1875, -1.359375, -0.78125, -0.203125, 0.375, 0.953125, 1.53125, -1.015625, -0.4375, 0.140625, 0.71875, 1.296875, -1.25, -0.671875, -0.09375, 0.484375, 1.0625, -1.484375, -0.90625, -0.328125, 0.25, 0.828125, 1.40625, -1.140625, -0.5625, 0.015625, 0.59375, 1.171875, -1.375, -0.796875, -0.21875, 0.359375, 0.9375, 1.515625, -1.03125, -0.453125, 0.125, 0.703125, 1.28125, -1.265625, -0.6875, -0.109375, 0.46875, 1.046875, -1.5, -0.921875, -0.34375, 0.234375, 0.8125, 1.390625, -1.15625, -0.578125, 0.0, 0.578125, 1.15625, -1.390625, -0.8125, -0.234375, 0.34375, 0.921875, 1.5, -1.046875, -0.46875, 0.109375, 0.6875, 1.265625, -1.28125, -0.703125, -0.125, 0.453125, 1.03125, -1.515625, -0.9375, -0.359375, 0.21875, 0.796875, 1.375, -1.171875, -0.59375, -0.015625, 0.5625, 1.140625, -1.40625, -0.828125, -0.25, 0.328125, 0.90625, 1.484375, -1.0625, -0.484375, 0.09375, 0.671875, 1.25, -1.296875, -0.71875, -0.140625, 0.4375, 1.015625, -1.53125, -0.953125, -0.375, 0.203125, 0.78125, 1.359375, -1.1875, -0.609375, -0.03125, 0.546875, 1.125, -1.421875, -0.84375, -0.265625, 0.3125, 0.890625, 1.46875, -1.078125, -0.5, 0.078125, 0.65625, 1.234375, -1.3125, -0.734375, -0.15625, 0.421875, 1.0, -1.546875, -0.96875, -0.390625, 0.1875, 0.765625, 1.34375, -1.203125, -0.625, -0.046875, 0.53125, 1.109375, -1.4375, -0.859375, -0.28125, 0.296875, 0.875, 1.453125, -1.09375, -0.515625, 0.0625, 0.640625, 1.21875, -1.328125, -0.75, -0.171875, 0.40625, 0.984375, -1.5625, -0.984375, -0.40625, 0.171875, 0.75, 1.328125, -1.21875, -0.640625, -0.0625, 0.515625, 1.09375, -1.453125, -0.875, -0.296875, 0.28125, 0.859375, 1.4375, -1.109375, -0.53125, 0.046875, 0.625, 1.203125, -1.34375, -0.765625, -0.1875, 0.390625, 0.96875, 1.546875, -1.0, -0.421875, 0.15625, 0.734375, 1.3125, -1.234375, -0.65625, -0.078125, 0.5, 1.078125, -1.46875, -0.890625, -0.3125, 0.265625, 0.84375, 1.421875, -1.125, -0.546875, 0.03125, 0.609375, 1.1875, -1.359375, -0.78125, -0.203125, 0.375, 0.953125, 1.53125, -1.015625, -0.4375, 0.140625, 0.71875, 1.296875, -1.25, -0.671875, -0.09375, 0.484375, 1.0625, -1.484375, -0.90625, -0.328125, 0.25, 0.828125, 1.40625, -1.140625, -0.5625, 0.015625, 0.59375, 1.171875, -1.375, -0.796875, -0.21875, 0.359375, 0.9375, 1.515625, -1.03125, -0.453125, 0.125, 0.703125, 1.28125, -1.265625, -0.6875, -0.109375, 0.46875, 1.046875, -1.5, -0.921875, -0.34375, 0.234375, 0.8125, 1.390625, -1.15625, -0.578125]},{"name":"Y","shape":[2,100],"datatype":"INT64","data":[[-50000,-42081,-34162,-26243,-18324,-10405,-2486,5433,13352,21271,29190,37109,45028,-47053,-39134,-31215,-23296,-15377,-7458,461,8380,16299,24218,32137,40056,47975,-44106,-36187,-28268,-20349,-12430,-4511,3408,11327,19246,27165,35084,43003,-49078,-41159,-33240,-25321,-17402,-9483,-1564,6355,14274,22193,30112,38031,45950,-46131,-38212,-30293,-22374,-14455,-6536,1383,9302,17221,25140,33059,40978,48897,-43184,-35265,-27346,-19427,-11508,-3589,4330,12249,20168,28087,36006,43925,-48156,-40237,-32318,-24399,-16480,-8561,-642,7277,15196,23115,31034,38953,46872,-45209,-37290,-29371,-21452,-13533,-5614,2305,10224,18143,26062,33981,41900,49819,-42262,-34343,-26424,-18505,-10586,-2667,5252,13171,21090,29009,36928,44847,-47234,-39315,-31396,-23477,-15558,-7639,280,8199,16118,24037,31956,39875,47794,-44287,-36368,-28449,-20530,-12611,-4692,3227,11146,19065,26984,34903,42822,-49259,-41340,-33421,-25502,-17583,-9664,-1745,6174,14093,22012,29931,37850,45769,-46312,-38393,-30474,-22555,-14636,-6717,1202,9121,17040,24959,32878,40797,48716,-43365,-35446,-27527,-19608,-11689,-3770,4149,12068,19987,27906,35825,43744,-48337,-40418,-32499,-24580,-16661,-8742,-823,7096,15015,22934,30853,38772,46691,-45390,-37471,-29552,-21633,-13714,-5795,2124,10043,17962,25881]]}],"id":"x"}'
        # Plain documents (a request like scripts/bench/infer.lua's, a Triton
        # reply header): read whole by the one-pass parser (document/whole.rs)
        # and in chunks by the state machine, which must agree.
        seed "$c/v2_document" req-plain '\x00\x12\x34' '-{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},{"name":"INPUT1","shape":[1,16],"datatype":"UINT8","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,255]}],"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]}'
        seed "$c/v2_document" resp-plain '\x01\x12\x34' '-{"model_name":"simple","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}},{"name":"OUTPUT1","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}}]}'
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
    if [[ ! -d "$cg/decthings_evaluate" ]]; then
        for f in "$v"/rpc/evaluate_http_body.bin; do seed "$cg/decthings_evaluate" "$(basename "$f")" '' "$f"; done
    fi
    local s="$ROOT/tests/fixtures/sagemaker" t ext
    for t in sagemaker_csv:csv sagemaker_json:json sagemaker_jsonlines:jsonl sagemaker_recordio:recordio; do
        ext=${t#*:}; t=${t%%:*}
        if [[ ! -d "$c/$t" ]]; then
            for f in "$s"/*."$ext"; do seed "$c/$t" "$(basename "$f")" '' "$f"; done
        fi
    done
    if [[ ! -d "$cg/auth_credentials" ]]; then
        seed "$cg/auth_credentials" keys '\x00' $'-# keys\nalice:aaaaaaaaaaaaaaaa\nbob : bbbbbbbbbbbbbbbb\n'
        seed "$cg/auth_credentials" bearer '\x01' $'-authorization: Bearer aaaaaaaaaaaaaaaa\n'
        seed "$cg/auth_credentials" sigv4 '\x01' $'-authorization: AWS4-HMAC-SHA256 Credential=alice/20260115/us-east-1/sagemaker/aws4_request, SignedHeaders=host;x-amz-date, Signature=2ec261a6ceb1fae9f8c743bfe0967f81fa9ef2e66162d88961eea42f1783d0aa\nx-amz-date: 20260115T093000Z\nx-amz-content-sha256: UNSIGNED-PAYLOAD\n\n1,2\n'
    fi
    local g="$ROOT/tests/vectors/grpc" t="$ROOT/tests/fixtures/grpc/triton-2.51"
    if [[ ! -d "$c/grpc_infer_request" ]]; then
        for f in "$g"/infer_request_*.bin; do seed "$c/grpc_infer_request" "$(basename "$f")" '' "$f"; done
    fi
    if [[ ! -d "$c/grpc_budget" ]]; then
        for f in "$g"/infer_request_*.bin; do seed "$c/grpc_budget" "$(basename "$f")" '' "$f"; done
    fi
    if [[ ! -d "$c/grpc_infer_response" ]]; then
        for f in "$g"/infer_response_*.bin "$g"/stream_*.bin; do seed "$c/grpc_infer_response" "$(basename "$f")" '' "$f"; done
    fi
    if [[ ! -d "$c/grpc_frames" ]]; then
        # limit/4, flags (bit 0: compression negotiated), chunk size, then frames.
        seed "$c/grpc_frames" two '\x10\x00\x03\x00\x00\x00\x00\x02hi\x01\x00\x00\x00\x01x'
        seed "$c/grpc_frames" compressed '\x10\x01\x01\x01\x00\x00\x00\x03abc'
    fi
    if [[ ! -d "$c/grpc_metadata_json" ]]; then
        seed "$c/grpc_metadata_json" server '\x00' "$t/server_metadata.json"
        seed "$c/grpc_metadata_json" metadata '\x01' "$t/model_metadata_simple.json"
        seed "$c/grpc_metadata_json" config '\x02' "$t/model_config_decoupled_repeat.json"
        seed "$c/grpc_metadata_json" stats '\x03' "$t/model_statistics_rowsum.json"
        seed "$c/grpc_metadata_json" index '\x04' "$t/repository_index.json"
    fi
    if [[ ! -d "$c/grpc_timeout" ]]; then
        seed "$c/grpc_timeout" millis '250m'
        seed "$c/grpc_timeout" eight '99999999u'
    fi
    if [[ ! -d "$c/v2_value_writer" ]]; then
        seed "$c/v2_value_writer" mixed '\x03' '-\x00\x00\xc0\x7f\x05\x00\x00\x00hello'
    fi
}
seed_corpora

LOGS="$FUZZ/target/smoke-logs"
mkdir -p "$LOGS"
SUMMARY=()
FAILED=0

# Builds one package's targets, then runs each for SECONDS_PER_TARGET.
fuzz_package() { # package directory
    local pkg="$1" t status before execs corpus crashes
    cd "$pkg"
    echo "building the fuzz targets of ${pkg#"$ROOT"/} (toolchain: ${FUZZ_TOOLCHAIN:-default}${RUSTC_BOOTSTRAP:+ with RUSTC_BOOTSTRAP=1}, sanitizer: $SANITIZER)"
    cargo_fuzz build --fuzz-dir "$pkg" --sanitizer "$SANITIZER"
    for t in $(cargo_fuzz list --fuzz-dir "$pkg"); do
        mkdir -p "corpus/$t" "artifacts/$t"
        before=$(find "artifacts/$t" -type f | wc -l)
        echo "== $t: ${SECONDS_PER_TARGET}s"
        status=0
        cargo_fuzz run --fuzz-dir "$pkg" --sanitizer "$SANITIZER" "$t" -- \
            -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 -rss_limit_mb=2048 \
            >"$LOGS/$t.log" 2>&1 || status=$?
        execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$LOGS/$t.log" | grep -o '[0-9]*$' || true)
        corpus=$(find "corpus/$t" -type f | wc -l)
        crashes=$(($(find "artifacts/$t" -type f | wc -l) - before))
        if [[ $status -ne 0 || $crashes -gt 0 ]]; then
            FAILED=1
            tail -n 30 "$LOGS/$t.log"
        fi
        SUMMARY+=("$(printf '%-20s %12s %8s %8s %6s' "$t" "${execs:-?}" "$corpus" "$crashes" "$status")")
    done
}
for pkg in "${PACKAGES[@]}"; do
    fuzz_package "$pkg"
done

echo
printf '%-20s %12s %8s %8s %6s\n' target execs corpus crashes exit
printf '%s\n' "${SUMMARY[@]}"
echo "logs: $LOGS"
exit $FAILED
