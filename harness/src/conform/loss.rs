//! the losses (CONFORMANCE.md, "Losses"), computed by loss-core.

use super::Op;

/// The ops of this module (see [`Op`]).
pub(super) const OPS: &[Op] = &[];
