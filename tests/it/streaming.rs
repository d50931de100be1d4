//! Bodies stream end to end: server-sent events pass through one by one, and
//! an all-JSON reply translated from a binary backend reply reaches the
//! client before the backend has sent its last byte.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::common::*;

type Slot = Arc<Mutex<Option<mpsc::Sender<mpsc::Sender<Bytes>>>>>;

/// A backend whose every reply is a channel the test feeds.
async fn channel_backend(
    headers: &'static [(&'static str, &'static str)],
) -> (TestBackend, mpsc::Receiver<mpsc::Sender<Bytes>>) {
    let (give, take) = mpsc::channel(4);
    let slot: Slot = Arc::new(Mutex::new(Some(give)));
    let backend = TestBackend::start(move |_| {
        let slot = slot.clone();
        async move {
            let (tx, resp) = channel_reply(200, headers);
            let give = slot.lock().unwrap().clone().unwrap();
            give.send(tx).await.unwrap();
            resp
        }
    })
    .await;
    (backend, take)
}

/// A backend replying with a binary (IHCL) body the test feeds.
async fn ihcl_channel_backend(ihcl: usize) -> (TestBackend, mpsc::Receiver<mpsc::Sender<Bytes>>) {
    let (give, take) = mpsc::channel::<mpsc::Sender<Bytes>>(1);
    let n: &'static str = Box::leak(ihcl.to_string().into_boxed_str());
    let backend = TestBackend::start(move |_| {
        let give = give.clone();
        async move {
            let (tx, resp) = channel_reply(
                200,
                &[
                    ("content-type", "application/octet-stream"),
                    ("inference-header-content-length", n),
                ],
            );
            give.send(tx).await.unwrap();
            resp
        }
    })
    .await;
    (backend, take)
}

