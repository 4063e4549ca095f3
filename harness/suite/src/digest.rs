//! The digest every case feeds its results into: FNV-1a 64 over a canonical byte encoding.

use core::fmt::Write;

use softmax_core::Error;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a (64-bit) over the bytes of everything fed in.
///
/// Not a cryptographic hash: it only has to change when a result bit changes, be cheap on a
/// Cortex-M0+, and be specified independently of this crate (so its known answers can be
/// checked against published values).
///
/// # Examples
///
/// ```
/// use softmax_suite::Digest;
/// let mut d = Digest::new();
/// d.bytes(b"a");
/// assert_eq!(d.finish(), 0xaf63_dc4c_8601_ec8c); // published FNV-1a 64 test vector
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digest {
    state: u64,
}

impl Default for Digest {
    fn default() -> Self {
        Self::new()
    }
}

impl Digest {
    /// The digest of nothing (the FNV-1a offset basis).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(softmax_suite::Digest::new().finish(), 0xcbf2_9ce4_8422_2325);
    /// ```
    pub const fn new() -> Self {
        Digest { state: FNV_OFFSET }
    }

    /// Feeds raw bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut d = softmax_suite::Digest::new();
    /// d.bytes(b"foobar");
    /// assert_eq!(d.finish(), 0x8594_4171_f739_67e8); // published FNV-1a 64 test vector
    /// ```
    pub fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.state ^= u64::from(b);
            self.state = self.state.wrapping_mul(FNV_PRIME);
        }
    }

    /// Feeds any [`Feed`] value (numbers, floats, slices, results, errors).
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut a, mut b) = (softmax_suite::Digest::new(), softmax_suite::Digest::new());
    /// a.feed(&[1.0f32, 2.0][..]);
    /// b.feed(&[1.0f32, 2.5][..]);
    /// assert_ne!(a.finish(), b.finish());
    /// ```
    pub fn feed<T: Feed + ?Sized>(&mut self, value: &T) {
        value.feed(self);
    }

    /// The digest value.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut d = softmax_suite::Digest::new();
    /// d.feed(&7u64);
    /// assert_ne!(d.finish(), softmax_suite::Digest::new().finish());
    /// ```
    pub fn finish(&self) -> u64 {
        self.state
    }
}

/// Lets `write!` feed formatted text (used for the `Display` of errors).
impl Write for Digest {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.bytes(s.as_bytes());
        Ok(())
    }
}

/// A value with a canonical, target-independent byte encoding for the [`Digest`].
///
/// The encoding never depends on the target: `usize` is fed as 8 bytes (it is 4 bytes wide on
/// Cortex-M and 8 on x86_64), integers little-endian, slices with their length first.
pub trait Feed {
    /// Feeds the encoding of `self`.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_suite::{Digest, Feed};
    /// let mut a = Digest::new();
    /// 3usize.feed(&mut a);
    /// let mut b = Digest::new();
    /// 3u64.feed(&mut b);
    /// assert_eq!(a, b); // usize is always fed as 64 bits
    /// ```
    fn feed(&self, d: &mut Digest);
}

impl Feed for u8 {
    fn feed(&self, d: &mut Digest) {
        d.bytes(&[*self]);
    }
}

impl Feed for u32 {
    fn feed(&self, d: &mut Digest) {
        d.bytes(&self.to_le_bytes());
    }
}

impl Feed for u64 {
    fn feed(&self, d: &mut Digest) {
        d.bytes(&self.to_le_bytes());
    }
}

impl Feed for usize {
    fn feed(&self, d: &mut Digest) {
        (*self as u64).feed(d);
    }
}

impl Feed for bool {
    fn feed(&self, d: &mut Digest) {
        u8::from(*self).feed(d);
    }
}

impl Feed for () {
    fn feed(&self, _: &mut Digest) {}
}

impl Feed for str {
    fn feed(&self, d: &mut Digest) {
        self.len().feed(d);
        d.bytes(self.as_bytes());
    }
}

// NaNs are canonicalised before hashing. IEEE 754 fixes only that an invalid operation returns
// *a* quiet NaN, not its sign or payload, and targets differ: x86_64 SSE returns the "default
// NaN" 0xffc00000 (sign bit set), the Cortex-M4F FPU and the soft-float routines used on the
// Cortex-M0+ return 0x7fc00000, and when NaNs propagate each picks the payload of a different
// operand. softmax-core's contract is only "NaN poisons the row", so the digest records that a
// value is NaN and nothing else. Every other bit pattern is hashed as is (so -0.0 and +0.0, and
// every subnormal, must match exactly). The canonical patterns are themselves NaNs, so no
// non-NaN value can collide with them.
impl Feed for f32 {
    fn feed(&self, d: &mut Digest) {
        let bits = if self.is_nan() {
            0x7fc0_0000
        } else {
            self.to_bits()
        };
        bits.feed(d);
    }
}

