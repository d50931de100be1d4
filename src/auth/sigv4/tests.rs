//! AWS's published SigV4 test-suite vectors (credentials `AKIDEXAMPLE` /
//! `wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY`, 2015-08-30T12:36:00Z;
//! botocore 1.44.5 computes the same signatures), and requests captured
//! from boto3's `invoke_endpoint` (tests/fixtures/sagemaker/sigv4, written by
//! scripts/sagemaker/gen_sigv4_fixture.py).

use http::{HeaderMap, HeaderName, HeaderValue};

use super::*;

const SECRET: &[u8] = b"wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
/// 2015-08-30T12:36:00Z.
const SUITE_NOW: i64 = 1_440_938_160;

struct Case<'a> {
    method: &'a str,
    path: &'a str,
    query: &'a str,
    headers: Vec<(String, String)>,
    body: &'a [u8],
}

impl Case<'_> {
    fn header_map(&self) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in &self.headers {
            map.append(
                HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    /// Verifies the case's own `Authorization` with `secret` at `now`.
    fn verify(&self, secret: &[u8], now: i64) -> Result<(), SigV4Error> {
        let headers = self.header_map();
        let auth = Authorization::parse(headers["authorization"].to_str().unwrap())?;
        let payload = digest(self.body);
        let signed = Signed {
            method: self.method,
            path: self.path,
            query: self.query,
            headers: &headers,
            authority: None,
            payload: &payload,
        };
        verify(&auth, &signed, secret, now)
    }
}

fn suite(
    method: &'static str,
    path: &'static str,
    query: &'static str,
    extra: &[(&str, &str)],
    signed: &str,
    signature: &str,
) -> Case<'static> {
    let mut headers = vec![
        ("Host".to_owned(), "example.amazonaws.com".to_owned()),
        ("X-Amz-Date".to_owned(), "20150830T123600Z".to_owned()),
    ];
    headers.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    headers.push((
        "Authorization".to_owned(),
        format!(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders={signed}, Signature={signature}"
        ),
    ));
    Case {
        method,
        path,
        query,
        headers,
        body: b"",
    }
}

#[test]
fn aws_test_suite_vectors() {
    let cases = [
        // get-vanilla
        suite(
            "GET",
            "/",
            "",
            &[],
            "host;x-amz-date",
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        ),
        // post-vanilla
        suite(
            "POST",
            "/",
            "",
            &[],
            "host;x-amz-date",
            "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
        ),
        // get-header-key-duplicate: repeated header values joined by ','
        suite(
            "GET",
            "/",
            "",
            &[
                ("My-Header1", "value2"),
                ("My-Header1", "value2"),
                ("My-Header1", "value1"),
            ],
            "host;my-header1;x-amz-date",
            "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea",
        ),
    ];
    for (i, case) in cases.iter().enumerate() {
        assert_eq!(case.verify(SECRET, SUITE_NOW), Ok(()), "case {i}");
        assert_eq!(
            case.verify(b"wrong", SUITE_NOW),
            Err(SigV4Error::Mismatch),
            "case {i}"
        );
    }
}

#[test]
fn aws_documentation_example_with_a_query() {
    // The IAM ListUsers example of AWS's SigV4 documentation.
    let mut case = suite(
        "GET",
        "/",
        "Action=ListUsers&Version=2010-05-08",
        &[(
            "Content-Type",
            "application/x-www-form-urlencoded; charset=utf-8",
        )],
        "content-type;host;x-amz-date",
        "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
    );
    case.headers[0].1 = "iam.amazonaws.com".to_owned();
    let auth = case.headers.last_mut().unwrap();
    auth.1 = auth.1.replace("/service/", "/iam/");
    assert_eq!(case.verify(SECRET, SUITE_NOW), Ok(()));
    // The query is signed: another order of the same pairs verifies, another
    // value does not.
    case.query = "Version=2010-05-08&Action=ListUsers";
    assert_eq!(case.verify(SECRET, SUITE_NOW), Ok(()));
    case.query = "Action=ListUsers&Version=2010-05-09";
    assert_eq!(case.verify(SECRET, SUITE_NOW), Err(SigV4Error::Mismatch));
}

/// A request captured from boto3.
struct Fixture {
    access_key: String,
    secret: String,
    now: i64,
    method: String,
    path: String,
    query: String,
    headers: Vec<(String, String)>,
    body: String,
}

fn fixture(text: &str) -> Fixture {
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let s = |k: &str| v[k].as_str().unwrap().to_owned();
    Fixture {
        access_key: s("access_key"),
        secret: s("secret"),
        now: v["now"].as_i64().unwrap(),
        method: s("method"),
        path: s("path"),
        query: s("query"),
        headers: v["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h[0].as_str().unwrap().to_owned(),
                    h[1].as_str().unwrap().to_owned(),
                )
            })
            .collect(),
        body: s("body"),
    }
}

