"""Feeds tensorgate's reply samples to the real SageMaker SDK deserializers.

Usage (through scripts/sagemaker/client.sh check-replies):
    python check_replies.py REPLIES_DIR

REPLIES_DIR holds {rowsum,mixed}.{json,jsonl,csv}, written by tensorgate's
reply writers (tests/it/sagemaker_codec.rs builds the same outputs and compares
its bytes with these files). Each is read with the SDK's JSONDeserializer,
JSONLinesDeserializer or CSVDeserializer, and what the SDK returns is
compared with the outputs the samples were written from, value for value:
FP32 values bit for bit after numpy's float32 conversion, FP64 and integers
exactly. Exits non-zero on the first difference.
"""

import io
import math
import os
import sys

import numpy as np

os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")

from sagemaker.deserializers import (  # noqa: E402
    CSVDeserializer,
    JSONDeserializer,
    JSONLinesDeserializer,
)

# The outputs behind the samples (see tests/it/sagemaker_codec.rs).
ROWSUM_INPUT = np.array(
    [
        [1.5, 16.0, 14.0, 23.0],
        [1e-5, -0.0, 0.1, 3.4028235e38],
        [np.nan, np.inf, 0.0, 1e-45],
    ],
    dtype=np.float32,
)
# -7.038531e-26 as Rust reads that literal (bits 0x95ae43fd): the one FP32
# magnitude whose shortest digits read back through a double land on the
# neighbour, so tensorgate writes its widened double instead. (numpy's
# float32(-7.038531e-26) is that neighbour: the double rounding itself.)
ROWSUM_INPUT[2, 2] = np.array([0x95AE43FD], dtype=np.uint32).view(np.float32)[0]
# rowsum: each row summed in float64, then narrowed.
ROWSUM_SCORE = ROWSUM_INPUT.astype(np.float64).sum(axis=1).astype(np.float32)

MIXED = [
    {
        "id": 7,
        "pixels": [0, 128, 255],
        "flags": [True, False],
        "labels": ["cat, black", 'say "hi"'],
        "cube": [[0.1, 1e300], [-2.5, 5e-324]],
    },
    {
        "id": -9007199254740993,
        "pixels": [1, 2, 3],
        "flags": [False, True],
        "labels": ["", "\u00e9t\u00e9 \u2603"],
        "cube": [[1.0, 2.0], [3.0, 4.0]],
    },
]

# JSON spells non-finite floats as strings (tensorgate's convention).
JSON_SPECIALS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def same_f32(got, want, where):
    """`got` (a JSON number, one of the JSON_SPECIALS strings, or CSV text)
    read as numpy reads it must be the float32 `want`, bit for bit."""
    if isinstance(got, str):
        got = JSON_SPECIALS[got] if got in JSON_SPECIALS else float(got)
    value = np.float32(got)
    ok = (np.isnan(value) and np.isnan(want)) or value.tobytes() == np.float32(want).tobytes()
    if not ok:
        raise AssertionError(f"{where}: read {got!r} -> {value!r}, expected {want!r}")


def check(cond, where):
    if not cond:
        raise AssertionError(where)


def deserialize(deserializer, path, content_type):
    with open(path, "rb") as f:
        return deserializer.deserialize(io.BytesIO(f.read()), content_type)


def check_rowsum_objects(objects, where):
    check(len(objects) == len(ROWSUM_INPUT), f"{where}: {len(objects)} records")
    for i, obj in enumerate(objects):
        check(list(obj) == ["score", "OUTPUT0"], f"{where}[{i}]: keys {list(obj)}")
        same_f32(obj["score"], ROWSUM_SCORE[i], f"{where}[{i}].score")
        check(len(obj["OUTPUT0"]) == 4, f"{where}[{i}].OUTPUT0 length")
        for j, v in enumerate(obj["OUTPUT0"]):
            same_f32(v, ROWSUM_INPUT[i, j], f"{where}[{i}].OUTPUT0[{j}]")


def check_rowsum_csv(rows, where):
    check(len(rows) == len(ROWSUM_INPUT), f"{where}: {len(rows)} rows")
    for i, row in enumerate(rows):
        check(len(row) == 5, f"{where}[{i}]: {row}")
        same_f32(row[0], ROWSUM_SCORE[i], f"{where}[{i}][0]")
        for j in range(4):
            same_f32(row[j + 1], ROWSUM_INPUT[i, j], f"{where}[{i}][{j + 1}]")


def check_mixed_csv(rows, where):
    check(len(rows) == len(MIXED), f"{where}: {len(rows)} rows")
    for i, (row, want) in enumerate(zip(rows, MIXED)):
        expected = (
            [str(want["id"])]
            + [str(p) for p in want["pixels"]]
            + ["1" if f else "0" for f in want["flags"]]
            + want["labels"]
        )
        check(row[: len(expected)] == expected, f"{where}[{i}]: {row}")
        cube = [float(x) for x in row[len(expected):]]
        check(cube == [x for pair in want["cube"] for x in pair], f"{where}[{i}] cube: {cube}")


def main():
    d = sys.argv[1]
    path = lambda name: os.path.join(d, name)  # noqa: E731
    got = deserialize(JSONDeserializer(), path("rowsum.json"), "application/json")
    check(list(got) == ["predictions"], f"rowsum.json: {list(got)}")
    check_rowsum_objects(got["predictions"], "rowsum.json")
    got = deserialize(JSONLinesDeserializer(), path("rowsum.jsonl"), "application/jsonlines")
    check_rowsum_objects(got, "rowsum.jsonl")
    check_rowsum_csv(deserialize(CSVDeserializer(), path("rowsum.csv"), "text/csv"), "rowsum.csv")

    got = deserialize(JSONDeserializer(), path("mixed.json"), "application/json")
    check(got == {"predictions": MIXED}, f"mixed.json: {got}")
    got = deserialize(JSONLinesDeserializer(), path("mixed.jsonl"), "application/jsonlines")
    check(got == MIXED, f"mixed.jsonl: {got}")
    check_mixed_csv(deserialize(CSVDeserializer(), path("mixed.csv"), "text/csv"), "mixed.csv")
    print("6 reply samples read back by the SageMaker SDK deserializers as written")


if __name__ == "__main__":
    main()
