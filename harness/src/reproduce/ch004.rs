//! The claims of `shared/seeds/004_*.txt`.

use super::Claim;

/// This chapter's claims, in the chapter's order.
pub fn claims() -> Vec<Claim> {
    Vec::new()
}
