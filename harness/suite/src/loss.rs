//! The on-target cases of loss-core: each a `fn(&mut Ctx)` listed in the case table of
//! `lib.rs` (`single:`), fed with the same generators and digested like softmax-core's cases.
#![allow(dead_code, unused_imports)] // Until the first case lands.

use crate::Ctx;