impl Fixture {
    fn case(&self) -> Case<'_> {
        Case {
            method: &self.method,
            path: &self.path,
            query: &self.query,
            headers: self.headers.clone(),
            body: self.body.as_bytes(),
        }
    }
}

const FIXTURES: [&str; 3] = [
    include_str!("../../../tests/fixtures/sagemaker/sigv4/csv.json"),
    include_str!("../../../tests/fixtures/sagemaker/sigv4/json_target_model.json"),
    include_str!("../../../tests/fixtures/sagemaker/sigv4/empty_body.json"),
];

#[test]
fn boto3_invoke_endpoint_requests_verify() {
    for text in FIXTURES {
        let f = fixture(text);
        let case = f.case();
        let auth =
            Authorization::parse(case.header_map()["authorization"].to_str().unwrap()).unwrap();
        assert_eq!(auth.access_key, f.access_key);
        assert_eq!(
            (auth.region.as_str(), auth.service.as_str()),
            ("us-east-1", "sagemaker")
        );
        assert_eq!(
            case.verify(f.secret.as_bytes(), f.now),
            Ok(()),
            "{}",
            f.path
        );
        assert_eq!(
            case.verify(b"another-secret-0123", f.now),
            Err(SigV4Error::Mismatch)
        );
        // 15 minutes either way is fine; a second more is not.
        assert_eq!(
            case.verify(f.secret.as_bytes(), f.now + MAX_SKEW_SECS),
            Ok(())
        );
        assert_eq!(
            case.verify(f.secret.as_bytes(), f.now - MAX_SKEW_SECS),
            Ok(())
        );
        let late = case
            .verify(f.secret.as_bytes(), f.now + MAX_SKEW_SECS + 1)
            .unwrap_err();
        assert_eq!(late.failure(), AuthFailure::Expired);
        assert_eq!(
            late.to_string(),
            "Signature expired: 20260115T093000Z is now earlier than 20260115T093001Z (20260115T094501Z - 15 min.)"
        );
        let early = case
            .verify(f.secret.as_bytes(), f.now - MAX_SKEW_SECS - 1)
            .unwrap_err();
        assert_eq!(early.failure(), AuthFailure::Expired);
    }
}

#[test]
fn every_signed_part_is_checked() {
    let f = fixture(FIXTURES[1]);
    let secret = f.secret.as_bytes();
    let tamper = |edit: &dyn Fn(&mut Case<'_>)| {
        let mut case = f.case();
        edit(&mut case);
        case.verify(secret, f.now)
    };
    let set = |name: &'static str, value: &'static str| {
        move |c: &mut Case<'_>| {
            for h in &mut c.headers {
                if h.0.eq_ignore_ascii_case(name) {
                    h.1 = value.to_owned();
                }
            }
        }
    };
    assert_eq!(
        tamper(&|c| c.body = b"{}"),
        Err(SigV4Error::Mismatch),
        "body"
    );
    assert_eq!(
        tamper(&|c| c.method = "PUT"),
        Err(SigV4Error::Mismatch),
        "method"
    );
    assert_eq!(
        tamper(&|c| c.path = "/endpoints/other/invocations"),
        Err(SigV4Error::Mismatch),
        "path"
    );
    assert_eq!(
        tamper(&|c| c.query = "x=1"),
        Err(SigV4Error::Mismatch),
        "query"
    );
    assert_eq!(
        tamper(&set("X-Amzn-SageMaker-Target-Model", "identity")),
        Err(SigV4Error::Mismatch),
        "target model"
    );
    assert_eq!(
        tamper(&set("Host", "127.0.0.1:1")),
        Err(SigV4Error::Mismatch),
        "host"
    );
    // Unsigned headers may change; whitespace inside a value is trimmed.
    assert_eq!(tamper(&set("amz-sdk-request", "attempt=2; max=2")), Ok(()));
    assert_eq!(
        tamper(&set(
            "X-Amzn-SageMaker-Custom-Attributes",
            "  a=1;   b = 2 "
        )),
        Ok(())
    );
    assert_eq!(
        tamper(&|c| c.headers.retain(|h| !h.0.eq_ignore_ascii_case("accept"))),
        Err(SigV4Error::MissingSignedHeader {
            name: "accept".into()
        })
    );
    assert_eq!(
        tamper(&|c| c
            .headers
            .retain(|h| !h.0.eq_ignore_ascii_case("x-amz-date"))),
        Err(SigV4Error::NoDate)
    );
    // The timestamp is signed: moving it breaks the signature.
    assert_eq!(
        tamper(&set("X-Amz-Date", "20260115T093001Z")),
        Err(SigV4Error::Mismatch)
    );
    assert_eq!(
        tamper(&set("X-Amz-Date", "20260116T093000Z"))
            .unwrap_err()
            .failure(),
        AuthFailure::Signature,
        "a date other than the credential's"
    );
}

