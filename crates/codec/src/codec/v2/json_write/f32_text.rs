//! Shortest round-trip text of the FP32 values most tensors hold, written
//! straight into the output with fixed-size stores.
//!
//! `zmij` (used for everything else) formats a value into its own buffer
//! and lays a number below 1 out with a variable-length `memmove` and
//! `memset`: library calls that took much of its time per value when
//! profiled in the gateway (a 1M-value reply; see docs/PERFORMANCE.md,
//! "What each decision bought"). For the magnitudes this module covers,
//! [1e-3, 2^24), every text it writes is the one `zmij` writes, byte for
//! byte: `every_covered_float_matches_zmij` (run with `--ignored`) checks
//! all of them, and a stride of them runs with the normal tests.
//!
//! The digits: a finite float `v = c · 2^q` (`c` a 24-bit integer, here
//! `q` in [-33, 0]) stands for every real closer to it than to its
//! neighbours, the interval between the midpoints. With `k` chosen so that
//! the interval is at least `10^k` wide and less than `10^(k+1)`, it holds
//! at least one multiple of `10^k` and at most one of `10^(k+1)`. That one,
//! if there, has the fewest digits; otherwise the multiple of `10^k`
//! closest to `v` does. As `q` and `k` are never positive here, the
//! interval's ends scaled by `10^-k` are integers over a power of two, so
//! every comparison is exact in 64-bit integers.

/// Bytes of room [`write()`] needs after the start of the text. The text is
/// at most 14 bytes long (`-0.00123456789`: sign, `0.` and at most 11
/// digits after the point; from 1 up, sign, 9 digits and the point); the
/// stores reach at most 27 bytes in.
pub(super) const ROOM: usize = super::batch::MAX_PUSH;

/// The scale of each covered binade: `10^m | m << 48`, at index
/// `2 · (q + 33) + pow2`, where `m = -k = -floor(q · log10(2))`, one more
/// at a power of two (`pow2`) when the narrower interval there is less than
/// `10^k` wide. One load instead of a multiply, a load, a compare and a
/// second load on every value's critical path.
const SCALES: [u64; 68] = {
    let mut t = [0u64; 68];
    let mut i = 0;
    while i < 68 {
        let q = (i / 2) as i32 - 33;
        let pow2 = i % 2 == 1;
        let mut m = -((q * 78_913) >> 18);
        let mut p = 1u64;
        let mut j = 0;
        while j < m {
            p *= 10;
            j += 1;
        }
        // In units of 2^(q-2) the narrower interval is 3 wide: is it
        // less than 10^k = 2^(q-2) / (10^m / 2^(2-q)) wide?
        if pow2 && 3 * p < 1 << (2 - q) {
            m += 1;
            p *= 10;
        }
        t[i] = p | (m as u64) << 48;
        i += 1;
    }
    t
};

/// Whether [`write()`] covers `v`: finite with a magnitude in [1e-3, 2^24).
/// Outside it, texts come from `zmij`.
#[inline(always)]
pub(super) fn covers(v: f32) -> bool {
    (1e-3..16_777_216.0).contains(&v.abs())
}

