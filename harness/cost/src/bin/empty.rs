//! The common runtime alone: the same start-up, input generation, stack paint and scan, markers,
//! report and semihosting exit as every probe, and an empty measured call. Its flash and its
//! instruction count between the markers are subtracted from every probe's.
#![no_std]
#![no_main]

use softmax_cost::{probe, Inputs, Probe};

struct Empty;

impl Probe for Empty {
    fn setup(_: &'static Inputs) -> Self {
        Empty
    }
    fn run(&mut self) {}
    fn ok(&self) -> bool {
        true
    }
    fn result(&self) -> &[u8] {
        &[]
    }
}

probe!(Empty);
