"""tensorgate test model "slow": OUTPUT0 = INPUT0 after 10 ms.

One instance serving one request at a time, so a client sending faster
than 100 requests a second builds a queue Triton reports in
nv_inference_pending_request_count and nv_inference_queue_duration_us.
"""
import time

import triton_python_backend_utils as pb_utils

SECONDS = 0.010


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            time.sleep(SECONDS)
            tensor = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            out = pb_utils.Tensor("OUTPUT0", tensor.as_numpy())
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
