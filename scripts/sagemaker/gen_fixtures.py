"""Writes SageMaker request fixtures with the real SageMaker Python SDK (v2).

Usage (through scripts/sagemaker/client.sh fixtures):
    python gen_fixtures.py OUT_DIR

For each case it writes OUT_DIR/NAME.{csv,json,jsonl,recordio}, the exact
bytes the SDK's serializer (or Python's own csv / numpy writers, where a
SageMaker user would use those) produces, and OUT_DIR/NAME.expect.json:

    {"content_type": ..., "dtype": "FP32", "shape": [N, F], "values": [...]}

`values` are the N*F elements in row-major order, each the exact value of the
target dtype (an FP32 value is written as the double it widens to, so it
parses back exactly); NaN and infinities are the strings "NaN", "Infinity",
"-Infinity". tests/it/sagemaker_codec.rs decodes every body and compares.
"""

import csv
import io
import json
import math
import os
import sys

import numpy as np

os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")

import sagemaker  # noqa: E402
import scipy  # noqa: E402
import scipy.sparse  # noqa: E402
from sagemaker.amazon.common import (  # noqa: E402
    RecordSerializer,
    write_numpy_to_dense_tensor,
    write_spmatrix_to_sparse_tensor,
)
from sagemaker.serializers import (  # noqa: E402
    CSVSerializer,
    JSONLinesSerializer,
    JSONSerializer,
)

NAN = float("nan")
INF = float("inf")

V2_NAMES = {
    np.dtype("float32"): "FP32",
    np.dtype("float64"): "FP64",
    np.dtype("int8"): "INT8",
    np.dtype("int16"): "INT16",
    np.dtype("int32"): "INT32",
    np.dtype("int64"): "INT64",
    np.dtype("uint8"): "UINT8",
    np.dtype("uint16"): "UINT16",
    np.dtype("uint32"): "UINT32",
    np.dtype("uint64"): "UINT64",
}


def as_json_value(v):
    if isinstance(v, (np.floating, float)):
        f = float(v)
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return f
    return int(v)


def to_bytes(body):
    if isinstance(body, io.BytesIO):
        return body.getvalue()
    if isinstance(body, str):
        return body.encode("utf-8")
    return bytes(body)


class Writer:
    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.names = []

    def case(self, name, ext, content_type, body, expected):
        """expected: a 2-D numpy array of the target dtype."""
        assert expected.ndim == 2, name
        body = to_bytes(body)
        with open(os.path.join(self.out_dir, f"{name}.{ext}"), "wb") as f:
            f.write(body)
        expect = {
            "content_type": content_type,
            "dtype": V2_NAMES[expected.dtype],
            "shape": list(expected.shape),
            "values": [as_json_value(v) for v in expected.reshape(-1)],
        }
        with open(os.path.join(self.out_dir, f"{name}.expect.json"), "w") as f:
            json.dump(expect, f, indent=None)
            f.write("\n")
        self.names.append(f"{name}.{ext}")


ROWS = [[1.5, 16.0, 14.0, 23.0], [-2.0, 100.2, 15.2, 9.2]]
F32_SPECIALS = np.array(
    [
        [1e-05, 1.5e20, -0.0, NAN],
        [INF, -INF, 0.1, 3.4028235e38],
        [1.0, 1e-45, 123456.79, 2.5],
    ],
    dtype=np.float32,
)


