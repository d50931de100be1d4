//! Leaf values that check themselves while they are deserialized, so a bad
//! value is reported by stage 1 at its own key path.

use std::fmt;
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::time::Duration;

use serde::de::{self, Deserialize, Deserializer, Visitor};

use crate::config::{SageMakerRoute, backend, duration};
use crate::tensor::{DataType, DecthingsType};

/// A visitor for a string checked by a function.
struct Checked<F>(&'static str, F);

impl<'de, T, F: FnOnce(&str) -> Result<T, String>> Visitor<'de> for Checked<F> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.1)(v).map_err(E::custom)
    }
}

/// A newtype read from a string and checked by a function.
macro_rules! checked_string {
    ($(#[$meta:meta])* $name:ident($ty:ty), $expecting:literal, |$s:ident| $check:expr) => {
        $(#[$meta])*
        pub(crate) struct $name(pub(crate) $ty);

        impl $name {
            fn check($s: &str) -> Result<$ty, String> {
                $check
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_str(Checked($expecting, $name::check)).map($name)
            }
        }
    };
}

checked_string!(
    /// A duration longer than zero: every timeout and TTL.
    #[derive(Clone, Copy, Debug)]
    Timeout(Duration),
    "a duration like \"30s\"",
    |s| match duration::parse(s)? {
        Duration::ZERO => Err(format!("must be above zero, got {s:?}")),
        d => Ok(d),
    }
);

checked_string!(
    /// A duration that may be zero (`drain_delay`).
    #[derive(Clone, Copy, Debug)]
    Delay(Duration),
    "a duration like \"5s\"",
    |s| duration::parse(s)
);

checked_string!(
    #[derive(Clone, Copy, Debug)]
    Addr(SocketAddr),
    "an address like \"127.0.0.1:8000\"",
    |s| s
        .parse()
        .map_err(|_| format!("{s:?} is not an address like 127.0.0.1:8000"))
);

checked_string!(
    #[derive(Clone, Debug)]
    BackendUrl(http::Uri),
    "an http(s)://host:port URL",
    |s| backend::parse_url(s)
);

checked_string!(
    /// `[tracing] endpoint`: an OTLP/HTTP receiver's base URL.
    #[derive(Clone, Debug)]
    OtlpEndpoint(http::Uri),
    "an http(s)://host:port URL",
    |s| crate::config::tracing::parse_endpoint(s)
);

checked_string!(
    /// `tls_server_name`: a DNS name or an IP address.
    #[derive(Clone, Debug)]
    ServerName(String),
    "a DNS name or IP address",
    |s| rustls::pki_types::ServerName::try_from(s)
        .map(|_| s.to_owned())
        .map_err(|_| format!("{s:?} is not a DNS name or IP address"))
);

checked_string!(
    /// `rate_limit_store.url`.
    #[derive(Clone, Debug)]
    StoreUrlValue(crate::config::StoreUrl),
    "a redis://HOST:PORT URL",
    |s| crate::config::StoreUrl::parse(s)
);

checked_string!(
    /// `dns`: a `host:port` to resolve.
    #[derive(Clone, Debug)]
    DnsHost(backend::DnsName),
    "a host:port to resolve",
    |s| backend::parse_dns(s)
);

checked_string!(
    /// A non-empty string: model, tensor, route and backend names.
    #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
    Name(String),
    "a non-empty string",
    |s| match s {
        "" => Err("must not be empty".to_owned()),
        s => Ok(s.to_owned()),
    }
);

checked_string!(
    /// A name in `allowed_types`: its V2 type, and the Decthings type when
    /// the name is a Decthings-only one (`string`, `image`, ...).
    #[derive(Clone, Copy, Debug)]
    TypeName((DataType, Option<DecthingsType>)),
    "a data type name",
    |s| {
        let v2 = DataType::from_any_name(s).ok_or_else(|| {
            format!("unknown data type {s:?} (use V2 names like FP32 or Decthings names like f32)")
        })?;
        Ok((v2, DecthingsType::from_name(s).filter(|t| t.is_variable())))
    }
);

checked_string!(
    /// `sagemaker.datatype`: a numeric fixed-size type.
    #[derive(Clone, Copy, Debug)]
    RecordType(DataType),
    "a data type name",
    |s| DataType::from_any_name(s)
        .filter(|d| SageMakerRoute::DATATYPES.contains(d))
        .ok_or_else(|| format!(
            "{s:?} is not one of FP32, FP64, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64 (or f32, i32, u8, ...)"
        ))
);

checked_string!(
    /// `decthings.prefix`: `/v0`, `/decthings/v0`, ...
    #[derive(Clone, Debug)]
    Prefix(String),
    "a path prefix like \"/v0\"",
    |s| {
        let bad = |c: char| c == '?' || c == '#' || c.is_whitespace() || c.is_control();
        if !s.starts_with('/') || s.ends_with('/') || s.contains(bad) {
            return Err(format!(
                "{s:?} must start with '/', not end with '/', and hold no '?', '#' or whitespace"
            ));
        }
        Ok(s.to_owned())
    }
);

checked_string!(
    /// A SageMaker endpoint name: 1 to 63 letters, digits and hyphens,
    /// starting and ending with a letter or digit (AWS's own rule).
    #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
    EndpointName(String),
    "a SageMaker endpoint name",
    |s| {
        let ok = (1..=63).contains(&s.len())
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !s.starts_with('-')
            && !s.ends_with('-');
        if ok {
            Ok(s.to_owned())
        } else {
            Err(format!(
                "{s:?} is not a SageMaker endpoint name (1-63 letters, digits and '-', not at either end)"
            ))
        }
    }
);

/// A whole number above zero that fits `T`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Positive<T>(pub T);

impl<'de, T: TryFrom<i64>> Deserialize<'de> for Positive<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<T: TryFrom<i64>> Visitor<'_> for V<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a positive integer")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<T, E> {
                if n <= 0 {
                    return Err(E::custom(format!("must be positive, got {n}")));
                }
                T::try_from(n).map_err(|_| E::custom(format!("{n} is too large")))
            }
        }
        d.deserialize_i64(V(PhantomData)).map(Positive)
    }
}

