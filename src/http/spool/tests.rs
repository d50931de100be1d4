use std::time::Duration;

use http_body::Body as _;
use http_body_util::BodyExt;

use super::*;

fn limits(memory: u64, disk: u64, budget: &Arc<DiskBudget>) -> SpoolLimits {
    SpoolLimits {
        memory,
        disk,
        budget: budget.clone(),
    }
}

/// `n` bytes counting up from `seed`, so order and content are checked.
fn piece(seed: u8, n: usize) -> Bytes {
    (0..n).map(|i| seed.wrapping_add(i as u8)).collect()
}

async fn read_all(body: SpoolBody) -> Result<Vec<u8>, BoxError> {
    Ok(body.collect().await?.to_bytes().to_vec())
}

#[tokio::test]
async fn within_the_memory_bound_nothing_touches_the_disk() {
    let budget = DiskBudget::new(1 << 20);
    let (mut w, body) = spool(limits(100, 1000, &budget));
    w.push(piece(0, 40)).await.unwrap();
    w.push(piece(40, 60)).await.unwrap();
    assert_eq!(w.held(), 100);
    assert_eq!(budget.used(), 0);
    w.finish();
    assert_eq!(body.size_hint().exact(), Some(100));
    assert_eq!(read_all(body).await.unwrap(), piece(0, 100).to_vec());
}

#[tokio::test]
async fn past_the_memory_bound_bytes_go_to_disk_and_come_back_in_order() {
    let budget = DiskBudget::new(1 << 20);
    let (mut w, body) = spool(limits(1000, 600_000, &budget));
    let mut want = Vec::new();
    for i in 0..50u8 {
        let p = piece(i, 10_000);
        want.extend_from_slice(&p);
        w.push(p).await.unwrap();
    }
    // The first piece fits in memory; the rest was spilled.
    assert_eq!(budget.used(), 490_000);
    assert_eq!(w.held(), 500_000);
    w.finish();
    assert_eq!(body.size_hint().exact(), Some(500_000));
    assert_eq!(read_all(body).await.unwrap(), want);
    // Both ends are gone: the disk is given back.
    assert_eq!(budget.used(), 0);
}

#[tokio::test]
async fn past_the_disk_bound_the_reply_is_refused() {
    let budget = DiskBudget::new(1 << 20);
    let (mut w, _body) = spool(limits(100, 250, &budget));
    w.push(piece(0, 100)).await.unwrap();
    w.push(piece(0, 200)).await.unwrap();
    let e = w.push(piece(0, 100)).await.unwrap_err();
    assert!(matches!(e, SpoolError::Full { limit: 350 }), "{e:?}");
    assert_eq!(e.class(), Class::TooLarge);
}

#[tokio::test]
async fn no_disk_means_refusing_past_memory() {
    let budget = DiskBudget::new(1 << 20);
    let (mut w, _body) = spool(limits(100, 0, &budget));
    w.push(piece(0, 100)).await.unwrap();
    let e = w.push(piece(0, 1)).await.unwrap_err();
    assert!(matches!(e, SpoolError::Full { limit: 100 }), "{e:?}");
    assert_eq!(budget.used(), 0);
}

#[tokio::test]
async fn the_shared_budget_bounds_every_reply_together() {
    let budget = DiskBudget::new(300);
    let (mut a, _a) = spool(limits(10, 1000, &budget));
    let (mut b, _b) = spool(limits(10, 1000, &budget));
    a.push(piece(0, 10)).await.unwrap();
    a.push(piece(0, 200)).await.unwrap();
    b.push(piece(0, 10)).await.unwrap();
    b.push(piece(0, 100)).await.unwrap();
    assert_eq!(budget.used(), 300);
    let e = b.push(piece(0, 1)).await.unwrap_err();
    assert!(matches!(e, SpoolError::DiskBusy), "{e:?}");
    assert_eq!(e.class().status(), http::StatusCode::SERVICE_UNAVAILABLE);
    drop((a, _a));
    assert_eq!(budget.used(), 100);
}

#[tokio::test]
async fn a_drained_file_is_written_from_its_start_again() {
    let budget = DiskBudget::new(1 << 20);
    let (mut w, mut body) = spool(limits(10, 1000, &budget));
    // Ten times the disk bound goes through while the client keeps up.
    for round in 0..100u8 {
        w.push(piece(round, 10)).await.unwrap();
        w.push(piece(round, 100)).await.unwrap();
        let mut got = Vec::new();
        while got.len() < 110 {
            let frame = body.frame().await.unwrap().unwrap();
            got.extend_from_slice(&frame.into_data().unwrap());
        }
        let mut want = piece(round, 10).to_vec();
        want.extend_from_slice(&piece(round, 100));
        assert_eq!(got, want, "round {round}");
    }
    assert_eq!(budget.used(), 100);
}

#[tokio::test]
async fn a_writer_dropped_unfinished_cuts_the_reply() {
    let budget = DiskBudget::new(1 << 20);
    let (mut w, mut body) = spool(limits(100, 0, &budget));
    w.push(piece(0, 10)).await.unwrap();
    drop(w);
    let first = body.frame().await.unwrap().unwrap();
    assert_eq!(first.into_data().unwrap(), piece(0, 10));
    assert!(body.frame().await.unwrap().is_err(), "the cut shows");
    assert!(body.frame().await.is_none());
}

#[tokio::test]
async fn a_failed_reply_ends_in_its_error_after_what_was_held() {
    let budget = DiskBudget::new(1 << 20);
    let (mut w, body) = spool(limits(5, 100, &budget));
    w.push(piece(0, 5)).await.unwrap();
    w.push(piece(5, 5)).await.unwrap();
    w.fail("batch 3 failed".into());
    let e = read_all(body).await.unwrap_err();
    assert_eq!(e.to_string(), "batch 3 failed");
}

#[tokio::test(start_paused = true)]
async fn room_waits_for_the_client_and_fails_once_it_is_gone() {
    let budget = DiskBudget::new(1 << 20);
    let (mut w, mut body) = spool(limits(10, 1000, &budget));
    w.push(piece(0, 10)).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_secs(1), w.room()).await;
    assert!(waited.is_err(), "room while 10 of 10 bytes are held");
    body.frame().await.unwrap().unwrap();
    tokio::time::timeout(Duration::from_secs(1), w.room())
        .await
        .expect("room once the client took them")
        .unwrap();
    w.push(piece(0, 10)).await.unwrap();
    drop(body);
    assert!(matches!(w.room().await, Err(SpoolError::Gone)));
    assert!(matches!(w.push(piece(0, 1)).await, Err(SpoolError::Gone)));
}
