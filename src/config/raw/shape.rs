//! Wrappers that make serde insist on the TOML shape a key must have.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, StringDeserializer};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};

/// A sub-table. Derived structs also accept an array and fill their fields
/// from it by position (`limits = [1]` would set `max_body_bytes`); this
/// accepts a table only. The table is read through the caller's map access,
/// so error paths inside it stay whole.
#[derive(Debug, Default)]
pub(crate) struct Table<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Table<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(V(PhantomData)).map(Table)
    }
}

/// An enum written as a string (`backend_format = "json"`). toml's own
/// enum path calls a non-string a "unit variant"; this says "a string".
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Word<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Word<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let word = String::deserialize(d)?;
        T::deserialize(StringDeserializer::<D::Error>::new(word)).map(Word)
    }
}
