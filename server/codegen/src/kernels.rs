//! The kernel functions of the graph's shared code (compilation.md §7), and
//! the cache that lets a [`crate::Generator`] print again only the kernels
//! that changed since its last build.
//!
//! An entry is reused only when every input its text was printed from is the
//! same: the kernel's name, its parameters (name, type, and constness as the
//! invocations decide it), the consts it takes and the names of those its
//! body reads, and the lowered body. The body is compared by pointer first
//! (the analyser shares an unchanged kernel's `Arc<Body>` between analyses),
//! then, when the kernel only moved in the file (the analyser then copies it
//! with shifted ranges), by a comparison that ignores source ranges, which
//! the printed text never contains.

use std::cell::RefCell;
use std::fmt::Write;
use std::sync::Arc;

use op2_analysis::hir::{Body, Var};
use op2_analysis::model::{ConstId, Kernel, KernelId, Program, SetId};
use op2_syntax::ast::ScalarType;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::cpp::{Printer, Spelling, scalar_type_decl};
use crate::names;
use crate::same;

/// How a kernel function spells its names. It records the consts it
/// spells, which the cache key must hold.
struct KernelSpelling<'a> {
    program: &'a Program,
    kernel: &'a Kernel,
    consts_read: RefCell<Vec<(ConstId, String)>>,
    /// The consts in `consts_read`, so that a kernel reading many does not
    /// search the list at every read.
    consts_seen: RefCell<FxHashSet<ConstId>>,
}

impl Spelling for KernelSpelling<'_> {
    fn base(&self, var: Var) -> String {
        match var {
            Var::Param(k) => names::cpp_identifier(&self.kernel.params[k as usize].name),
            Var::Local(id) => names::cpp_identifier(&self.kernel.body.local(id).name),
            Var::Const(id) => {
                let name = &self.program.consts[id.index()].name;
                if self.consts_seen.borrow_mut().insert(id) {
                    self.consts_read.borrow_mut().push((id, name.clone()));
                }
                names::const_parameter(name)
            }
            Var::Global(_) => "0".into(),
        }
    }

    fn stored_as_array(&self, var: Var) -> bool {
        matches!(var, Var::Param(_) | Var::Const(_))
    }

    fn length(&self, _set: SetId) -> String {
        "0".into()
    }
}

/// Everything the text of one kernel function is printed from.
#[derive(Debug)]
struct Key {
    body: Arc<Body>,
    /// Each parameter's name, type, and whether it is printed `const`.
    params: Vec<(String, ScalarType, bool)>,
    /// The trailing const parameters: name and type.
    consts_used: Vec<(String, ScalarType)>,
    /// The consts the body reads, with the name each was spelled with.
    consts_read: Vec<(ConstId, String)>,
}

impl Key {
    /// True when `kernel`, with parameters made const by `constness`, prints
    /// the same text as the kernel this key was made for (of the same
    /// name). A body found equal under another pointer replaces the one
    /// held, so that the next build compares pointers only.
    fn matches(&mut self, program: &Program, kernel: &Kernel, constness: &[bool]) -> bool {
        let params_same = self.params.len() == kernel.params.len()
            && self.params.iter().zip(&kernel.params).zip(constness).all(
                |(((name, ty, is_const), param), constant)| {
                    *name == param.name && *ty == param.ty && *is_const == *constant
                },
            );
        let consts_used_same = self.consts_used.len() == kernel.consts_used.len()
            && self
                .consts_used
                .iter()
                .zip(&kernel.consts_used)
                .all(|((name, ty), id)| {
                    program
                        .consts
                        .get(id.index())
                        .is_some_and(|c| c.name == *name && c.ty.scalar == *ty)
                });
        let consts_read_same = self.consts_read.iter().all(|(id, name)| {
            program
                .consts
                .get(id.index())
                .is_some_and(|c| c.name == *name)
        });
        if !(params_same && consts_used_same && consts_read_same) {
            return false;
        }
        if Arc::ptr_eq(&self.body, &kernel.body) {
            return true;
        }
        if same::body(&self.body, &kernel.body) {
            self.body = Arc::clone(&kernel.body);
            return true;
        }
        false
    }
}

