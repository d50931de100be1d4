#!/usr/bin/env python3
"""KServe 0.21 V2 model server for tensorgate tests, bound to 127.0.0.1 only.

Usage: server.py --http_port PORT [--grpc_port PORT]

Models (V2 / Open Inference Protocol over REST, and over gRPC when
--grpc_port is given):
  kserve_simple    INPUT0, INPUT1 INT32 (any equal shapes) ->
                   OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1 (INT32)
  kserve_identity  every input i -> output "OUTPUT<i>" with the same datatype,
                   shape and values (BYTES elements echoed as bytes)

Both opt into the binary tensor extension for responses by passing
use_binary_outputs=payload.use_binary_outputs and
requested_outputs=payload.request_outputs to InferResponse (without that,
kserve 0.21 always answers JSON).

kserve's RESTServer builds uvicorn.Config(host="0.0.0.0", ...) with no way to
change the host, so uvicorn.Config is replaced by a subclass that forces
host=127.0.0.1 before the server starts. Its GRPCServer binds "[::]:PORT"
likewise, so grpc.aio.server is wrapped to bind 127.0.0.1 instead; without
--grpc_port gRPC is disabled.
"""
import argparse
import sys

import numpy as np
import uvicorn

LOOPBACK = "127.0.0.1"
_UvicornConfig = uvicorn.Config


class _LoopbackConfig(_UvicornConfig):
    def __init__(self, *args, **kwargs):
        kwargs["host"] = LOOPBACK
        super().__init__(*args, **kwargs)


uvicorn.Config = _LoopbackConfig

from grpc import aio as _grpc_aio  # noqa: E402

_grpc_server = _grpc_aio.server


def _loopback_grpc_server(*args, **kwargs):
    server = _grpc_server(*args, **kwargs)
    add_port = server.add_insecure_port

    def add_loopback_port(address):
        host, _, port = address.rpartition(":")
        if host not in ("[::]", "0.0.0.0", ""):
            raise ValueError(f"unexpected gRPC bind address {address!r}")
        return add_port(f"{LOOPBACK}:{port}")

    server.add_insecure_port = add_loopback_port
    return server


_grpc_aio.server = _loopback_grpc_server

# Imported after the patch on purpose (kserve reads uvicorn.Config at call
# time, but keep the order obvious).
import kserve  # noqa: E402
from kserve import InferOutput, InferRequest, InferResponse  # noqa: E402
from kserve.errors import InvalidInput  # noqa: E402
from kserve.utils.utils import generate_uuid  # noqa: E402


def _respond(model, payload: InferRequest, outputs):
    # kserve's JSON response model requires a string id: echo the request's
    # id, or make one up (as kserve's own model servers do) when it has none.
    return InferResponse(
        response_id=payload.id if payload.id is not None else generate_uuid(),
        model_name=model.name,
        infer_outputs=outputs,
        use_binary_outputs=payload.use_binary_outputs,
        requested_outputs=payload.request_outputs,
    )


def _output(name, datatype, array):
    out = InferOutput(name=name, shape=list(array.shape), datatype=datatype)
    out.set_data_from_numpy(array, binary_data=False)
    return out


class SimpleModel(kserve.Model):
    def __init__(self):
        super().__init__("kserve_simple")
        self.ready = True

    async def predict(self, payload: InferRequest, headers=None, response_headers=None):
        by_name = {i.name: i for i in payload.inputs}
        if set(by_name) != {"INPUT0", "INPUT1"}:
            raise InvalidInput("kserve_simple expects inputs INPUT0 and INPUT1")
        for i in payload.inputs:
            if i.datatype != "INT32":
                raise InvalidInput(f"input {i.name} must be INT32, got {i.datatype}")
        a = by_name["INPUT0"].as_numpy()
        b = by_name["INPUT1"].as_numpy()
        if a.shape != b.shape:
            raise InvalidInput(f"INPUT0 shape {list(a.shape)} != INPUT1 shape {list(b.shape)}")
        total = (a.astype(np.int64) + b).astype(np.int32)
        diff = (a.astype(np.int64) - b).astype(np.int32)
        return _respond(self, payload, [_output("OUTPUT0", "INT32", total), _output("OUTPUT1", "INT32", diff)])


class IdentityModel(kserve.Model):
    def __init__(self):
        super().__init__("kserve_identity")
        self.ready = True

    async def predict(self, payload: InferRequest, headers=None, response_headers=None):
        outputs = []
        for index, tensor in enumerate(payload.inputs):
            outputs.append(_output(f"OUTPUT{index}", tensor.datatype, tensor.as_numpy()))
        return _respond(self, payload, outputs)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http_port", type=int, required=True)
    parser.add_argument("--grpc_port", type=int)
    args, _ = parser.parse_known_args(argv)
    server = kserve.ModelServer(
        http_port=args.http_port,
        grpc_port=args.grpc_port or 0,
        enable_grpc=args.grpc_port is not None,
        workers=1,
        grace_period=5,
    )
    server.start([SimpleModel(), IdentityModel()])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
