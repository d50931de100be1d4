//! Mini-batches: decoded records gathered into the data of one `[N, F]`
//! tensor, cut every `batch_records` records.

use bytes::{Bytes, BytesMut};

use super::error::{ConfigError, Location, RecordError};
use super::value::Kind;
use crate::tensor::{DataType, Shape, Tensor, TensorError};

/// Records per mini-batch unless configured otherwise.
pub const DEFAULT_BATCH_RECORDS: usize = 1024;
/// Longest CSV / JSON Lines line or RecordIO payload by default (1 MiB).
pub const DEFAULT_MAX_RECORD_BYTES: usize = 1 << 20;
/// Most features of one record by default.
pub const DEFAULT_MAX_FEATURES: usize = 1 << 16;
/// Most data bytes of one batch by default (64 MiB).
pub const DEFAULT_MAX_BATCH_BYTES: usize = 64 << 20;
/// Largest whole JSON body by default (64 MiB).
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 << 20;
/// Most elements of one batch, and most elements the sparse records of one
/// request may densify to in all, by default (a route's default
/// `max_elements_per_tensor`).
pub const DEFAULT_MAX_ELEMENTS: u64 = 16 << 20;

/// How records become batches, and the limits that bound what a body can
/// make this side buffer or allocate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeConfig {
    /// Element type of the `[N, F]` input.
    pub dtype: DataType,
    /// F when a rule or the model config fixes it; `None` takes it from the
    /// first record and holds every other record to it.
    pub features: Option<usize>,
    /// Records per batch. A batch is also cut early so that its data stays
    /// within `max_batch_bytes`.
    pub batch_records: usize,
    /// Longest CSV or JSON Lines line (without its line end) or RecordIO
    /// payload. Without it one endless line would be buffered whole.
    pub max_record_bytes: usize,
    /// Most features of one record, dense or densified from sparse. Without
    /// it a sparse record of a few bytes could declare a shape of 2^40.
    pub max_features: usize,
    /// Most data bytes of one batch.
    pub max_batch_bytes: usize,
    /// Largest `application/json` body, which is read whole before its
    /// first batch.
    pub max_body_bytes: usize,
    /// Most elements of one batch (one backend tensor): batches are cut so
    /// that they stay within it.
    pub max_batch_elements: u64,
    /// Most elements the sparse records of one request may densify to, in
    /// all, checked before each is densified. Without it 3000 sparse
    /// records declaring `"shape": [65536]`, 192 KB of JSON, became 786 MB
    /// of backend requests.
    pub max_dense_elements: u64,
    /// Most bytes the sparse records of one request may densify to, in all.
    pub max_dense_bytes: u64,
}

impl DecodeConfig {
    /// The defaults above, for `dtype`.
    pub fn new(dtype: DataType) -> Self {
        DecodeConfig {
            dtype,
            features: None,
            batch_records: DEFAULT_BATCH_RECORDS,
            max_record_bytes: DEFAULT_MAX_RECORD_BYTES,
            max_features: DEFAULT_MAX_FEATURES,
            max_batch_bytes: DEFAULT_MAX_BATCH_BYTES,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_batch_elements: DEFAULT_MAX_ELEMENTS,
            max_dense_elements: DEFAULT_MAX_ELEMENTS,
            max_dense_bytes: DEFAULT_MAX_BODY_BYTES as u64,
        }
    }

    pub(super) fn kind(&self) -> Result<Kind, ConfigError> {
        let kind = Kind::of(self.dtype).ok_or(ConfigError::UnsupportedDataType(self.dtype))?;
        if self.batch_records == 0 {
            return Err(ConfigError::ZeroBatch);
        }
        match self.features {
            Some(0) => Err(ConfigError::ZeroFeatures),
            Some(f) if f > self.max_features => Err(ConfigError::FeaturesOverLimit {
                features: f,
                max: self.max_features,
            }),
            _ => Ok(kind),
        }
    }
}

/// Consecutive records of a request as the data of one `[records,
/// features]` tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub dtype: DataType,
    /// 0-based index of the batch's first record in the whole body.
    pub first_record: u64,
    pub records: usize,
    pub features: usize,
    /// `records * features` little-endian elements, row-major.
    pub data: Bytes,
}

