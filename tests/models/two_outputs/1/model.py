"""tensorgate test model "two_outputs": OUT_FP32 = INPUT0 * 2, OUT_INT64 = rint(INPUT0)."""
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            doubled = (x * np.float32(2)).astype(np.float32)
            # Round half to even; NaN/inf are mapped to 0 so the cast is defined.
            rounded = np.rint(np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0))
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("OUT_FP32", doubled),
                        pb_utils.Tensor("OUT_INT64", rounded.astype(np.int64)),
                    ]
                )
            )
        return responses