def csv_cases(w):
    ser = CSVSerializer()
    w.case("csv_list_rows", "csv", ser.CONTENT_TYPE, ser.serialize(ROWS), np.array(ROWS, np.float32))
    w.case(
        "csv_list_one_row", "csv", ser.CONTENT_TYPE, ser.serialize(ROWS[0]), np.array([ROWS[0]], np.float32)
    )
    # The same Python floats as FP64: the text is repr(), exact for doubles.
    w.case("csv_list_rows_fp64", "csv", ser.CONTENT_TYPE, ser.serialize(ROWS), np.array(ROWS, np.float64))
    w.case("csv_numpy_f32", "csv", ser.CONTENT_TYPE, ser.serialize(F32_SPECIALS), F32_SPECIALS)
    f64 = np.array([[0.1, 1e-300, 5e-324, -1.7976931348623157e308], [2.0**53 + 2, NAN, -INF, 1e16]])
    w.case("csv_numpy_f64", "csv", ser.CONTENT_TYPE, ser.serialize(f64), f64)
    ints = np.array([[1, -2, 3], [2147483647, -2147483648, 0]], dtype=np.int64)
    w.case("csv_numpy_int64_as_int32", "csv", ser.CONTENT_TYPE, ser.serialize(ints), ints.astype(np.int32))
    u8 = np.array([[0, 255, 7]], dtype=np.uint8)
    w.case("csv_numpy_uint8", "csv", ser.CONTENT_TYPE, ser.serialize(u8), u8)
    # A 1-D array is one record.
    one = np.array([0.25, -1.0, 3.0], dtype=np.float32)
    w.case("csv_numpy_1d", "csv", ser.CONTENT_TYPE, ser.serialize(one), one.reshape(1, -1))
    # A pandas DataFrame: to_csv ends with a newline.
    import pandas as pd

    frame = pd.DataFrame(np.array(ROWS, np.float64))
    w.case("csv_dataframe", "csv", ser.CONTENT_TYPE, ser.serialize(frame), np.array(ROWS, np.float64))
    # What users write without the SDK: numpy's savetxt with %g (a newline
    # after every row) and Python's csv module (\r\n, all fields quoted).
    buf = io.BytesIO()
    np.savetxt(buf, F32_SPECIALS, fmt="%g", delimiter=",")
    g = np.array([[float(x) for x in line.split(",")] for line in buf.getvalue().decode().splitlines()])
    w.case("csv_savetxt_g", "csv", "text/csv", buf, g.astype(np.float32))
    text = io.StringIO()
    writer = csv.writer(text, quoting=csv.QUOTE_ALL)
    writer.writerows(ROWS)
    w.case("csv_writer_quoted_crlf", "csv", "text/csv; label_size=0", text.getvalue(), np.array(ROWS, np.float32))


def json_cases(w):
    ser = JSONSerializer()
    w.case(
        "json_instances_features",
        "json",
        ser.CONTENT_TYPE,
        ser.serialize({"instances": [{"features": r} for r in ROWS]}),
        np.array(ROWS, np.float32),
    )
    w.case(
        "json_instances_data_values",
        "json",
        ser.CONTENT_TYPE,
        ser.serialize({"instances": [{"data": {"features": {"values": r}}} for r in ROWS]}),
        np.array(ROWS, np.float32),
    )
    # The documentation's sparse example, with a smaller shape.
    sparse = [
        {"data": {"features": {"keys": [2, 6, 9, 11], "shape": [12], "values": [1, 1, 1, 4]}}},
        {"data": {"features": {"keys": [0, 11], "shape": [12], "values": [13, 1]}}},
    ]
    dense = np.zeros((2, 12), np.float32)
    for i, inst in enumerate(sparse):
        feats = inst["data"]["features"]
        dense[i, feats["keys"]] = feats["values"]
    w.case("json_instances_sparse", "json", ser.CONTENT_TYPE, ser.serialize({"instances": sparse}), dense)
    mixed = [
        ROWS[0],
        {"features": ROWS[1]},
        {"data": {"features": {"values": ROWS[0]}}, "configuration": {"k": 3}},
        {"data": {"features": {"keys": [1], "shape": [4], "values": [7.5]}}},
    ]
    want = np.array([ROWS[0], ROWS[1], ROWS[0], [0, 7.5, 0, 0]], np.float32)
    w.case("json_instances_mixed", "json", ser.CONTENT_TYPE, ser.serialize({"instances": mixed}), want)
    # A dict holding an ndarray: JSONSerializer calls tolist() on it.
    arr = np.array(ROWS, np.float64)
    w.case("json_instances_ndarray", "json", ser.CONTENT_TYPE, ser.serialize({"instances": arr}), arr)
    one = np.array([0.5, -1.25, 3.0], np.float32)
    w.case("json_bare_list", "json", ser.CONTENT_TYPE, ser.serialize(one), one.reshape(1, -1))
    # FP32 values widened by tolist(): 0.1f is 0.10000000149011612 here, and
    # json.dumps writes NaN and the infinities as bare NaN / Infinity.
    w.case("json_bare_nested_f32", "json", ser.CONTENT_TYPE, ser.serialize(F32_SPECIALS), F32_SPECIALS)
    ints = np.array([[1, 2, 3], [-4, 5, -6]], np.int64)
    w.case("json_bare_nested_int64", "json", ser.CONTENT_TYPE, ser.serialize(ints), ints)


