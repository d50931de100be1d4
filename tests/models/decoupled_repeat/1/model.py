"""tensorgate test model "decoupled_repeat".

Decoupled model: for each request sends `count` (default 3) responses, each
with text_output = text_input followed by the response index (e.g. b"hi0",
b"hi1", b"hi2") and index = that index, sleeping `delay_ms` (default 200)
between two responses so clients can see the events arrive one by one.
The last response carries the FINAL flag; count <= 0 sends only the FINAL flag.
"""
import time

import numpy as np
import triton_python_backend_utils as pb_utils

DEFAULT_COUNT = 3
DEFAULT_DELAY_MS = 200
MAX_COUNT = 1000


def _scalar(request, name, default):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        return default
    values = tensor.as_numpy().reshape(-1)
    return int(values[0]) if values.size else default


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            try:
                text = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy()
                text = text.reshape(-1)[0]
                if isinstance(text, str):
                    text = text.encode("utf-8")
                count = min(_scalar(request, "count", DEFAULT_COUNT), MAX_COUNT)
                delay = max(_scalar(request, "delay_ms", DEFAULT_DELAY_MS), 0) / 1000.0
            except Exception as exc:  # report bad input as an error response
                sender.send(
                    pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc))),
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
                )
                continue
            if count <= 0:
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                continue
            for i in range(count):
                if i > 0 and delay > 0:
                    time.sleep(delay)
                out = np.array([text + str(i).encode("ascii")], dtype=np.object_)
                response = pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("text_output", out),
                        pb_utils.Tensor("index", np.array([i], dtype=np.int32)),
                    ]
                )
                flags = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if i == count - 1 else 0
                sender.send(response, flags=flags)
        return None