impl Batch {
    /// `[records, features]`.
    pub fn shape(&self) -> Shape {
        Shape::new(vec![self.records as u64, self.features as u64])
    }

    /// The batch as a tensor (the size check cannot fail for a batch a
    /// decoder made).
    pub fn into_tensor(self) -> Result<Tensor, TensorError> {
        let shape = self.shape();
        Tensor::new(self.dtype, shape, self.data)
    }
}

/// The batch being filled. Decoders append a record's elements to `buf`,
/// then call [`Rows::end_row`].
#[derive(Clone, Debug)]
pub(super) struct Rows {
    pub(super) dtype: DataType,
    size: usize,
    pub(super) features: Option<usize>,
    pub(super) max_features: usize,
    batch_records: usize,
    max_batch_bytes: usize,
    max_batch_elements: u64,
    /// What sparse records may still densify to (elements, bytes).
    dense_left: (u64, u64),
    dense_max: (u64, u64),
    /// Records per batch, once the feature count is known.
    per_batch: usize,
    pub(super) buf: BytesMut,
    in_batch: usize,
    first: u64,
    total: u64,
    /// Sparse keys and shape of the record being read.
    pub(super) keys: Vec<u64>,
    pub(super) shape: Vec<u64>,
    values: Vec<u8>,
}

impl Rows {
    pub(super) fn new(config: &DecodeConfig) -> Self {
        let mut rows = Rows {
            dtype: config.dtype,
            size: config.dtype.fixed_size().unwrap_or(1),
            features: None,
            max_features: config.max_features,
            batch_records: config.batch_records,
            max_batch_bytes: config.max_batch_bytes,
            max_batch_elements: config.max_batch_elements,
            dense_left: (config.max_dense_elements, config.max_dense_bytes),
            dense_max: (config.max_dense_elements, config.max_dense_bytes),
            per_batch: 0,
            buf: BytesMut::new(),
            in_batch: 0,
            first: 0,
            total: 0,
            keys: Vec::new(),
            shape: Vec::new(),
            values: Vec::new(),
        };
        if let Some(f) = config.features {
            rows.set_features(f);
        }
        rows
    }

    fn set_features(&mut self, f: usize) {
        self.features = Some(f);
        let row_bytes = f.saturating_mul(self.size).max(1);
        let by_elements = self.max_batch_elements / (f.max(1) as u64);
        let by_elements = usize::try_from(by_elements).unwrap_or(usize::MAX);
        self.per_batch = self
            .batch_records
            .min(self.max_batch_bytes / row_bytes)
            .min(by_elements)
            .max(1);
    }

    /// Records decoded so far.
    pub(super) fn total(&self) -> u64 {
        self.total
    }

    /// Elements of the record that started at `start`.
    pub(super) fn count(&self, start: usize) -> usize {
        (self.buf.len() - start) / self.size
    }

    /// Room for one more record, so that appending does not reallocate.
    pub(super) fn reserve_row(&mut self, hint: usize) {
        let elems = self.features.unwrap_or(hint).min(self.max_features);
        self.buf.reserve(elems * self.size);
    }

    /// Closes the record that started at `start`.
    pub(super) fn end_row(&mut self, at: Location, start: usize) -> Result<(), RecordError> {
        let found = self.count(start);
        if found == 0 {
            return Err(RecordError::NoFeatures { at });
        }
        match self.features {
            Some(expected) if expected != found => {
                return Err(RecordError::FeatureCount {
                    at,
                    expected,
                    found,
                });
            }
            Some(_) => {}
            None => self.set_features(found),
        }
        self.in_batch += 1;
        self.total += 1;
        Ok(())
    }

    /// Drops the records gathered so far, keeping what they taught (the
    /// feature count, the record count, what sparse records may still
    /// densify to): for a pass that only checks records.
    pub(super) fn discard(&mut self) {
        self.buf.clear();
        self.in_batch = 0;
    }

    pub(super) fn full(&self) -> bool {
        self.per_batch > 0 && self.in_batch >= self.per_batch
    }

