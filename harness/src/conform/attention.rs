//! attention (CONFORMANCE.md, "Attention"), computed by attention-core.

use super::Op;

/// The ops of this module (see [`Op`]).
pub(super) const OPS: &[Op] = &[];
