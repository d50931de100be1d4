"""tensorgate test model "rowsum": each row's sum and the input back."""
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            score = x.astype(np.float64).sum(axis=1).astype(np.float32)
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("score", score),
                        pb_utils.Tensor("OUTPUT0", x.astype(np.float32)),
                    ]
                )
            )
        return responses
