"""tensorgate test model "identity_<dtype>": OUTPUT0 = INPUT0, byte for byte.

The same file serves every identity_* model; the datatype comes from
config.pbtxt. The Python backend hands most datatypes over as numpy arrays
(BYTES as an object array of `bytes`, so non-UTF-8 content survives), but it
refuses `as_numpy()` for BF16 ("Tensor dtype is BF16 and cannot be converted
to NumPy. Use to_dlpack() and from_dlpack() instead."): BF16 is echoed through
DLPack, which keeps the raw 16-bit values unchanged.
"""
import json

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.dtype = config["input"][0]["data_type"]

    def execute(self, requests):
        responses = []
        for request in requests:
            tensor = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            if self.dtype == "TYPE_BF16":
                out = pb_utils.Tensor.from_dlpack("OUTPUT0", tensor.to_dlpack())
            else:
                out = pb_utils.Tensor("OUTPUT0", tensor.as_numpy())
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