/// A whole number, zero or more, that fits `T`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Count<T>(pub T);

impl<'de, T: TryFrom<i64>> Deserialize<'de> for Count<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<T: TryFrom<i64>> Visitor<'_> for V<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a whole number")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<T, E> {
                if n < 0 {
                    return Err(E::custom(format!("must not be negative, got {n}")));
                }
                T::try_from(n).map_err(|_| E::custom(format!("{n} is too large")))
            }
        }
        d.deserialize_i64(V(PhantomData)).map(Count)
    }
}

/// A fraction from 0 to 1 (`retry_budget = 0.2`), held in thousandths.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fraction(pub u32);

impl<'de> Deserialize<'de> for Fraction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = u32;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a fraction from 0 to 1")
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<u32, E> {
                if !(0.0..=1.0).contains(&x) {
                    return Err(E::custom(format!("must be from 0 to 1, got {x}")));
                }
                Ok((x * 1000.0).round() as u32)
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<u32, E> {
                match n {
                    0 | 1 => Ok(n as u32 * 1000),
                    _ => Err(E::custom(format!("must be from 0 to 1, got {n}"))),
                }
            }
        }
        d.deserialize_f64(V).map(Fraction)
    }
}

/// A share from 0 to 1, whole or not (`sample_ratio = 0.01`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ratio(pub f64);

impl<'de> Deserialize<'de> for Ratio {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = f64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number from 0 to 1")
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<f64, E> {
                if (0.0..=1.0).contains(&x) {
                    Ok(x)
                } else {
                    Err(E::custom(format!("must be from 0 to 1, got {x}")))
                }
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<f64, E> {
                match n {
                    0 | 1 => Ok(n as f64),
                    _ => Err(E::custom(format!("must be from 0 to 1, got {n}"))),
                }
            }
        }
        d.deserialize_f64(V).map(Ratio)
    }
}

/// A rate: a number (whole or not) above zero and at most 10^12.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PerSecond(pub f64);

impl PerSecond {
    const MAX: f64 = 1e12;

    fn check<E: de::Error>(v: f64) -> Result<f64, E> {
        if v > 0.0 && v <= Self::MAX {
            Ok(v)
        } else {
            Err(E::custom(format!(
                "must be above 0 and at most 1e12, got {v}"
            )))
        }
    }
}

impl<'de> Deserialize<'de> for PerSecond {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = f64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number per second")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<f64, E> {
                PerSecond::check(n as f64)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
                PerSecond::check(v)
            }
        }
        d.deserialize_any(V).map(PerSecond)
    }
}

/// One dimension of a shape rule: a size, or -1 for any size.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dim(pub i64);

impl<'de> Deserialize<'de> for Dim {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = i64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size or -1")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<i64, E> {
                if n < -1 {
                    return Err(E::custom(format!("expected a size or -1, got {n}")));
                }
                Ok(n)
            }
        }
        d.deserialize_i64(V).map(Dim)
    }
}
