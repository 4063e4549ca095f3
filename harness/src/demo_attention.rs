//! The demo's attention-core section (see `demo.rs`).

use std::io::Write;

/// Prints the attention-core section of the demo.
pub fn run(_out: &mut impl Write) -> std::io::Result<()> {
    Ok(())
}
