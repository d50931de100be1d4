//! The SageMaker Runtime API path (`/endpoints/{e}/invocations`) on a
//! route with keys: API keys, and SigV4 signatures made here with the
//! library's own signing steps (boto3's real requests: the Python suite
//! and the fixtures of `src/auth/sigv4/tests.rs`). Errors in AWS's shape.

use std::net::SocketAddr;

use http::{HeaderMap, HeaderName, HeaderValue};
use tensorgate::auth::amzdate;
use tensorgate::auth::keys::digest;
use tensorgate::auth::sigv4::{
    Signed, canonical_request, hex, signature, signing_key, string_to_sign,
};

use super::*;

const PATH: &str = "/endpoints/rows-ep/invocations";

/// Headers of a request signed as botocore signs: `accept`,
/// `content-type`, `host` and `x-amz-date`, with `body`'s hash, `age`
/// seconds ago.
fn sign(
    addr: SocketAddr,
    path: &str,
    name: &str,
    secret: &str,
    body: &[u8],
    age: i64,
) -> Vec<(String, String)> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let stamp = amzdate::format(now - age);
    let date = &stamp[..8];
    let mut headers: Vec<(String, String)> = vec![
        ("accept".into(), "application/json".into()),
        ("content-type".into(), "text/csv".into()),
        ("host".into(), addr.to_string()),
        ("x-amz-date".into(), stamp.clone()),
    ];
    let mut map = HeaderMap::new();
    for (k, v) in &headers {
        map.insert(
            HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    let signed: Vec<String> = headers.iter().map(|(k, _)| k.clone()).collect();
    let payload = digest(body);
    let req = Signed {
        method: "POST",
        path,
        query: "",
        headers: &map,
        authority: None,
        payload: &payload,
    };
    let scope = format!("{date}/us-east-1/sagemaker/aws4_request");
    let to_sign = string_to_sign(&stamp, &scope, &canonical_request(&req, &signed).unwrap());
    let key = signing_key(secret.as_bytes(), date, "us-east-1", "sagemaker").unwrap();
    let sig = hex(&signature(&key, &to_sign).unwrap());
    headers.push((
        "authorization".into(),
        format!(
            "AWS4-HMAC-SHA256 Credential={name}/{scope}, SignedHeaders={}, Signature={sig}",
            signed.join(";")
        ),
    ));
    headers
}

async fn post(gw: &Running, path: &str, headers: &[(String, String)], body: &str) -> Got {
    let h: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    send(gw.data_addr, "POST", path, &h, body.to_owned()).await
}

/// An AWS-shaped error: status, `x-amzn-ErrorType`'s code, `message`.
fn aws_error(got: &Got) -> (u16, String, String) {
    let kind = got.header("x-amzn-errortype").unwrap_or_default();
    let code = kind.split(':').next().unwrap_or_default().to_owned();
    (
        got.status.as_u16(),
        code,
        got.json()["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

fn csv_headers() -> Vec<(String, String)> {
    vec![
        ("content-type".into(), "text/csv".into()),
        ("accept".into(), "application/json".into()),
    ]
}

fn with(mut headers: Vec<(String, String)>, k: &str, v: &str) -> Vec<(String, String)> {
    headers.push((k.into(), v.into()));
    headers
}

#[tokio::test]
async fn runtime_path_keys_in_the_aws_shape() {
    let (_backend, gw, _) = keyed_gateway("").await;
    let got = post(&gw, PATH, &csv_headers(), "1,2\n").await;
    assert_eq!(
        aws_error(&got),
        (
            403,
            "MissingAuthenticationTokenException".into(),
            "route \"rows\": no API key: send Authorization: Bearer KEY or x-api-key: KEY".into()
        )
    );
    let got = post(&gw, PATH, &with(csv_headers(), "x-api-key", ALICE), "1,2\n").await;
    assert_eq!(aws_error(&got).0, 403);
    assert_eq!(aws_error(&got).1, "UnrecognizedClientException");
    let got = post(&gw, PATH, &with(csv_headers(), "x-api-key", CAROL), "1,2\n").await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    let bearer = format!("Bearer {CAROL}");
    let got = post(
        &gw,
        PATH,
        &with(csv_headers(), "authorization", &bearer),
        "3,4\n",
    )
    .await;
    assert_eq!(got.json()["predictions"][0]["score"], 7.0);
    gw.shutdown().await;
}

#[tokio::test]
async fn sigv4_every_outcome() {
    let (_backend, gw, _) = keyed_gateway("").await;
    let addr = gw.data_addr;
    let good = sign(addr, PATH, "carol", CAROL, b"1,2\n", 0);
    let got = post(&gw, PATH, &good, "1,2\n").await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    assert_eq!(got.json()["predictions"][0]["score"], 3.0);
    // Ten minutes old is fine.
    let got = post(
        &gw,
        PATH,
        &sign(addr, PATH, "carol", CAROL, b"1,2\n", 600),
        "1,2\n",
    )
    .await;
    assert_eq!(got.status, 200);

    let signature_mismatch = |got: &Got| {
        let (status, code, message) = aws_error(got);
        assert_eq!(
            (status, code.as_str()),
            (403, "InvalidSignatureException"),
            "{message}"
        );
        message
    };
    let wrong_secret = sign(addr, PATH, "carol", "not-carols-secret-xyz", b"1,2\n", 0);
    assert_eq!(
        signature_mismatch(&post(&gw, PATH, &wrong_secret, "1,2\n").await),
        "route \"rows\": The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method."
    );
    // The body is signed: another body does not verify.
    signature_mismatch(&post(&gw, PATH, &good, "9,9\n").await);
    let old = sign(addr, PATH, "carol", CAROL, b"1,2\n", 20 * 60);
    let message = signature_mismatch(&post(&gw, PATH, &old, "1,2\n").await);
    assert!(
        message.starts_with("route \"rows\": Signature expired: "),
        "{message}"
    );
    // A replay within the window verifies (as AWS's does): the window is
    // what bounds replays.
    assert_eq!(post(&gw, PATH, &good, "1,2\n").await.status, 200);

    let unknown = sign(addr, PATH, "dave", CAROL, b"1,2\n", 0);
    let (status, code, message) = aws_error(&post(&gw, PATH, &unknown, "1,2\n").await);
    assert_eq!(
        (status, code.as_str()),
        (403, "UnrecognizedClientException")
    );
    assert_eq!(
        message,
        "route \"rows\": the access key id is not the name of one of the route's keys"
    );
    let another_routes_key = sign(addr, PATH, "alice", ALICE, b"1,2\n", 0);
    assert_eq!(
        aws_error(&post(&gw, PATH, &another_routes_key, "1,2\n").await).1,
        "UnrecognizedClientException"
    );
    let mut garbled = good.clone();
    garbled.last_mut().unwrap().1 = "AWS4-HMAC-SHA256 Credential=carol".into();
    let (status, code, _) = aws_error(&post(&gw, PATH, &garbled, "1,2\n").await);
    assert_eq!(
        (status, code.as_str()),
        (400, "IncompleteSignatureException")
    );

    // Elsewhere SigV4 is not taken.
    let container = sign(addr, "/invocations", "carol", CAROL, b"1,2\n", 0);
    let got = post(&gw, "/invocations", &container, "1,2\n").await;
    assert_eq!(got.status, 401);
    assert!(
        got.error()
            .contains("SigV4 signatures are accepted on /endpoints/{endpoint}/invocations only")
    );

    let text = scrape_text(&gw).await;
    assert_series(
        &text,
        &[
            (
                r#"tensorgate_authenticated_requests_total{key="carol",route="rows"}"#,
                3.0,
            ),
            (
                r#"tensorgate_auth_failures_total{reason="signature",route="rows"}"#,
                2.0,
            ),
            (
                r#"tensorgate_auth_failures_total{reason="expired",route="rows"}"#,
                1.0,
            ),
            (
                r#"tensorgate_auth_failures_total{reason="invalid",route="rows"}"#,
                4.0,
            ),
        ],
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn a_signed_body_is_read_whole_within_the_route_limit() {
    let backend = demo::spawn().await.unwrap();
    let keys = keys_file(&format!("carol:{CAROL}\n"));
    let extra = format!(
        "[routes.limits]\nmax_body_bytes = 64\n[routes.auth]\nkeys_file = \"{}\"\n",
        keys.display()
    );
    let gw = gateway(&simple_config(&backend.url(), &extra)).await;
    let path = "/endpoints/rowsum/invocations";
    let body = "1,2\n".repeat(20);
    let headers = sign(gw.data_addr, path, "carol", CAROL, body.as_bytes(), 0);
    let (status, code, message) = aws_error(&post(&gw, path, &headers, &body).await);
    assert_eq!((status, code.as_str()), (413, "ValidationError"));
    assert_eq!(
        message,
        "route \"r\": request body is larger than the limit of 64 bytes"
    );
    let body = "1,2\n".repeat(16);
    let headers = sign(gw.data_addr, path, "carol", CAROL, body.as_bytes(), 0);
    let got = post(&gw, path, &headers, &body).await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    assert_eq!(got.json()["predictions"].as_array().unwrap().len(), 16);
    gw.shutdown().await;
}

#[tokio::test]
async fn sigv4_off_keeps_only_digests_and_refuses_signatures() {
    let backend = demo::spawn().await.unwrap();
    let keys = keys_file(&format!("carol:{CAROL}\n"));
    let extra = format!(
        "[routes.auth]\nkeys_file = \"{}\"\nsigv4 = false\n",
        keys.display()
    );
    let gw = gateway(&simple_config(&backend.url(), &extra)).await;
    let path = "/endpoints/rowsum/invocations";
    let headers = sign(gw.data_addr, path, "carol", CAROL, b"1,2\n", 0);
    let (status, code, message) = aws_error(&post(&gw, path, &headers, "1,2\n").await);
    assert_eq!((status, code.as_str()), (403, "AccessDeniedException"));
    assert!(message.contains("sigv4 = false"), "{message}");
    let got = post(&gw, path, &with(csv_headers(), "x-api-key", CAROL), "1,2\n").await;
    assert_eq!(got.status, 200);
    gw.shutdown().await;
}