#[test]
fn the_payload_header_must_be_the_payload() {
    let f = fixture(FIXTURES[0]);
    let with = |value: String| {
        let mut case = f.case();
        case.headers.push(("X-Amz-Content-SHA256".into(), value));
        case.verify(f.secret.as_bytes(), f.now)
    };
    // Unsigned by boto3 here, so the header's presence alone changes
    // nothing when it holds the body's hash.
    assert_eq!(with(hex(&digest(f.body.as_bytes()))), Ok(()));
    assert_eq!(
        with(hex(&digest(f.body.as_bytes())).to_uppercase()),
        Err(SigV4Error::Mismatch)
    );
    assert_eq!(
        with("UNSIGNED-PAYLOAD".into()),
        Err(SigV4Error::UnsignedPayload)
    );
    assert_eq!(
        with(hex(&digest(b"other"))),
        Err(SigV4Error::PayloadMismatch)
    );
}

#[test]
fn http2_requests_sign_the_authority_as_host() {
    let f = fixture(FIXTURES[0]);
    let case = f.case();
    let host = case
        .headers
        .iter()
        .find(|h| h.0 == "Host")
        .unwrap()
        .1
        .clone();
    let mut headers = case.header_map();
    headers.remove("host");
    let auth = Authorization::parse(headers["authorization"].to_str().unwrap()).unwrap();
    let payload = digest(f.body.as_bytes());
    let mut signed = Signed {
        method: &f.method,
        path: &f.path,
        query: "",
        headers: &headers,
        authority: Some(&host),
        payload: &payload,
    };
    assert_eq!(verify(&auth, &signed, f.secret.as_bytes(), f.now), Ok(()));
    signed.authority = None;
    assert_eq!(
        verify(&auth, &signed, f.secret.as_bytes(), f.now),
        Err(SigV4Error::MissingSignedHeader {
            name: "host".into()
        })
    );
}

#[test]
fn malformed_headers() {
    let check = |value: &str, what: &str| {
        let e = Authorization::parse(value).unwrap_err();
        assert_eq!(e.failure(), AuthFailure::Invalid);
        assert!(e.to_string().ends_with(what), "{value:?}: {e}");
    };
    let sig = "a".repeat(64);
    let good = format!(
        "AWS4-HMAC-SHA256 Credential=k/20260115/r/s/aws4_request, SignedHeaders=host;x-amz-date, Signature={sig}"
    );
    assert!(Authorization::parse(&good).is_ok());
    assert!(is_sigv4(good.as_bytes()));
    assert!(!is_sigv4(b"AWS4-HMAC-SHA256"));
    assert!(!is_sigv4(b"Bearer x"));
    check("AWS4-HMAC-SHA256", "not AWS4-HMAC-SHA256");
    check("AWS4-HMAC-SHA512 Credential=", "not AWS4-HMAC-SHA256");
    check(
        &good.replace("Credential=k/", "Credential=/"),
        "ID/DATE/REGION/SERVICE/aws4_request",
    );
    check(
        &good.replace("/aws4_request", "/aws5_request"),
        "ID/DATE/REGION/SERVICE/aws4_request",
    );
    check(
        &good.replace("20260115", "2026011"),
        "ID/DATE/REGION/SERVICE/aws4_request",
    );
    check(
        &good.replace("host;", "Host;"),
        "a list of lowercase header names",
    );
    check(
        &good.replace("host;", ";"),
        "a list of lowercase header names",
    );
    check(&good.replace(&sig, &"g".repeat(64)), "64 hex digits");
    check(&good.replace(&sig, &"a".repeat(62)), "64 hex digits");
    check(&format!("{good}, Signature={sig}"), "a part given twice");
    check(&format!("{good}, Extra=1"), "an unknown part");
    check(
        &good.replace(", SignedHeaders=host;x-amz-date", ""),
        "no SignedHeaders",
    );
    check(
        &good.replace("Credential=", "Credential"),
        "a part without '='",
    );
}

#[test]
fn paths_and_queries_are_canonicalized_as_botocore_does() {
    let path = |p: &str| {
        let mut out = String::new();
        encode_path(&normalize_path(p), &mut out);
        out
    };
    assert_eq!(path(""), "/");
    assert_eq!(path("/"), "/");
    assert_eq!(
        path("/endpoints/my-ep/invocations"),
        "/endpoints/my-ep/invocations"
    );
    assert_eq!(path("/a//b/./c/../d/"), "/a/b/d/");
    assert_eq!(path("/a b/%41~"), "/a%20b/%2541~");
    assert_eq!(canonical_query(""), "");
    assert_eq!(canonical_query("b=2&a=3&a=1&c"), "a=1&a=3&b=2&c=");
}
