"""tensorgate test model "simple": sum and difference of two INT32 tensors."""
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            in0 = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            in1 = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            # INT32 wrap-around like the C++ example (no overflow error).
            out0 = (in0.astype(np.int64) + in1).astype(np.int32)
            out1 = (in0.astype(np.int64) - in1).astype(np.int32)
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("OUTPUT0", out0),
                        pb_utils.Tensor("OUTPUT1", out1),
                    ]
                )
            )
        return responses
