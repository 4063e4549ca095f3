//! The case of the streaming decoder's property tests: a stream of `t` tokens, GQA heads, a
//! cache with sinks and an optional window, and the score modifiers the full computation and the
//! decoder share. `attention_properties.rs` (the f32 and f64 decoders against full attention)
//! and `kv_cache.rs` (the reduced-precision caches) include it with `#[path =
//! "attention_support/stream_case.rs"] mod stream_case;`; each draws its cases with a strategy
//! of its own and adds the methods it alone needs in an `impl` of its own.
#![allow(dead_code)]

use attention_core::{Causal, DecodeOptions, Options, Window};

/// One streaming case.
#[derive(Clone, Debug)]
pub struct StreamCase {
    pub heads: usize,
    pub kv_heads: usize,
    pub t: usize,
    pub d: usize,
    pub dv: usize,
    pub window: Option<usize>,
    pub sinks: usize,
    pub alibi: bool,
    pub softcap: Option<f32>,
    pub sink_logits: Option<Vec<f32>>,
    pub seed: u64,
}

impl StreamCase {
    /// The full computation's options: causal (bottom-right), with the case's window, sinks and
    /// score modifiers.
    pub fn opts(&self) -> Options<'_, f32> {
        let mut o = Options::new()
            .with_causal(Causal::BottomRight)
            .with_alibi(self.alibi)
            .with_sinks(self.sinks);
        if let Some(w) = self.window {
            o = o.with_window(w);
        }
        if let Some(c) = self.softcap {
            o = o.with_softcap(c);
        }
        if let Some(z) = &self.sink_logits {
            o = o.with_sink_logits(z);
        }
        o
    }

    /// The decoder's options: the same score modifiers (its window and sinks are the cache's).
    pub fn decode_opts(&self) -> DecodeOptions<'_, f32> {
        let mut o = DecodeOptions::new().with_alibi(self.alibi);
        if let Some(c) = self.softcap {
            o = o.with_softcap(c);
        }
        if let Some(z) = &self.sink_logits {
            o = o.with_sink_logits(z);
        }
        o
    }

    /// The cache's eviction: the window with its sinks, if any.
    pub fn evict(&self) -> Option<Window> {
        self.window.map(|w| Window::new(w, self.sinks))
    }

    /// What CONFORMANCE.md says the cache needs: min(T, sinks + W) with a window, T without.
    pub fn needed(&self) -> usize {
        match self.window {
            Some(w) => self.t.min(self.sinks + w),
            None => self.t,
        }
    }
}