    /// The records gathered so far as a batch, if there are any.
    pub(super) fn take(&mut self) -> Option<Batch> {
        if self.in_batch == 0 {
            return None;
        }
        let batch = Batch {
            dtype: self.dtype,
            first_record: self.first,
            records: self.in_batch,
            features: self.features.unwrap_or(0),
            data: self.buf.split().freeze(),
        };
        self.first = self.total;
        self.in_batch = 0;
        Some(batch)
    }

    /// Ends a tensor record (JSON `{"values", "keys", "shape"}`, a RecordIO
    /// tensor) whose values were appended at `start`, with its keys and
    /// shape in `self.keys` / `self.shape`. Dense unless it has keys or a
    /// shape its values do not fill; a sparse record becomes the dense row
    /// of `product(shape)` elements, zeros where no key points.
    pub(super) fn finish_tensor(&mut self, at: Location, start: usize) -> Result<(), RecordError> {
        let values = self.count(start);
        let size = if self.shape.is_empty() {
            None
        } else {
            let product = crate::tensor::element_count(&self.shape);
            Some(product.filter(|&p| p <= self.max_features as u64).ok_or(
                RecordError::TooManyFeatures {
                    at,
                    max: self.max_features,
                },
            )? as usize)
        };
        if self.keys.is_empty() && size.is_none_or(|d| d == values) {
            return Ok(());
        }
        let Some(size) = size else {
            return Err(RecordError::Layout {
                at,
                what: "sparse keys need a \"shape\"",
            });
        };
        if self.keys.len() != values {
            return Err(RecordError::SparseMismatch {
                at,
                keys: self.keys.len(),
                values,
            });
        }
        self.charge_dense(at, size)?;
        self.scatter(at, start, size)
    }

    /// Takes `size` elements from what the request's sparse records may
    /// still densify to, before they are.
    fn charge_dense(&mut self, at: Location, size: usize) -> Result<(), RecordError> {
        let elements = size as u64;
        let bytes = elements.saturating_mul(self.size as u64);
        let (left_elements, left_bytes) = self.dense_left;
        let (max_elements, max_bytes) = self.dense_max;
        if elements > left_elements {
            return Err(RecordError::DenseTooLarge {
                at,
                max: max_elements,
                unit: "elements",
                limit: "max_elements_per_tensor",
            });
        }
        if bytes > left_bytes {
            return Err(RecordError::DenseTooLarge {
                at,
                max: max_bytes,
                unit: "bytes",
                limit: "max_body_bytes",
            });
        }
        self.dense_left = (left_elements - elements, left_bytes - bytes);
        Ok(())
    }

