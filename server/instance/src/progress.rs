//! Reporting the phases of reading and writing a large instance: a trait
//! the library calls, and progress bars on standard error for terminals.

use std::io::{self, IsTerminal};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A phase of building a graph instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Parsing the JSON; counted in rows, total unknown.
    Reading,
    /// Checking sizes, targets and races; counted in rows and elements.
    Validating,
    /// Counting the edges each device receives; counted in edges.
    Counting,
    /// Writing `<DevI>`s; counted in devices.
    WritingDevices,
    /// Writing `<EdgeI>`s; counted in edges.
    WritingEdges,
}

impl Phase {
    /// What the phase is called on screen.
    pub fn label(self) -> &'static str {
        match self {
            Phase::Reading => "reading",
            Phase::Validating => "validating",
            Phase::Counting => "counting edges",
            Phase::WritingDevices => "writing devices",
            Phase::WritingEdges => "writing edges",
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Phase::Reading | Phase::Validating => "rows",
            Phase::WritingDevices => "devices",
            Phase::Counting | Phase::WritingEdges => "edges",
        }
    }
}

/// Receives the progress of reading and writing an instance. Calls come in
/// batches (tens of thousands of units), so implementations may be slow.
pub trait Progress {
    /// The number of set elements, once the data has been read.
    fn instance_size(&mut self, _elements: u64) {}

    /// A phase begins; `total` units when known.
    fn start(&mut self, phase: Phase, total: Option<u64>);

    /// `amount` more units of the current phase are done.
    fn advance(&mut self, amount: u64);

    /// The current phase is over.
    fn finish(&mut self);
}

/// Reports nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&mut self, _phase: Phase, _total: Option<u64>) {}
    fn advance(&mut self, _amount: u64) {}
    fn finish(&mut self) {}
}

/// Progress bars on standard error, one line per phase, for instances of
/// more than [`TerminalProgress::THRESHOLD`] elements (before the size is
/// known, once that many rows have been read).
#[derive(Debug)]
pub struct TerminalProgress {
    threshold: u64,
    elements: Option<u64>,
    phase: Option<(Phase, Option<u64>)>,
    position: u64,
    bar: Option<ProgressBar>,
}

impl TerminalProgress {
    /// Instances up to this many elements are quick: no bars.
    pub const THRESHOLD: u64 = 100_000;

    /// Bars for instances of more than `threshold` elements.
    pub fn new(threshold: u64) -> TerminalProgress {
        TerminalProgress {
            threshold,
            elements: None,
            phase: None,
            position: 0,
            bar: None,
        }
    }

    /// Bars when standard error is a terminal, nothing otherwise.
    pub fn stderr() -> Box<dyn Progress> {
        if io::stderr().is_terminal() {
            Box::new(TerminalProgress::new(TerminalProgress::THRESHOLD))
        } else {
            Box::new(NoProgress)
        }
    }

    fn wanted(&self) -> bool {
        match self.elements {
            Some(elements) => elements > self.threshold,
            None => self.position > self.threshold,
        }
    }

    fn show(&mut self) {
        let Some((phase, total)) = self.phase else {
            return;
        };
        let bar = match total {
            Some(total) => ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
                .with_style(
                    ProgressStyle::with_template(&format!(
                        "{{prefix:>16}} [{{bar:40}}] {{human_pos}}/{{human_len}} {} ({{elapsed}}, eta {{eta}})",
                        phase.unit()
                    ))
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
                ),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
                ProgressStyle::with_template(&format!(
                    "{{prefix:>16}} {{spinner}} {{human_pos}} {} ({{elapsed}})",
                    phase.unit()
                ))
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            ),
        };
        bar.set_prefix(phase.label());
        bar.set_position(self.position);
        bar.enable_steady_tick(Duration::from_millis(200));
        self.bar = Some(bar);
    }
}

impl Progress for TerminalProgress {
    fn instance_size(&mut self, elements: u64) {
        self.elements = Some(elements);
    }

    fn start(&mut self, phase: Phase, total: Option<u64>) {
        self.finish();
        self.phase = Some((phase, total));
        self.position = 0;
        if self.wanted() {
            self.show();
        }
    }

    fn advance(&mut self, amount: u64) {
        self.position += amount;
        match &self.bar {
            Some(bar) => bar.set_position(self.position),
            None if self.phase.is_some() && self.wanted() => self.show(),
            None => {}
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        self.phase = None;
    }
}

impl Drop for TerminalProgress {
    fn drop(&mut self) {
        self.finish();
    }
}
