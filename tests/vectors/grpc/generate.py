"""Golden gRPC vectors from a third-party encoder.

Every message here is built and encoded by the official Python stack:
tritonclient[grpc]'s own generated `service_pb2` / `model_config_pb2`
(inference requests through tritonclient's own request builder, exactly
as `InferenceServerClient.infer` sends them) and `grpc_health`'s
`health_pb2`, serialized with `SerializeToString(deterministic=True)`.

For each vector NAME it writes NAME.bin (the message) and an entry in
vectors.json: the message type, its protobuf JSON form
(`MessageToDict(preserving_proto_field_name=True)`: 64-bit integers as
strings, bytes in base64), whether its encoding is canonical (ours must be
byte-identical), and for inference requests / responses each tensor's data
in the V2 binary layout (base64), as the conversion to V2 must give it.

Regenerate (from the repository root, with the venv of
scripts/triton-backend.sh):  python tests/vectors/grpc/generate.py
"""
import base64
import json
import os

import numpy as np
import tritonclient.grpc as grpcclient
from google.protobuf.json_format import MessageToDict
from grpc_health.v1 import health_pb2
from tritonclient.grpc import _utils, model_config_pb2 as mc, service_pb2 as pb

OUT = os.path.dirname(os.path.abspath(__file__))
vectors = {}


def b64(data):
    return base64.b64encode(data).decode("ascii")


def add(name, message, canonical=True, v2_data=None, note=None):
    data = message.SerializeToString(deterministic=True)
    with open(os.path.join(OUT, name + ".bin"), "wb") as f:
        f.write(data)
    entry = {
        "type": message.DESCRIPTOR.full_name,
        "json": MessageToDict(message, preserving_proto_field_name=True),
        "canonical": canonical,
    }
    if v2_data is not None:
        entry["v2_data"] = [b64(d) for d in v2_data]
    if note:
        entry["note"] = note
    vectors[name] = entry


def v2_bytes(array):
    """The V2 binary layout of a numpy array, as the conversion must give it."""
    if array.dtype == np.object_:
        return b"".join(len(e).to_bytes(4, "little") + e for e in array.reshape(-1))
    return array.tobytes()


# -- inference requests, built by tritonclient itself --------------------------
ARRAYS = {
    "BOOL": np.array([[True, False, True]]),
    "INT8": np.array([-128, 0, 127], dtype=np.int8),
    "INT16": np.array([-32768, 1, 32767], dtype=np.int16),
    "INT32": np.arange(-3, 3, dtype=np.int32).reshape(2, 3),
    "INT64": np.array([np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max], dtype=np.int64),
    "UINT8": np.array([0, 1, 255], dtype=np.uint8),
    "UINT16": np.array([0, 65535], dtype=np.uint16),
    "UINT32": np.array([0, 4294967295], dtype=np.uint32),
    "UINT64": np.array([0, 18446744073709551615], dtype=np.uint64),
    "FP16": np.array([1.0, -2.5, np.inf], dtype=np.float16),
    "FP32": np.array([[0.5, -0.0, np.nan, 3.4028235e38]], dtype=np.float32),
    "FP64": np.array([1e-300, -1.5], dtype=np.float64),
    "BYTES": np.array([b"", b"h\xc3\xa9", b"\x00\xff"], dtype=np.object_),
}


def infer_input(name, array):
    dtype = next(k for k, v in ARRAYS.items() if v is array)
    i = grpcclient.InferInput(name, list(array.shape), dtype)
    i.set_data_from_numpy(array)
    return i


def bf16_input():
    i = grpcclient.InferInput("BF", [2], "BF16")
    # tritonclient sends BF16 as raw bytes given as float32 through ml_dtypes
    # or as the two high bytes; here the raw bytes of 1.0 and -2.0.
    i._raw_content = b"\x80\x3f\x00\xc0"
    return i


inputs = [infer_input(f"IN_{k}", v) for k, v in ARRAYS.items()]
outputs = [grpcclient.InferRequestedOutput("OUT_A"), grpcclient.InferRequestedOutput("OUT_B", class_count=3)]
request = _utils._get_inference_request(
    model_name="every_type", inputs=inputs + [bf16_input()], model_version="2", request_id="req-7",
    outputs=outputs, sequence_id=42, sequence_start=True, sequence_end=False, priority=1, timeout=1000,
    parameters={"custom_str": "x", "custom_int": -5, "custom_bool": True, "custom_double": 0.25},
)
add("infer_request_every_type_raw", request,
    v2_data=[v2_bytes(v) for v in ARRAYS.values()] + [b"\x80\x3f\x00\xc0"],
    note="tritonclient.grpc's request builder: raw_input_contents, sequence/priority/timeout parameters, "
         "classification on OUT_B")

# Typed contents (tritonclient sends raw; other clients, KServe's, send typed).
typed = pb.ModelInferRequest(model_name="typed")
expected = []


