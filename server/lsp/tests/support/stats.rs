//! Percentiles of individually timed operations, for the benchmarks
//! (criterion reports means of batches; the budgets are about p95 of single
//! operations).

#![allow(dead_code, clippy::print_stdout)]

use std::time::Duration;

/// Durations of single operations.
#[derive(Debug, Default)]
pub struct Samples {
    times: Vec<Duration>,
}

impl Samples {
    /// No samples yet.
    pub fn new() -> Samples {
        Samples::default()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// Adds one.
    pub fn push(&mut self, time: Duration) {
        self.times.push(time);
    }

    /// The `q`-quantile (0 to 1), nearest rank.
    pub fn quantile(&self, q: f64) -> Duration {
        let mut sorted = self.times.clone();
        sorted.sort();
        if sorted.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    /// The mean.
    pub fn mean(&self) -> Duration {
        if self.times.is_empty() {
            return Duration::ZERO;
        }
        self.times.iter().sum::<Duration>() / u32::try_from(self.times.len()).unwrap_or(u32::MAX)
    }

    /// Prints one line: count, mean, p50, p95, p99 and max, in ms.
    pub fn report(&self, name: &str) {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "percentiles {name}: n={} mean={:.3} ms p50={:.3} ms p95={:.3} ms p99={:.3} ms max={:.3} ms",
            self.times.len(),
            ms(self.mean()),
            ms(self.quantile(0.5)),
            ms(self.quantile(0.95)),
            ms(self.quantile(0.99)),
            ms(self.quantile(1.0)),
        );
    }
}
