//! Fixed-length pieces of a slice without a panic path: the row chunker of the workspace's
//! portable code (the AVX2 kernels, compiled only for x86_64's dispatch, split their blocks
//! with the standard `chunks_exact`).
//!
//! [`chunks`] and [`chunks_mut`] are `chunks_exact` without its chunk-size assertion and its
//! length division: the pieces of `n` values of a slice, walked with checked splits, a ragged end
//! dropped, nothing at all for `n = 0`. The standard iterators' assertion and division are panic
//! paths that the optimiser does not always remove (the panic-freedom probe found them wherever
//! `Iterator::zip` was not inlined, at opt-level `s`); these have none. softmax-core's row
//! batches, attention-core's query tiles and loss-core's samples all walk their rows with them.
//!
//! # Examples
//!
//! ```
//! use softmax_core::chunks::{chunks, chunks_mut};
//! let x = [1, 2, 3, 4, 5, 6, 7];
//! let rows: Vec<&[i32]> = chunks(&x, 3).collect();
//! assert_eq!(rows, [&[1, 2, 3][..], &[4, 5, 6][..]]); // the ragged 7 is dropped
//! assert_eq!(chunks(&x, 0).count(), 0);
//! let mut y = [0; 4];
//! for (i, row) in chunks_mut(&mut y, 2).enumerate() {
//!     row.fill(i);
//! }
//! assert_eq!(y, [0, 0, 1, 1]);
//! ```

#![forbid(unsafe_code)]

/// The pieces of `n` values of `x`, in order (see the [module](self) docs).
///
/// # Examples
///
/// ```
/// let x = [0.5f32, 1.5, 2.5, 3.5];
/// let sums: Vec<f32> = softmax_core::chunks::chunks(&x, 2).map(|r| r.iter().sum()).collect();
/// assert_eq!(sums, [2.0, 6.0]);
/// ```
#[inline]
pub fn chunks<T>(x: &[T], n: usize) -> Chunks<'_, T> {
    Chunks { rest: x, n }
}

/// The pieces of `n` values of `x`, mutable, in order (see the [module](self) docs).
///
/// # Examples
///
/// ```
/// let mut x = [1.0f64, 2.0, 3.0, 4.0];
/// for row in softmax_core::chunks::chunks_mut(&mut x, 2) {
///     row.reverse();
/// }
/// assert_eq!(x, [2.0, 1.0, 4.0, 3.0]);
/// ```
#[inline]
pub fn chunks_mut<T>(x: &mut [T], n: usize) -> ChunksMut<'_, T> {
    ChunksMut { rest: x, n }
}

/// The iterator of [`chunks`].
///
/// # Examples
///
/// ```
/// let mut it = softmax_core::chunks::chunks(&[1u8, 2, 3], 2);
/// assert_eq!(it.next(), Some(&[1u8, 2][..]));
/// assert_eq!(it.next(), None);
/// ```
#[derive(Clone, Debug)]
pub struct Chunks<'a, T> {
    rest: &'a [T],
    n: usize,
}

impl<'a, T> Iterator for Chunks<'a, T> {
    type Item = &'a [T];
    #[inline(always)]
    fn next(&mut self) -> Option<&'a [T]> {
        if self.n == 0 {
            return None;
        }
        let (row, rest) = self.rest.split_at_checked(self.n)?;
        self.rest = rest;
        Some(row)
    }
}

/// The iterator of [`chunks_mut`].
///
/// # Examples
///
/// ```
/// let mut x = [1u8, 2, 3];
/// let mut it = softmax_core::chunks::chunks_mut(&mut x, 3);
/// assert_eq!(it.next().map(|r| r.len()), Some(3));
/// assert!(it.next().is_none());
/// ```
#[derive(Debug)]
pub struct ChunksMut<'a, T> {
    rest: &'a mut [T],
    n: usize,
}

impl<'a, T> Iterator for ChunksMut<'a, T> {
    type Item = &'a mut [T];
    #[inline(always)]
    fn next(&mut self) -> Option<&'a mut [T]> {
        if self.n == 0 {
            return None;
        }
        let (row, rest) = core::mem::take(&mut self.rest).split_at_mut_checked(self.n)?;
        self.rest = rest;
        Some(row)
    }
}

/// The pieces of `n` of two inputs and one output, in step: `((a_row, b_row), out_row)`.
#[inline]
pub(crate) fn chunks3<'a, T>(
    a: &'a [T],
    b: &'a [T],
    out: &'a mut [T],
    n: usize,
) -> impl Iterator<Item = ((&'a [T], &'a [T]), &'a mut [T])> {
    chunks(a, n).zip(chunks(b, n)).zip(chunks_mut(out, n))
}