def typed_input(name, datatype, shape, field, values, v2):
    t = typed.inputs.add()
    t.name, t.datatype = name, datatype
    t.shape.extend(shape)
    getattr(t.contents, field).extend(values)
    expected.append(v2)


typed_input("B", "BOOL", [2], "bool_contents", [True, False], b"\x01\x00")
typed_input("I8", "INT8", [2], "int_contents", [-1, 5], np.array([-1, 5], np.int8).tobytes())
typed_input("I16", "INT16", [1], "int_contents", [-300], np.array([-300], np.int16).tobytes())
typed_input("I32", "INT32", [2], "int_contents", [7, -7], np.array([7, -7], np.int32).tobytes())
typed_input("I64", "INT64", [1], "int64_contents", [-(2**40)], np.array([-(2**40)], np.int64).tobytes())
typed_input("U8", "UINT8", [1], "uint_contents", [200], b"\xc8")
typed_input("U16", "UINT16", [1], "uint_contents", [60000], np.array([60000], np.uint16).tobytes())
typed_input("U32", "UINT32", [1], "uint_contents", [2**32 - 1], b"\xff\xff\xff\xff")
typed_input("U64", "UINT64", [1], "uint64_contents", [2**64 - 1], b"\xff" * 8)
typed_input("F32", "FP32", [2], "fp32_contents", [0.1, -1e-45], np.array([0.1, -1e-45], np.float32).tobytes())
typed_input("F64", "FP64", [1], "fp64_contents", [2.5], np.array([2.5], np.float64).tobytes())
typed_input("S", "BYTES", [2], "bytes_contents", [b"ab", b""], b"\x02\x00\x00\x00ab\x00\x00\x00\x00")
add("infer_request_typed", typed, v2_data=expected)

# -- inference responses -------------------------------------------------------
resp = pb.ModelInferResponse(model_name="simple", model_version="1", id="r1")
for name, array in [("OUTPUT0", ARRAYS["INT32"]), ("OUTPUT1", ARRAYS["BYTES"])]:
    o = resp.outputs.add()
    o.name, o.datatype = name, "INT32" if array.dtype == np.int32 else "BYTES"
    o.shape.extend(array.shape)
    resp.raw_output_contents.append(v2_bytes(array))
resp.parameters["triton_final_response"].bool_param = True
add("infer_response_raw", resp, v2_data=[v2_bytes(ARRAYS["INT32"]), v2_bytes(ARRAYS["BYTES"])])

typed_resp = pb.ModelInferResponse(model_name="kserve_model", model_version="")
o = typed_resp.outputs.add()
o.name, o.datatype = "predict", "FP64"
o.shape.extend([2])
o.contents.fp64_contents.extend([0.75, -3.0])
add("infer_response_typed", typed_resp, v2_data=[np.array([0.75, -3.0]).tobytes()],
    note="typed output contents, as KServe's gRPC server answers")

stream = pb.ModelStreamInferResponse()
stream.infer_response.CopyFrom(resp)
add("stream_response", stream)
add("stream_error", pb.ModelStreamInferResponse(error_message="Request for unknown model: 'x' is not found"))

# -- metadata ----------------------------------------------------------------
add("server_metadata", pb.ServerMetadataResponse(name="triton", version="2.51.0",
                                                  extensions=["binary_tensor_data", "statistics"]))
meta = pb.ModelMetadataResponse(name="simple", versions=["1", "2"], platform="python")
t = meta.inputs.add(); t.name, t.datatype = "INPUT0", "INT32"; t.shape.extend([-1, 16])
t = meta.outputs.add(); t.name, t.datatype = "OUTPUT0", "FP32"; t.shape.extend([-1])
add("model_metadata", meta)

config = mc.ModelConfig(name="every_field", platform="", backend="python", runtime="model.py", max_batch_size=8,
                        default_model_filename="model.py")
