//! Requests in flight per client address (`server.max_requests_per_client`):
//! one client — one address, or one IPv6 /64, which one host can hold
//! whole — cannot take every request slot, so others keep being served.
//! A request past the bound is refused at once, before it takes a slot or
//! a rate-limit token, or waits for anything. The address is the TCP
//! peer's, put on the request by the server ([`ClientAddr`]); behind a
//! load balancer that is the balancer's, which is why the bound is off
//! unless configured.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use super::admission::AdmissionError;

/// The TCP peer address of a request's connection (a request extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

/// Who counts as one client: an IPv4 address, or an IPv6 /64 (an IPv4
/// address mapped into IPv6 is that IPv4 address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    V4(u32),
    V6(u64),
}

impl Key {
    fn of(addr: IpAddr) -> Key {
        match addr {
            IpAddr::V4(a) => Key::V4(a.into()),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) => Key::V4(v4.into()),
                None => Key::V6((u128::from(a) >> 64) as u64),
            },
        }
    }
}

/// The requests in flight of every client.
#[derive(Debug)]
pub struct Clients {
    limit: usize,
    /// What is counted: requests, or gRPC health watches.
    watches: bool,
    counts: Mutex<HashMap<Key, usize>>,
}

/// One request's place in its client's count; given back when dropped.
#[derive(Debug)]
pub struct ClientSlot {
    clients: Arc<Clients>,
    key: Key,
}

impl Clients {
    pub fn new(limit: usize) -> Arc<Clients> {
        Arc::new(Clients {
            limit,
            watches: false,
            counts: Mutex::new(HashMap::new()),
        })
    }

    /// The gRPC health `Watch` streams each client has open, at most
    /// `limit`: a watch lasts as long as its client likes and takes no
    /// request slot, so without a bound one address held 12,800.
    pub fn watches(limit: usize) -> Arc<Clients> {
        Arc::new(Clients {
            limit,
            watches: true,
            counts: Mutex::new(HashMap::new()),
        })
    }

    /// The most requests one client may have in flight.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// A place for one more request of `addr`, if it has fewer than the
    /// limit in flight.
    pub fn enter(self: &Arc<Self>, addr: IpAddr) -> Result<ClientSlot, AdmissionError> {
        let key = Key::of(addr);
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let n = counts.entry(key).or_insert(0);
        if *n >= self.limit {
            let limit = self.limit;
            return Err(match self.watches {
                true => AdmissionError::WatchesFull { limit },
                false => AdmissionError::ClientBusy { limit },
            });
        }
        *n += 1;
        Ok(ClientSlot {
            clients: self.clone(),
            key,
        })
    }

    /// Requests `addr`'s client has in flight.
    pub fn in_flight(&self, addr: IpAddr) -> usize {
        let counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        counts.get(&Key::of(addr)).copied().unwrap_or(0)
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut counts = self
            .clients
            .counts
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(n) = counts.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn each_client_has_its_own_bound() {
        let c = Clients::new(2);
        let a1 = c.enter(ip("10.0.0.1")).unwrap();
        let _a2 = c.enter(ip("10.0.0.1")).unwrap();
        let e = c.enter(ip("10.0.0.1")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "this client has 2 requests in flight, the most one client may; retry later"
        );
        assert_eq!(e.class().retry_after(), Some(1));
        // Another client is not held back.
        let _b = c.enter(ip("10.0.0.2")).unwrap();
        drop(a1);
        let _a3 = c.enter(ip("10.0.0.1")).unwrap();
        assert_eq!(c.in_flight(ip("10.0.0.1")), 2);
    }

    #[test]
    fn health_watches_have_a_bound_of_their_own() {
        let c = Clients::watches(1);
        let _a = c.enter(ip("10.0.0.1")).unwrap();
        let e = c.enter(ip("10.0.0.1")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "this client has 1 health watches open, the most one client may; retry later"
        );
    }

    #[test]
    fn an_ipv6_slash_64_is_one_client_and_mapped_ipv4_is_ipv4() {
        let c = Clients::new(1);
        let _a = c.enter(ip("2001:db8:1:2::1")).unwrap();
        assert!(c.enter(ip("2001:db8:1:2:ffff::9")).is_err(), "same /64");
        let _b = c.enter(ip("2001:db8:1:3::1")).unwrap();
        let _v4 = c.enter(ip("192.0.2.7")).unwrap();
        assert!(c.enter(ip("::ffff:192.0.2.7")).is_err(), "mapped is v4");
    }

    #[test]
    fn counts_are_forgotten_at_zero() {
        let c = Clients::new(1);
        drop(c.enter(ip("10.0.0.1")).unwrap());
        assert!(c.counts.lock().unwrap().is_empty());
    }

    use crate::error::Classify;
}
