#!/usr/bin/env python3
"""Getting started: an unchanged SageMaker client aimed at the gateway.

    bash scripts/sagemaker/client.sh setup             # a venv with boto3 and the SageMaker SDK
    cargo run --release                                # the gateway and its demo backend
    bash scripts/sagemaker/client.sh python examples/boto3_client.py
    bash scripts/sagemaker/client.sh python examples/boto3_client.py \\
        --url http://127.0.0.1:8000 --key-id alice --secret KEY   # a route with API keys (SigV4)

Two ways a SageMaker user calls an endpoint, both with only the endpoint URL
changed: boto3's sagemaker-runtime `invoke_endpoint`, and the SageMaker SDK's
`Predictor`, which needs a `sagemaker.Session` built on that boto3 client
(`sagemaker_runtime_client=`). The demo's `rowsum` model sums each CSV record;
exits 1 unless both answers are the row sums. With a route's API keys, the
access key id is the key's name and the secret access key the key (boto3
signs with SigV4, the gateway verifies it).
"""

import argparse
import json
import os
import sys

os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")

import boto3  # noqa: E402
import sagemaker  # noqa: E402
from sagemaker.deserializers import JSONDeserializer  # noqa: E402
from sagemaker.predictor import Predictor  # noqa: E402
from sagemaker.serializers import CSVSerializer  # noqa: E402

ROWS = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]]
SUMS = [6.0, 15.5]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000", help="the gateway's data port")
    ap.add_argument("--endpoint", default="rowsum", help="endpoint name: a model, or mapped by [routes.sagemaker.endpoints]")
    ap.add_argument("--key-id", default="x", help="a key's name on a route with [routes.auth] (any value otherwise)")
    ap.add_argument("--secret", default="y", help="that key (any value on a route without keys)")
    args = ap.parse_args()
    credentials = dict(region_name="us-east-1", aws_access_key_id=args.key_id, aws_secret_access_key=args.secret)

    # boto3: POST /endpoints/{endpoint}/invocations, signed with SigV4.
    runtime = boto3.client("sagemaker-runtime", endpoint_url=args.url, **credentials)
    resp = runtime.invoke_endpoint(
        EndpointName=args.endpoint,
        Body="\n".join(",".join(str(v) for v in row) for row in ROWS) + "\n",
        ContentType="text/csv",
        Accept="application/json",
    )
    predictions = json.load(resp["Body"])["predictions"]
    print(f"invoke_endpoint: {predictions}")
    ok = [p["score"] for p in predictions] == SUMS

    # The SageMaker SDK: a Predictor on a Session that uses that same client.
    session = sagemaker.Session(boto_session=boto3.Session(**credentials), sagemaker_runtime_client=runtime)
    predictor = Predictor(args.endpoint, sagemaker_session=session, serializer=CSVSerializer(), deserializer=JSONDeserializer())
    predictions = predictor.predict(ROWS)["predictions"]
    print(f"Predictor.predict: {predictions}")
    ok &= [p["score"] for p in predictions] == SUMS
    if not ok:
        print(f"expected the row sums {SUMS}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