/// Writes the text of `v` (which [`covers`] must accept) at the start of
/// `dst` and returns its length. Bytes of `dst` past the text are
/// overwritten with garbage.
#[inline(always)]
pub(super) fn write(v: f32, dst: &mut [u8; ROOM]) -> usize {
    debug_assert!(covers(v));
    let bits = v.to_bits();
    let (d, m) = shortest(bits & 0x7fff_ffff);
    let sign = (bits >> 31) as usize;
    dst[0] = b'-';
    let at = sign;
    // The digit values of `d` padded to nine, most significant first.
    let values = digit_values(d);
    if v.abs() < 1.0 {
        // 1234e-6 -> 0.001234: the last digit of `d` is the m-th after the
        // point (the shortest text of a float below 1 is below 1, so it has
        // no digits before it), and the padding zeros are the zeros after
        // "0.". No digit count needed; trailing zeros come off the length.
        let m = m as usize;
        let zeros = (values << 56).leading_zeros() as usize / 8;
        let (drop, to) = if m >= 9 { (0, m - 9) } else { (9 - m, 0) };
        put16(dst, at, u128::from(u64::from_le_bytes(*b"0.000000")));
        put16(dst, at + 2 + to, (values >> (8 * drop)) + ASCII_ZEROS);
        return at + 2 + m - zeros;
    }
    let n = d.ilog10() as usize + 1;
    // The digits moved to the low bytes, zero bytes above them. Trailing
    // zero digits come off (a count of zero bytes, not a loop of
    // divisions).
    let values = values >> (8 * (9 - n));
    let zeros = (values.leading_zeros() / 8) as usize - (16 - n);
    let (n, k) = (n - zeros, zeros as i32 - m as i32);
    let digits = values + ASCII_ZEROS;
    let e = n as i32 - 1 + k; // the decimal exponent of the first digit
    if k >= 0 {
        // 1234e2 -> 123400.0
        put16(dst, at, digits);
        put16(dst, at + n, ASCII_ZEROS);
        let end = at + n + k as usize;
        dst[end] = b'.';
        dst[end + 1] = b'0';
        end + 2
    } else {
        // 1234e-2 -> 12.34 (at least one digit before the point: e >= 0)
        let int = e as usize + 1;
        put16(dst, at, digits);
        dst[at + int] = b'.';
        put16(dst, at + int + 1, digits >> (8 * int));
        at + n + 1
    }
}

const ASCII_ZEROS: u128 = u128::from_le_bytes([b'0'; 16]);

#[inline(always)]
fn put16(dst: &mut [u8; ROOM], at: usize, v: u128) {
    dst[at..at + 16].copy_from_slice(&v.to_le_bytes());
}

/// The shortest decimal `d · 10^-m` that reads back as the positive float
/// with these bits (and of those, the one closest to it), `d` possibly
/// with trailing zeros. Without branches: which candidate wins is a coin
/// toss for random data, and a mispredicted branch cost more than
/// computing both.
#[inline(always)]
fn shortest(bits: u32) -> (u32, u32) {
    let frac = u64::from(bits & 0x7f_ffff);
    let q = (bits >> 23) as i32 - 150;
    // 1e-3 is above 2^-10 = 2^23 · 2^-33: the interval's ends times 10^11
    // stay below 2^63, and all the arithmetic fits in 64 bits.
    debug_assert!((-33..=0).contains(&q));
    let c = frac | 0x80_0000;
    // In units of 2^(q-2): the value and the ends of its interval. At a
    // power of two the neighbour below is half as far.
    let pow2 = frac == 0;
    let (v4, lo4, hi4) = (4 * c, 4 * c - 2 + u64::from(pow2), 4 * c + 2);
    // Round-to-nearest-even reads a midpoint as the even neighbour.
    let closed = c & 1 == 0;
    let s = (2 - q) as u32;
    let scale = SCALES[(2 * (q + 33)) as usize | usize::from(pow2)];
    let (p, m) = (scale & ((1 << 48) - 1), (scale >> 48) as u32);
    let (v, lo, hi) = (v4 * p, lo4 * p, hi4 * p);
    let above_lo = |x: u64| {
        let x = x << s;
        (x > lo) | (closed & (x == lo))
    };
    // The largest multiple of 10^k inside the interval, and of 10^(k+1):
    // if that one is inside, it is the shortest.
    let top = hi >> s;
    let top = top - u64::from(!closed & (top << s == hi));
    let ten = top - top % 10;
    // Otherwise the multiple of 10^k nearest the value, ties to even.
    let r = v >> s;
    let rem = v - (r << s);
    let half = 1 << (s - 1);
    let r = r + u64::from((rem > half) | ((rem == half) & (r & 1 == 1)));
    let r = r + u64::from(!above_lo(r));
    let d = if above_lo(ten) { ten } else { r };
    (d as u32, m)
}

/// The nine decimal digits of `d < 10^9` as byte values (0-9), most
/// significant in the lowest byte.
#[inline(always)]
fn digit_values(d: u32) -> u128 {
    let first = u128::from(d / 100_000_000);
    let rest = d % 100_000_000;
    let eight = eight_digits(rest / 10_000, rest % 10_000);
    (u128::from(eight) << 8) | first
}