config.version_policy.specific.versions.extend([1, 3])
i = config.input.add(); i.name, i.data_type, i.format = "IMG", mc.TYPE_UINT8, mc.ModelInput.FORMAT_NHWC
i.dims.extend([-1, 224, 224, 3]); i.reshape.shape.extend([1]); i.optional = True; i.allow_ragged_batch = True
o = config.output.add(); o.name, o.data_type, o.label_filename = "PROB", mc.TYPE_FP32, "labels.txt"
o.dims.extend([1000])
bi = config.batch_input.add(); bi.kind = mc.BatchInput.BATCH_ACCUMULATED_ELEMENT_COUNT
bi.target_name.append("ACC"); bi.data_type = mc.TYPE_INT32; bi.source_input.append("IMG")
bo = config.batch_output.add(); bo.target_name.append("PROB"); bo.source_input.append("IMG")
config.dynamic_batching.preferred_batch_size.extend([4, 8])
config.dynamic_batching.max_queue_delay_microseconds = 100
config.dynamic_batching.priority_levels = 2
config.dynamic_batching.default_queue_policy.timeout_action = mc.ModelQueuePolicy.DELAY
config.dynamic_batching.priority_queue_policy[2].max_queue_size = 16
g = config.instance_group.add(); g.name, g.kind, g.count = "g0", mc.ModelInstanceGroup.KIND_CPU, 2
g.rate_limiter.resources.add(name="R", count=1); g.rate_limiter.priority = 1
g.profile.append("p"); g.host_policy = "numa0"
config.cc_model_filenames["7.5"] = "a.plan"
config.metric_tags["team"] = "ml"
config.parameters["EXECUTION_ENV_PATH"].string_value = "$$TRITON_MODEL_DIRECTORY/env.tar.gz"
config.model_transaction_policy.decoupled = True
config.response_cache.enable = True
add("model_config", pb.ModelConfigResponse(config=config))

seq = mc.ModelConfig(name="sequence", backend="python", max_batch_size=4)
seq.sequence_batching.max_sequence_idle_microseconds = 5000000
ci = seq.sequence_batching.control_input.add(); ci.name = "START"
c = ci.control.add(); c.kind = mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_START
c.int32_false_true.extend([0, 1])
st = seq.sequence_batching.state.add(); st.input_name, st.output_name = "IN_STATE", "OUT_STATE"
st.data_type = mc.TYPE_FP32; st.dims.extend([-1])
seq.sequence_batching.oldest.max_candidate_sequences = 4
add("model_config_sequence", pb.ModelConfigResponse(config=seq))

ens = mc.ModelConfig(name="pipeline", platform="ensemble", max_batch_size=1)
step = ens.ensemble_scheduling.step.add(); step.model_name, step.model_version = "pre", -1
step.input_map["IN"] = "RAW"; step.output_map["OUT"] = "MID"
add("model_config_ensemble", pb.ModelConfigResponse(config=ens))

warm = mc.ModelConfig(name="warm")
warm.optimization.eager_batching = True
w = warm.model_warmup.add(); w.name, w.batch_size = "w", 1
add("model_config_outside_subset", pb.ModelConfigResponse(config=warm), canonical=False,
    note="optimization and model_warmup are not in model_config.proto's subset: decoded past, dropped")

stats = pb.ModelStatisticsResponse()
s = stats.model_stats.add(name="simple", version="1", last_inference=1732700000123, inference_count=6,
                          execution_count=3)
s.inference_stats.success.count, s.inference_stats.success.ns = 6, 123456789
s.inference_stats.cache_miss.count = 1
b = s.batch_stats.add(batch_size=2); b.compute_infer.count, b.compute_infer.ns = 3, 99
s.memory_usage.add(type="CPU", id=0, byte_size=1024)
s.response_stats["0"].success.count = 6
s.response_stats["1"].empty_response.count = 1
add("model_statistics", stats)

idx = pb.RepositoryIndexResponse()
idx.models.add(name="a", version="1", state="READY")
idx.models.add(name="b", version="2", state="UNAVAILABLE", reason="unloaded")
add("repository_index", idx)

# -- control and health ---------------------------------------------------------
load = pb.RepositoryModelLoadRequest(model_name="m")
load.parameters["config"].string_param = '{"backend":"python"}'
load.parameters["file:1/model.py"].bytes_param = b"print('hi')\n"
add("repository_model_load", load)
add("system_shm_register", pb.SystemSharedMemoryRegisterRequest(name="r", key="/k", offset=8, byte_size=64))
add("cuda_shm_register", pb.CudaSharedMemoryRegisterRequest(name="c", raw_handle=b"\x01\x02", device_id=0,
                                                            byte_size=128))
shm = pb.SystemSharedMemoryStatusResponse()
shm.regions["r"].name, shm.regions["r"].key, shm.regions["r"].byte_size = "r", "/k", 64
add("system_shm_status", shm)
trace = pb.TraceSettingRequest(model_name="simple")
trace.settings["trace_level"].value.extend(["TIMESTAMPS", "TENSORS"])
trace.settings["trace_rate"].value.extend(["1"])
add("trace_setting", trace)
logs = pb.LogSettingsResponse()
logs.settings["log_info"].bool_param = True
logs.settings["log_verbose_level"].uint32_param = 2
logs.settings["log_format"].string_param = "ISO8601"
add("log_settings", logs)
add("health_check_request", health_pb2.HealthCheckRequest(service="inference.GRPCInferenceService"))
add("health_check_response", health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.NOT_SERVING))

with open(os.path.join(OUT, "vectors.json"), "w") as f:
    json.dump(vectors, f, indent=1, sort_keys=True)
    f.write("\n")
print(f"{len(vectors)} vectors")