impl Feed for f64 {
    fn feed(&self, d: &mut Digest) {
        let bits = if self.is_nan() {
            0x7ff8_0000_0000_0000
        } else {
            self.to_bits()
        };
        bits.feed(d);
    }
}

impl<T: Feed> Feed for [T] {
    fn feed(&self, d: &mut Digest) {
        self.len().feed(d);
        for v in self {
            v.feed(d);
        }
    }
}

impl<T: Feed, const N: usize> Feed for [T; N] {
    fn feed(&self, d: &mut Digest) {
        self[..].feed(d);
    }
}

impl<T: Feed + ?Sized> Feed for &T {
    fn feed(&self, d: &mut Digest) {
        (**self).feed(d);
    }
}

impl<T: Feed + ?Sized> Feed for &mut T {
    fn feed(&self, d: &mut Digest) {
        (**self).feed(d);
    }
}

/// An error is fed as a discriminant code, its fields, and its `Display` text.
impl Feed for Error {
    fn feed(&self, d: &mut Digest) {
        match *self {
            Error::EmptyRow => 1u8.feed(d),
            Error::LengthMismatch { expected, found } => {
                2u8.feed(d);
                expected.feed(d);
                found.feed(d);
            }
            Error::InvalidTemperature => 3u8.feed(d),
            Error::InvalidNoise => 4u8.feed(d),
            Error::EntropyOutOfRange => 5u8.feed(d),
            // A variant added later: its Display text below still distinguishes it.
            _ => 0xffu8.feed(d),
        }
        // Infallible: `Digest::write_str` never fails.
        let _ = write!(d, "{self}");
    }
}

impl<T: Feed> Feed for Result<T, Error> {
    fn feed(&self, d: &mut Digest) {
        match self {
            Ok(v) => {
                0u8.feed(d);
                v.feed(d);
            }
            Err(e) => {
                1u8.feed(d);
                e.feed(d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of<T: Feed + ?Sized>(v: &T) -> u64 {
        let mut d = Digest::new();
        d.feed(v);
        d.finish()
    }

    #[test]
    fn fnv1a_published_vectors() {
        // From the FNV reference test suite (Fowler/Noll/Vo, fnv_test.c).
        for (input, expect) in [
            (&b""[..], 0xcbf2_9ce4_8422_2325u64),
            (b"a", 0xaf63_dc4c_8601_ec8c),
            (b"foobar", 0x8594_4171_f739_67e8),
        ] {
            let mut d = Digest::new();
            d.bytes(input);
            assert_eq!(d.finish(), expect, "input {input:?}");
        }
    }

    #[test]
    fn nan_is_canonical_but_zero_signs_and_subnormals_are_not() {
        let quiet = f32::from_bits(0x7fc0_0000);
        let x86_default = f32::from_bits(0xffc0_0000);
        let payload = f32::from_bits(0x7fc0_1234);
        assert_eq!(of(&quiet), of(&x86_default));
        assert_eq!(of(&quiet), of(&payload));
        assert_eq!(
            of(&f64::from_bits(0x7ff8_0000_0000_0000)),
            of(&f64::from_bits(0xfff8_0000_0000_0001))
        );
        assert_ne!(of(&0.0f32), of(&-0.0f32));
        assert_ne!(of(&0.0f64), of(&-0.0f64));
        assert_ne!(of(&f32::from_bits(1)), of(&f32::from_bits(2)));
        assert_ne!(of(&f32::INFINITY), of(&quiet));
    }

    #[test]
    fn encodings_are_length_prefixed_and_width_independent() {
        // [1] ++ [] must differ from [] ++ [1].
        let mut a = Digest::new();
        a.feed(&[1u8][..]);
        a.feed(&[0u8; 0][..]);
        let mut b = Digest::new();
        b.feed(&[0u8; 0][..]);
        b.feed(&[1u8][..]);
        assert_ne!(a, b);
        assert_eq!(of(&5usize), of(&5u64));
        let ok: Result<(), Error> = Ok(());
        let err: Result<(), Error> = Err(Error::EmptyRow);
        assert_ne!(of(&ok), of(&err));
        let m1: Result<(), Error> = Err(Error::LengthMismatch {
            expected: 3,
            found: 2,
        });
        let m2: Result<(), Error> = Err(Error::LengthMismatch {
            expected: 3,
            found: 4,
        });
        assert_ne!(of(&m1), of(&m2));
    }
}