/// The digits of `hi` and `lo` (each below 10^4) as eight byte values
/// (not ASCII), `hi`'s first: split into hundreds, then tens, in all four
/// lanes at once.
#[inline(always)]
fn eight_digits(hi: u32, lo: u32) -> u64 {
    let merged = u64::from(hi) | (u64::from(lo) << 32);
    let hundreds = ((merged * 10_486) >> 20) & 0x0000_007f_0000_007f;
    let pairs = ((merged - 100 * hundreds) << 16) + hundreds;
    let tens = ((pairs * 103) >> 10) & 0x000f_000f_000f_000f;
    tens + ((pairs - 10 * tens) << 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: f32) -> String {
        let mut dst = [0u8; ROOM];
        let n = write(v, &mut dst);
        String::from_utf8(dst[..n].to_vec()).unwrap()
    }

    fn zmij(v: f32) -> String {
        zmij::Buffer::new().format_finite(v).to_owned()
    }

    /// Positive floats that [`covers`] accepts, as bit patterns.
    fn covered_bits() -> std::ops::Range<u32> {
        1e-3f32.to_bits()..16_777_216f32.to_bits()
    }

    #[test]
    fn known_texts() {
        for (v, want) in [
            (1.0, "1.0"),
            (-1.0, "-1.0"),
            (0.5, "0.5"),
            (0.1, "0.1"),
            (-0.3, "-0.3"),
            (0.001, "0.001"),
            (1e-3 * 1.5, "0.0015"),
            (100.0, "100.0"),
            (1234.5, "1234.5"),
            (16_777_215.0, "16777215.0"),
            (-16_777_215.0, "-16777215.0"),
            (0.123_456_79, "0.12345679"),
            (7.0e6, "7000000.0"),
            (0.99999994, "0.99999994"),
            (1.0000001, "1.0000001"),
        ] {
            assert_eq!(text(v), want, "{v:e}");
        }
    }

    #[test]
    fn digit_values_of_every_length() {
        for d in [
            0u32,
            7,
            10,
            99,
            12_345,
            99_999_999,
            100_000_000,
            123_456_789,
            999_999_999,
        ] {
            let bytes = digit_values(d).to_le_bytes();
            let want: Vec<u8> = format!("{d:09}").bytes().map(|b| b - b'0').collect();
            assert_eq!(bytes[..9], want[..]);
            assert_eq!(bytes[9..], [0; 7]);
        }
    }

    #[test]
    fn covers_exactly_the_range() {
        assert!(!covers(9.999_999e-4));
        assert!(covers(1e-3));
        assert!(covers(-1e-3));
        assert!(covers(16_777_215.0));
        assert!(!covers(16_777_216.0));
        assert!(!covers(f32::NAN));
        assert!(!covers(f32::INFINITY));
        assert!(!covers(0.0));
        let bits = covered_bits();
        assert!(!covers(f32::from_bits(bits.start - 1)));
        assert!(!covers(f32::from_bits(bits.end)));
    }

    /// Every power of two and its neighbours (the asymmetric intervals),
    /// and a stride of everything else, both signs.
    #[test]
    fn matches_zmij_on_a_stride_and_at_every_power_of_two() {
        let bits = covered_bits();
        let powers = ((bits.start >> 23)..=(bits.end >> 23))
            .map(|e| e << 23)
            .flat_map(|b| [b.wrapping_sub(1), b, b + 1]);
        for b in bits.clone().step_by(997).chain(powers) {
            for v in [f32::from_bits(b), -f32::from_bits(b)] {
                if covers(v) {
                    assert_eq!(text(v), zmij(v), "bits {:#010x}", v.to_bits());
                }
            }
        }
    }

    /// All of them (about 570 million, both signs): `cargo test --release --lib
    /// every_covered_float_matches_zmij -- --ignored` (a minute or so).
    #[test]
    #[ignore = "exhaustive: run in release with --ignored"]
    fn every_covered_float_matches_zmij() {
        let mut dst = [0u8; ROOM];
        let mut zb = zmij::Buffer::new();
        for b in covered_bits() {
            for v in [f32::from_bits(b), -f32::from_bits(b)] {
                let n = write(v, &mut dst);
                assert_eq!(&dst[..n], zb.format_finite(v).as_bytes(), "bits {b:#010x}");
            }
        }
    }
}
