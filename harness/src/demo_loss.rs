//! The demo's loss-core section (see `demo.rs`).

use std::io::Write;

/// Prints the loss-core section of the demo.
pub fn run(_out: &mut impl Write) -> std::io::Result<()> {
    Ok(())
}
