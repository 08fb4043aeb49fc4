//! Executing OP2 programs. [`reference`] runs a program's meaning
//! (language.md §8): what `op2 run` prints and computes. [`simulate`] runs the
//! code generator's graph model under POETS' execution rules with a seeded
//! adversarial delivery order; [`compare`] checks that both agree.
//!
//! Kernels and `main` are compiled once into closures ([`interp`]) with C's
//! arithmetic on IEEE hardware, shared with the analyser's constant
//! evaluation.

pub mod compare;
pub mod huge;
pub mod interp;
mod native;
mod printer;
pub mod printf;
pub mod reference;
pub mod simulate;
pub mod state;

pub use compare::{
    ANOTHER_ORDER_FACTOR, AnotherOrder, Comparison, Difference, Divergence, Explained, Passing,
    Tolerance, compare, explain, explain_by_another_order, passing,
};
pub use reference::{Engine, LoopPlan, Reference, RuntimeError};
pub use state::State;
