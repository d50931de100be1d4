//! A stack buffer that gathers the short texts of values and appends them to
//! the output in large pieces. Appending each value's few bytes to the `Vec`
//! costs a `memmove` call per value (see docs/PERFORMANCE.md, "What each
//! decision bought"); copying them into a fixed-size array is a couple of
//! moves.

/// Bytes gathered before they are appended to the output.
const CAP: usize = 1024;

/// The longest text [`Batch::push`] copies inline; longer texts (none of
/// the numbers written here) go straight to the output.
pub(super) const MAX_PUSH: usize = 32;

/// Where [`super::ValueWriter`] writes value texts: straight into the
/// output (integers: their lengths vary, and a variable-length `memmove`
/// copes with that better than the fixed moves here) or through a
/// [`Batch`] (floats).
pub(super) trait TextOut {
    fn reserve(&mut self, additional: usize);
    fn byte(&mut self, b: u8);
}

impl TextOut for Vec<u8> {
    #[inline(always)]
    fn reserve(&mut self, additional: usize) {
        Vec::reserve(self, additional);
    }
    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.push(b);
    }
}

impl TextOut for Batch<'_> {
    #[inline(always)]
    fn reserve(&mut self, additional: usize) {
        self.out.reserve(additional);
    }
    #[inline(always)]
    fn byte(&mut self, b: u8) {
        Batch::byte(self, b);
    }
}

#[derive(Debug)]
pub(super) struct Batch<'a> {
    out: &'a mut Vec<u8>,
    buf: [u8; CAP],
    len: usize,
}

impl<'a> Batch<'a> {
    pub(super) fn new(out: &'a mut Vec<u8>) -> Self {
        Batch {
            out,
            buf: [0; CAP],
            len: 0,
        }
    }

    #[inline(always)]
    pub(super) fn push(&mut self, text: &[u8]) {
        if text.len() > MAX_PUSH {
            return self.push_long(text);
        }
        if self.len > CAP - MAX_PUSH {
            self.flush();
        }
        let dst: &mut [u8; MAX_PUSH] = (&mut self.buf[self.len..self.len + MAX_PUSH])
            .try_into()
            .expect("MAX_PUSH bytes");
        copy_short(dst, text);
        self.len += text.len();
    }

    /// Lets `write` put a text of at most `MAX_PUSH` bytes straight into
    /// the buffer (it may scribble past its text's end); `write` returns
    /// the text's length.
    #[inline(always)]
    pub(super) fn put(&mut self, write: impl FnOnce(&mut [u8; MAX_PUSH]) -> usize) {
        if self.len > CAP - MAX_PUSH {
            self.flush();
        }
        let room: &mut [u8; MAX_PUSH] = (&mut self.buf[self.len..self.len + MAX_PUSH])
            .try_into()
            .expect("MAX_PUSH bytes");
        let n = write(room);
        debug_assert!(n <= MAX_PUSH);
        self.len += n;
    }

    #[inline(always)]
    pub(super) fn byte(&mut self, b: u8) {
        if self.len == CAP {
            self.flush();
        }
        self.buf[self.len] = b;
        self.len += 1;
    }

    #[cold]
    fn push_long(&mut self, text: &[u8]) {
        self.flush();
        self.out.extend_from_slice(text);
    }

    fn flush(&mut self) {
        self.out.extend_from_slice(&self.buf[..self.len]);
        self.len = 0;
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Copies `src` (at most `MAX_PUSH` bytes) to the front of `dst` with two
/// overlapping fixed-size moves instead of a variable-length copy.
#[inline(always)]
fn copy_short(dst: &mut [u8; MAX_PUSH], src: &[u8]) {
    let n = src.len();
    if n >= 16 {
        dst[..16].copy_from_slice(&src[..16]);
        dst[n - 16..n].copy_from_slice(&src[n - 16..]);
    } else if n >= 8 {
        dst[..8].copy_from_slice(&src[..8]);
        dst[n - 8..n].copy_from_slice(&src[n - 8..]);
    } else if n >= 4 {
        dst[..4].copy_from_slice(&src[..4]);
        dst[n - 4..n].copy_from_slice(&src[n - 4..]);
    } else {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = *s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_of_every_length_arrive_in_order() {
        let texts: Vec<Vec<u8>> = (0..=40u8)
            .cycle()
            .take(2000)
            .map(|n| (0..n).map(|i| b'a' + (i + n) % 26).collect())
            .collect();
        let mut out = b"head".to_vec();
        {
            let mut batch = Batch::new(&mut out);
            for t in &texts {
                batch.push(t);
                batch.byte(b',');
            }
        }
        let want: Vec<u8> = texts.iter().fold(b"head".to_vec(), |mut acc, t| {
            acc.extend_from_slice(t);
            acc.push(b',');
            acc
        });
        assert_eq!(out, want);
    }
}