#[derive(Debug)]
struct Entry {
    key: Key,
    text: String,
}

/// The printed kernel functions of the last build, by kernel name.
#[derive(Debug, Default)]
pub(crate) struct KernelCache {
    entries: FxHashMap<String, Entry>,
    hits: usize,
    misses: usize,
}

impl KernelCache {
    /// Appends the function of every kernel in `kernels` to `out`, in that
    /// order; `constness[k]` says whether parameter `k` of the kernel is
    /// printed `const`. Entries for kernels not in `kernels` are dropped.
    pub(crate) fn print(
        &mut self,
        program: &Program,
        kernels: &[(KernelId, Vec<bool>)],
        out: &mut String,
    ) {
        let mut kept: FxHashMap<String, Entry> = FxHashMap::default();
        kept.reserve(kernels.len());
        for (id, constness) in kernels {
            let kernel = &program.kernels[id.index()];
            let reused = self.entries.remove(&kernel.name).and_then(|mut entry| {
                entry
                    .key
                    .matches(program, kernel, constness)
                    .then_some(entry)
            });
            let entry = match reused {
                Some(entry) => {
                    self.hits += 1;
                    entry
                }
                None => {
                    self.misses += 1;
                    print_kernel(program, kernel, constness)
                }
            };
            out.push_str(&entry.text);
            kept.insert(kernel.name.clone(), entry);
        }
        self.entries = kept;
    }

    /// How many kernel functions were reused and how many printed.
    pub(crate) fn stats(&self) -> (usize, usize) {
        (self.hits, self.misses)
    }

    /// How many kernel functions are held.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

fn print_kernel(program: &Program, kernel: &Kernel, constness: &[bool]) -> Entry {
    let mut text = String::with_capacity(1024);
    let prints = crate::build::kernel_prints(kernel);
    let _ = write!(
        text,
        "\n// kernel {}\n{}inline void {}(",
        kernel.name,
        // The log of the handler that runs it (build.rs, PRINT_HELPERS).
        if prints {
            "template <typename op2_log_t>\n"
        } else {
            ""
        },
        names::cpp_identifier(&kernel.name)
    );
    let mut first = true;
    let mut separator = |text: &mut String| {
        if !std::mem::take(&mut first) {
            text.push_str(", ");
        }
    };
    for (param, constant) in kernel.params.iter().zip(constness) {
        separator(&mut text);
        let _ = write!(
            text,
            "{}{} *{}",
            if *constant { "const " } else { "" },
            scalar_type_decl(param.ty),
            names::cpp_identifier(&param.name)
        );
    }
    for id in &kernel.consts_used {
        let c = &program.consts[id.index()];
        separator(&mut text);
        let _ = write!(
            text,
            "const {} *{}",
            scalar_type_decl(c.ty.scalar),
            names::const_parameter(&c.name)
        );
    }
    if prints {
        separator(&mut text);
        text.push_str("op2_print_t &op2_print, op2_log_t &op2_log");
    }
    text.push_str(") {\n");
    let spelling = KernelSpelling {
        program,
        kernel,
        consts_read: RefCell::new(Vec::new()),
        consts_seen: RefCell::new(FxHashSet::default()),
    };
    let mut printer = Printer {
        spelling: &spelling,
        out: text,
        indent: 1,
    };
    for stmt in &kernel.body.statements {
        printer.kernel_stmt(&kernel.body, stmt);
    }
    let mut text = printer.out;
    text.push_str("}\n");
    Entry {
        key: Key {
            body: Arc::clone(&kernel.body),
            params: kernel
                .params
                .iter()
                .zip(constness)
                .map(|(p, constant)| (p.name.clone(), p.ty, *constant))
                .collect(),
            consts_used: kernel
                .consts_used
                .iter()
                .map(|id| {
                    let c = &program.consts[id.index()];
                    (c.name.clone(), c.ty.scalar)
                })
                .collect(),
            consts_read: spelling.consts_read.into_inner(),
        },
        text,
    }
}