#[tokio::test]
async fn server_sent_events_arrive_one_by_one() {
    let (backend, mut feeds) =
        channel_backend(&[("content-type", "text/event-stream; charset=utf-8")]).await;
    let gw = gateway(&simple_config(&backend.url(), "")).await;
    let resp = open(
        gw.data_addr,
        "POST",
        "/v2/models/m/generate_stream",
        &[("content-type", "application/json")],
        r#"{"text_input":"hi"}"#,
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "text/event-stream; charset=utf-8"
    );
    let feed = feeds.recv().await.unwrap();
    let mut body = resp.into_body();
    feed.send(Bytes::from_static(b"data: {\"text_output\":\"hi0\"}\n\n"))
        .await
        .unwrap();
    // The first event arrives while the backend still holds the stream open.
    assert_eq!(
        next_data(&mut body).await.unwrap(),
        &b"data: {\"text_output\":\"hi0\"}\n\n"[..]
    );
    feed.send(Bytes::from_static(b"data: {\"text_output\":\"hi1\"}\n\n"))
        .await
        .unwrap();
    assert_eq!(
        next_data(&mut body).await.unwrap(),
        &b"data: {\"text_output\":\"hi1\"}\n\n"[..]
    );
    drop(feed);
    assert_eq!(next_data(&mut body).await, None);
    assert_eq!(backend.requests()[0].body, &br#"{"text_input":"hi"}"#[..]);
}

#[tokio::test]
async fn large_json_reply_streams_before_the_backend_finishes() {
    const N: usize = 1 << 20;
    let header = format!(
        r#"{{"model_name":"m","model_version":"1","outputs":[{{"name":"OUT","datatype":"FP32","shape":[{N}],"parameters":{{"binary_data_size":{}}}}}]}}"#,
        N * 4
    );
    let values: Vec<f32> = (0..N).map(|i| i as f32 * 0.5).collect();
    let data = le_f32(&values);
    let (backend, mut take) = ihcl_channel_backend(header.len()).await;
    let gw = gateway(&simple_config(&backend.url(), "")).await;
    let client = tokio::spawn(open(
        gw.data_addr,
        "POST",
        "/v2/models/m/infer",
        &[],
        r#"{"inputs":[{"name":"X","shape":[1],"datatype":"INT32","data":[1]}]}"#,
    ));
    let feed = take.recv().await.unwrap();
    // The header and the first half of the data, then the backend waits.
    let mut first = header.clone().into_bytes();
    first.extend_from_slice(&data[..N * 2]);
    feed.send(Bytes::from(first)).await.unwrap();
    let resp = client.await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json");
    assert!(
        resp.headers().get("content-length").is_none(),
        "a streamed reply has no length"
    );
    let mut body = resp.into_body();
    let mut text = Vec::new();
    while text.len() < 100_000 {
        text.extend_from_slice(&next_data(&mut body).await.unwrap());
    }
    let prefix = r#"{"model_name":"m","model_version":"1","outputs":[{"name":"OUT","datatype":"FP32","shape":[1048576],"data":[0.0,0.5,1.0,1.5,"#;
    assert_eq!(
        &text[..prefix.len()],
        prefix.as_bytes(),
        "{}",
        String::from_utf8_lossy(&text[..200])
    );
    // Only now does the backend send the rest, cut inside an element so a
    // large piece starts and ends with a partial one (the gateway writes
    // large pieces in two halves on two threads).
    let cut = N * 2 + 4 * 70_001 + 3;
    for piece in [&data[N * 2..cut], &data[cut..]] {
        feed.send(Bytes::copy_from_slice(piece)).await.unwrap();
    }
    drop(feed);
    while let Some(more) = next_data(&mut body).await {
        text.extend_from_slice(&more);
    }
    let json: serde_json::Value = serde_json::from_slice(&text).unwrap();
    let out = json["outputs"][0]["data"].as_array().unwrap();
    assert_eq!(out.len(), N);
    for (i, v) in out.iter().enumerate() {
        assert_eq!(v.as_f64().unwrap() as f32, values[i], "element {i}");
    }
    // The backend was asked for binary outputs.
    let seen = &backend.requests()[0];
    let n: usize = seen.headers["inference-header-content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let sent: serde_json::Value = serde_json::from_slice(&seen.body[..n]).unwrap();
    assert_eq!(sent["parameters"]["binary_data_output"], true);
}

#[tokio::test]
async fn backend_cut_off_mid_stream_aborts_the_reply() {
    // 16K INT32 values: over the size written whole, so the reply streams.
    const N: usize = 16 << 10;
    let header = format!(
        r#"{{"outputs":[{{"name":"OUT","datatype":"INT32","shape":[{N}],"parameters":{{"binary_data_size":{}}}}}]}}"#,
        N * 4
    );
    let (backend, mut take) = ihcl_channel_backend(header.len()).await;
    let gw = gateway(&simple_config(&backend.url(), "")).await;
    let client = tokio::spawn(open(
        gw.data_addr,
        "POST",
        "/v2/models/m/infer",
        &[],
        r#"{"inputs":[{"name":"X","shape":[1],"datatype":"INT32","data":[1]}]}"#,
    ));
    let feed = take.recv().await.unwrap();
    let mut first = header.into_bytes();
    first.extend_from_slice(&le_i32(&[1, 2]));
    feed.send(Bytes::from(first)).await.unwrap();
    let resp = client.await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().get("content-length").is_none());
    let mut body = resp.into_body();
    let mut text = Vec::new();
    while !text.ends_with(b"[1,2") {
        text.extend_from_slice(&next_data(&mut body).await.expect("the first values"));
    }
    drop(feed); // 8 of 64K bytes, then the end.
    // The reply was already streaming: the only honest signal left is to
    // abort it, so the client sees a body error rather than a short JSON.
    use http_body_util::BodyExt;
    loop {
        match body.frame().await {
            Some(Ok(_)) => continue,
            Some(Err(_)) => break,
            None => panic!(
                "a cut-off reply must not complete: {}",
                String::from_utf8_lossy(&text)
            ),
        }
    }
}

/// A small reply is written whole once its bytes are in, with a length: the
/// client reads a sized body, and a backend that fails before the end gets
/// the client a 502 naming the output instead of a cut-off stream.
#[tokio::test]
async fn a_small_reply_is_written_whole_with_a_length() {
    let header = r#"{"outputs":[{"name":"OUT","datatype":"INT32","shape":[4],"parameters":{"binary_data_size":16}}]}"#;
    let (backend, mut take) = ihcl_channel_backend(header.len()).await;
    let gw = gateway(&simple_config(&backend.url(), "")).await;
    // One request; the backend answers the header, then `pieces`, then ends.
    let mut exchange = async |pieces: &[&[i32]]| {
        let request = r#"{"inputs":[{"name":"X","shape":[1],"datatype":"INT32","data":[1]}]}"#;
        let client = tokio::spawn(send(
            gw.data_addr,
            "POST",
            "/v2/models/m/infer",
            &[],
            request,
        ));
        let feed = take.recv().await.unwrap();
        feed.send(Bytes::from(header)).await.unwrap();
        for piece in pieces {
            feed.send(Bytes::from(le_i32(piece))).await.unwrap();
        }
        drop(feed);
        client.await.unwrap()
    };

    let got = exchange(&[&[1, 2], &[-3, 4]]).await;
    assert_eq!(got.status, 200);
    let text = r#"{"outputs":[{"name":"OUT","datatype":"INT32","shape":[4],"data":[1,2,-3,4]}]}"#;
    assert_eq!(std::str::from_utf8(&got.body).unwrap(), text);
    assert_eq!(
        got.headers["content-length"],
        text.len().to_string().as_str()
    );
    assert!(got.headers.get("transfer-encoding").is_none());

    // Cut off after 8 of 16 bytes: nothing was sent yet, so a clear 502.
    let got = exchange(&[&[1, 2]]).await;
    assert_eq!(got.status, 502);
    assert_eq!(
        got.error(),
        r#"backend "b" sent an invalid response: output "OUT" is missing 8 bytes"#
    );
}
