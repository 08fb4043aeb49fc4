//! The host of a body whose only way out is its text: a kernel's
//! `print`/`printf` in `op2 run`, and the simulator's controller running
//! `main`'s blocks. Both pass the text on to the run's writer and keep the
//! unfinished line's length for [`crate::printf::continue_line`].

use op2_analysis::model::{DatId, InvocationId};
use op2_analysis::value::Value;

use crate::interp::{Fault, Host};

/// Whose body a [`Printer`] serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Printing {
    /// A kernel evaluation: its loops spend the kernel's budget.
    Kernel,
    /// The simulator's controller, running `main` block by block: a
    /// par_loop ends a block and a `fetch` was lowered to an invocation
    /// before the graph was built, so neither reaches the host.
    Controller,
}

/// Passes `print` output to the run's writer.
pub(crate) struct Printer<'o> {
    pub(crate) out: &'o mut dyn FnMut(&str),
    pub(crate) unfinished_line: &'o mut usize,
    pub(crate) of: Printing,
}

impl Printer<'_> {
    /// The fault for a statement that the analysis or the simulator's
    /// lowering keeps out of this printer's bodies.
    fn unreachable(&self, what: &str) -> Fault {
        let place = match self.of {
            // The analysis refuses both in a kernel (E601).
            Printing::Kernel => "inside a kernel",
            Printing::Controller => "in a simulated controller block",
        };
        Fault::Host(format!("internal error: a {what} {place}"))
    }
}

impl Host for Printer<'_> {
    fn print(&mut self, text: &str) {
        (self.out)(text);
    }

    fn unfinished_line(&mut self) -> &mut usize {
        self.unfinished_line
    }

    fn runs_main(&self) -> bool {
        self.of == Printing::Controller
    }

    fn par_loop(&mut self, _: InvocationId, _: &mut [Vec<Value>]) -> Result<(), Fault> {
        Err(self.unreachable("par_loop"))
    }

    fn dat_values(&mut self, _: DatId) -> Result<Vec<Value>, Fault> {
        Err(self.unreachable("fetch"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_text_on_and_refuses_what_its_bodies_cannot_hold() {
        for of in [Printing::Kernel, Printing::Controller] {
            let mut text = String::new();
            let mut unfinished = 0;
            let mut out = |s: &str| text.push_str(s);
            let mut printer = Printer {
                out: &mut out,
                unfinished_line: &mut unfinished,
                of,
            };
            printer.print("a b");
            *printer.unfinished_line() += 3;
            assert_eq!(printer.runs_main(), of == Printing::Controller);
            let Err(Fault::Host(message)) = printer.par_loop(InvocationId(0), &mut []) else {
                panic!("a par_loop reached the printer");
            };
            assert!(
                message.starts_with("internal error: a par_loop "),
                "{message}"
            );
            assert!(matches!(
                printer.dat_values(DatId(0)),
                Err(Fault::Host(m)) if m.starts_with("internal error: a fetch ")
            ));
            assert_eq!(text, "a b");
            assert_eq!(unfinished, 3);
        }
    }
}