    fn scatter(&mut self, at: Location, start: usize, size: usize) -> Result<(), RecordError> {
        let width = self.size;
        self.values.clear();
        self.values.extend_from_slice(&self.buf[start..]);
        self.buf.truncate(start);
        self.buf.resize(start + size * width, 0);
        // A repeated key is seen by its slot being written twice: mark
        // written slots in a bit set sized by the (limited) row.
        let mut seen = vec![0u64; size.div_ceil(64)];
        for (j, &key) in self.keys.iter().enumerate() {
            if key >= size as u64 {
                return Err(RecordError::KeyOutOfRange {
                    at,
                    key,
                    size: size as u64,
                });
            }
            let k = key as usize;
            let (word, bit) = (k / 64, 1u64 << (k % 64));
            if seen[word] & bit != 0 {
                return Err(RecordError::RepeatedKey { at, key });
            }
            seen[word] |= bit;
            let to = start + k * width;
            self.buf[to..to + width].copy_from_slice(&self.values[j * width..(j + 1) * width]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(features: Option<usize>, batch: usize) -> Rows {
        let mut config = DecodeConfig::new(DataType::U8);
        config.features = features;
        config.batch_records = batch;
        Rows::new(&config)
    }

    #[test]
    fn batches_cut_at_the_record_count() {
        let mut r = rows(None, 2);
        for (i, row) in [[1u8, 2], [3, 4], [5, 6]].iter().enumerate() {
            r.buf.extend_from_slice(row);
            r.end_row(Location::Line(i as u64 + 1), r.buf.len() - 2)
                .unwrap();
            assert_eq!(r.full(), i == 1);
            if r.full() {
                let b = r.take().unwrap();
                assert_eq!((b.first_record, b.records, b.features), (0, 2, 2));
                assert_eq!(&b.data[..], &[1, 2, 3, 4]);
            }
        }
        let b = r.take().unwrap();
        assert_eq!((b.first_record, b.records), (2, 1));
        assert_eq!(&b.data[..], &[5, 6]);
        assert!(r.take().is_none());
    }

    #[test]
    fn batches_stay_within_the_byte_limit() {
        let mut config = DecodeConfig::new(DataType::F64);
        config.features = Some(10);
        config.max_batch_bytes = 250;
        assert_eq!(Rows::new(&config).per_batch, 3);
        config.max_batch_bytes = 10;
        assert_eq!(Rows::new(&config).per_batch, 1);
    }

    #[test]
    fn batches_stay_within_the_element_limit() {
        let mut config = DecodeConfig::new(DataType::U8);
        config.features = Some(1000);
        config.max_batch_elements = 2500;
        assert_eq!(Rows::new(&config).per_batch, 2);
        // One record is a batch even past the limit (the feature limit
        // bounds records).
        config.max_batch_elements = 10;
        assert_eq!(Rows::new(&config).per_batch, 1);
    }

    /// What sparse records densify to is charged to the whole request
    /// before each is densified: elements, then bytes.
    #[test]
    fn densifying_is_bounded_per_request() {
        let mut config = DecodeConfig::new(DataType::F32);
        config.max_dense_elements = 25;
        config.max_dense_bytes = 1000;
        let mut r = Rows::new(&config);
        let sparse = |r: &mut Rows, i: u64| {
            let start = r.buf.len();
            r.buf.extend_from_slice(&1f32.to_le_bytes());
            r.keys = vec![0];
            r.shape = vec![10];
            r.finish_tensor(Location::Instance(i), start)
        };
        sparse(&mut r, 0).unwrap();
        sparse(&mut r, 1).unwrap();
        let len = r.buf.len();
        let e = sparse(&mut r, 2).unwrap_err();
        assert_eq!(
            e.to_string(),
            "instance 2: the sparse records of this request densify to more than 25 elements, the route's max_elements_per_tensor"
        );
        // Refused before the row was written out.
        assert_eq!(r.buf.len(), len + 4);
        config.max_dense_elements = 1000;
        config.max_dense_bytes = 60;
        let mut r = Rows::new(&config);
        sparse(&mut r, 0).unwrap();
        let e = sparse(&mut r, 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "instance 1: the sparse records of this request densify to more than 60 bytes, the route's max_body_bytes"
        );
    }

    #[test]
    fn sparse_rows_are_densified() {
        let mut r = rows(None, 8);
        r.buf.extend_from_slice(&[7, 9]);
        r.keys = vec![3, 0];
        r.shape = vec![5];
        r.finish_tensor(Location::Record(0), 0).unwrap();
        assert_eq!(&r.buf[..], &[9, 0, 0, 7, 0]);
    }

    #[test]
    fn sparse_errors() {
        let check = |keys: Vec<u64>, shape: Vec<u64>, values: &[u8], want: &str| {
            let mut r = rows(None, 8);
            r.buf.extend_from_slice(values);
            r.keys = keys;
            r.shape = shape;
            let err = r.finish_tensor(Location::Record(4), 0).unwrap_err();
            assert_eq!(err.to_string(), want);
        };
        check(
            vec![5],
            vec![5],
            &[1],
            "record 4: sparse key 5 is out of range for 5 features",
        );
        check(
            vec![1, 1],
            vec![5],
            &[1, 2],
            "record 4: sparse key 1 appears twice",
        );
        check(
            vec![1],
            vec![5],
            &[1, 2],
            "record 4: 1 sparse keys for 2 values",
        );
        check(
            vec![1],
            vec![],
            &[1],
            "record 4: sparse keys need a \"shape\"",
        );
        check(
            vec![0],
            vec![1 << 40],
            &[1],
            "record 4: more than 65536 features, the limit",
        );
    }
}
