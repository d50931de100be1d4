//! Request bodies held before their signature is verified
//! (`server.max_unverified_body_bytes`): a SigV4 signature covers the
//! body's hash, so the body is read whole before the request is known to
//! come from a key's holder — and anyone who knows a key's *name* (names
//! appear in logs and metrics) can send one with any signature. Such a
//! body takes no request slot until it is verified; what all of them hold
//! at once is bounded here, in bytes, so a flood of forged signatures
//! costs a bounded amount of memory and no slot (32 forged requests of
//! 60 MB held 1.92 GB and a slot each). A request that does not fit is
//! refused at once (no queue: a large waiter would hold back small ones).

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::admission::AdmissionError;

/// Accounting unit: KiB, so that the permits of a `u32` cover any budget.
const UNIT: u64 = 1024;

/// The bytes unverified bodies may hold, all requests together.
#[derive(Debug)]
pub struct Unverified {
    units: Arc<Semaphore>,
    limit: u64,
}

/// What one unverified body holds of the budget, until dropped.
#[derive(Debug)]
pub struct Held(#[allow(dead_code)] OwnedSemaphorePermit);

impl Unverified {
    pub fn new(limit: u64) -> Unverified {
        let units = (limit / UNIT).clamp(1, Semaphore::MAX_PERMITS as u64);
        Unverified {
            units: Arc::new(Semaphore::new(units as usize)),
            limit,
        }
    }

    /// Holds `bytes` of the budget for one body, if they are free now.
    pub fn hold(&self, bytes: u64) -> Result<Held, AdmissionError> {
        let units = bytes.div_ceil(UNIT).max(1);
        let full = || AdmissionError::UnverifiedFull { limit: self.limit };
        let units = u32::try_from(units).map_err(|_| full())?;
        self.units
            .clone()
            .try_acquire_many_owned(units)
            .map(Held)
            .map_err(|_| full())
    }

    /// Bytes free now (to the unit).
    pub fn available(&self) -> u64 {
        self.units.available_permits() as u64 * UNIT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_share_the_budget_and_give_it_back() {
        let u = Unverified::new(10 * UNIT);
        let a = u.hold(6 * UNIT).unwrap();
        let _b = u.hold(3 * UNIT + 1).unwrap();
        assert_eq!(u.available(), 0);
        let e = u.hold(1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "10240 bytes of signed request bodies are being verified, the most at once; retry later"
        );
        drop(a);
        assert_eq!(u.available(), 6 * UNIT);
        // More than the whole budget never fits.
        assert!(u.hold(11 * UNIT).is_err());
        assert!(u.hold(u64::MAX).is_err());
    }
}