def jsonl_cases(w):
    ser = JSONLinesSerializer()
    w.case(
        "jsonl_features",
        "jsonl",
        ser.CONTENT_TYPE,
        ser.serialize([{"features": r} for r in ROWS]),
        np.array(ROWS, np.float32),
    )
    w.case("jsonl_bare_lists", "jsonl", ser.CONTENT_TYPE, ser.serialize(ROWS), np.array(ROWS, np.float64))
    lines = [
        {"data": {"features": {"keys": [0, 1, 3], "shape": [4], "values": [1, 4, 1]}}},
        {"data": {"features": {"values": [1.5, 16.0, 14.0, 23.0]}}},
        {"features": [1.5, 16.0, 14.0, 23.0]},
        [NAN, INF, -INF, -0.0],
    ]
    want = np.array([[1, 4, 0, 1], ROWS[0], ROWS[0], [NAN, INF, -INF, -0.0]], np.float32)
    w.case("jsonl_mixed", "jsonl", "application/jsonl", ser.serialize(lines), want)


def recordio_cases(w):
    ct = "application/x-recordio-protobuf"
    f32 = np.array([[1, 2], [3, 4]], np.float32)
    w.case("recordio_f32_2x2", "recordio", ct, RecordSerializer().serialize(f32), f32)
    w.case("recordio_f32_specials", "recordio", ct, RecordSerializer().serialize(F32_SPECIALS), F32_SPECIALS)
    f64 = np.array([[0.1, 2.5, -3.0], [1e-300, NAN, 7.0]], np.float64)
    w.case("recordio_f64", "recordio", ct, RecordSerializer().serialize(f64), f64)
    # int64 arrays are written as Int32Tensor (varints: records need padding).
    ints = np.array([[1, -1, 300], [70000, 0, -2147483648]], np.int64)
    w.case("recordio_int_as_int32", "recordio", ct, RecordSerializer().serialize(ints), ints.astype(np.int32))
    w.case("recordio_int_as_fp32", "recordio", ct, RecordSerializer().serialize(ints), ints.astype(np.float32))
    one = np.array([0.5, 1.5, 2.5], np.float32)
    w.case("recordio_1d", "recordio", ct, RecordSerializer().serialize(one), one.reshape(1, -1))
    buf = io.BytesIO()
    labels = np.array([1.0, 0.0, 1.0], np.float32)
    data = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], np.float32)
    write_numpy_to_dense_tensor(buf, data, labels)
    w.case("recordio_dense_labels", "recordio", ct, buf, data)
    dense = np.array([[0, 1.5, 0, 0, 2], [0, 0, 0, 0, 0], [3, 0, 0, 0, -4.25]], np.float32)
    buf = io.BytesIO()
    write_spmatrix_to_sparse_tensor(buf, scipy.sparse.csr_matrix(dense), np.array([1, 0, 1], np.float32))
    w.case("recordio_sparse_labels", "recordio", ct, buf, dense)
    dense64 = np.array([[0, 0, 1e-300], [2.5, 0, 0]], np.float64)
    buf = io.BytesIO()
    write_spmatrix_to_sparse_tensor(buf, scipy.sparse.csr_matrix(dense64))
    w.case("recordio_sparse_f64", "recordio", ct, buf, dense64)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    w = Writer(out_dir)
    csv_cases(w)
    json_cases(w)
    jsonl_cases(w)
    recordio_cases(w)
    print(
        f"sagemaker {sagemaker.__version__}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"python {sys.version.split()[0]}: {len(w.names)} fixtures"
    )


if __name__ == "__main__":
    main()
