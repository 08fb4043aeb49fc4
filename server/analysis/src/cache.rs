//! What an [`Analyser`](crate::Analyser) keeps between analyses, per
//! top-level item, so that a keystroke costs work in proportion to the item it
//! touched rather than to the program.
//!
//! Reuse gives exactly what a fresh analysis gives because of these
//! invariants, which every entry keeps at every moment:
//!
//! 1. **Keyed by text.** An entry belongs to one top-level item: its file and
//!    its exact text (and, for items of the same text in one file, which of
//!    them). What it holds is a function of that text and file, and, for the
//!    parts that lowering derives, of what the lowering looked up among the
//!    top-level names (rule 2); nothing else is consulted, so nothing else
//!    can make it stale. What an item gives that depends on more than that
//!    is not kept: where the whole file is one ERROR, its items report no
//!    unsupported C ([`ItemEntry::unsupported`]).
//! 2. **Lookups are checked.** A lowered kernel or `main` records each
//!    top-level name it looked up and what it found ([`Seen`]): the symbol,
//!    and for a const or global its type (and a const's value, which kernel
//!    summaries fold into constant indices). It is reused only while every
//!    lookup finds the same, and, when an unknown name made it list the
//!    visible names for a suggestion, while the consts and globals are the
//!    same names. Ids are part of what is compared: a declaration inserted
//!    before others changes the ids a body refers to.
//! 3. **Ranges move with the item.** Ranges inside an entry are absolute for
//!    the start recorded with each part ([`Placed`]); when the item is found
//!    at another start, the part is shifted by the difference before it is
//!    used. Every range a part holds lies inside the item (diagnostics of
//!    kernel and `main` bodies relate only to places in the same body), so
//!    one shift moves them all. A lowered body is shared with the analyses
//!    that use it and never changed while one does: moving it makes a moved
//!    copy ([`Moving`]), or moves in place a copy that no analysis holds any
//!    more.
//! 4. **Only clean items are kept.** An item whose tree holds a syntax error
//!    is analysed afresh every time: tree-sitter's error recovery may depend
//!    on more than the item's own text.
//! 5. **Cancellation is harmless.** An entry is created whole and a part is
//!    replaced whole between two questions to the cancellation callback, so
//!    a cancelled analysis leaves every entry valid. Entries that the last
//!    complete analysis did not use are dropped at its end; a cancelled one
//!    drops nothing.

use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;

use op2_syntax::tree_sitter::Node;
use op2_syntax::{Diagnostic, FileId, Parse};
use rustc_hash::{FxHashMap, FxHasher};

use crate::consts::ConstValues;
use crate::hir::Body;
use crate::invocation::ParLoopSyntax;
use crate::kernel::KernelSummary;
use crate::lower::{Env, Lookups};
use crate::model::{ConstId, ElementType, Param, Symbol};
use crate::shift::Shift;
use crate::value::Value;

/// Reusable work between analyses of the same program.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    items: FxHashMap<ItemKey, ItemEntry>,
    /// Imported files, by path: the text last loaded and its parse.
    pub(crate) imports: FxHashMap<PathBuf, (Arc<str>, Arc<Parse>)>,
    /// Counts analyses, to tell the entries the current one used.
    run: u64,
    /// For each text (file and hash), the `nth` the next item of that text
    /// takes in this analysis: the ones below it are taken. A file of many
    /// equal items (`set cells;` forty thousand times) then costs one look
    /// per item, not a walk past all the earlier ones.
    next_nth: FxHashMap<(FileId, u64), u32>,
    /// Keys looked at by [`Cache::reserve`], over the cache's life.
    pub(crate) probes: usize,
    pub(crate) kernel_hits: usize,
    pub(crate) kernel_misses: usize,
}

/// Names a cached top-level item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ItemKey {
    file: FileId,
    /// Hash of the item's text (the entry holds the text itself).
    hash: u64,
    /// Which of the items with this text in this file: 0 for the first.
    nth: u32,
}

/// What is known of one top-level item.
#[derive(Debug, Default)]
pub(crate) struct ItemEntry {
    /// The item's text, compared on every use.
    text: Box<str>,
    /// The analysis that last used the entry.
    used_in: u64,
    /// Unsupported C in the item (E001).
    unsupported: Option<Placed<Vec<Diagnostic>>>,
    /// The item lowered as a kernel.
    pub(crate) kernel: Option<Placed<LoweredKernel>>,
    /// The item lowered as `main`.
    pub(crate) main: Option<Placed<LoweredMain>>,
}

/// A part of an entry with the item start its ranges are absolute for.
#[derive(Debug)]
pub(crate) struct Placed<T> {
    start: u32,
    value: T,
}

impl<T: Shift> Placed<T> {
    pub(crate) fn new(start: u32, value: T) -> Placed<T> {
        Placed { start, value }
    }

    /// The part, its ranges moved to an item starting at `start`.
    pub(crate) fn at(&mut self, start: u32) -> &mut T {
        if start != self.start {
            self.value.shift(i64::from(start) - i64::from(self.start));
            self.start = start;
        }
        &mut self.value
    }

    /// The part without moving it, to check whether it can be reused.
    pub(crate) fn peek(&self) -> &T {
        &self.value
    }
}

/// A kernel lowered once, reused while its text and what its lookups find
/// are unchanged.
#[derive(Clone, Debug)]
pub(crate) struct LoweredKernel {
    pub params: Vec<Param>,
    pub body: Moving<Body>,
    pub summary: Moving<KernelSummary>,
    /// Diagnostics of the parameters and the body (unsupported C apart).
    pub diagnostics: Vec<Diagnostic>,
    pub consts_used: Vec<ConstId>,
    pub seen: Seen,
}

/// `main` lowered once, reused while its text and what its lookups find are
/// unchanged. Its par_loops are resolved on every analysis, from `par_loops`.
#[derive(Clone, Debug)]
pub(crate) struct LoweredMain {
    /// Lowered as the program's `main`, which registers the par_loops (a
    /// second `main` is lowered for its diagnostics only).
    pub first: bool,
    pub body: Moving<Body>,
    pub diagnostics: Vec<Diagnostic>,
    pub par_loops: Vec<ParLoopSyntax>,
    pub seen: Seen,
}

impl Shift for LoweredKernel {
    fn shift(&mut self, delta: i64) {
        for param in &mut self.params {
            param.location.range.shift(delta);
            param.name_location.range.shift(delta);
        }
        self.body.shift(delta);
        self.summary.shift(delta);
        self.diagnostics.shift(delta);
    }
}

impl Shift for LoweredMain {
    fn shift(&mut self, delta: i64) {
        self.body.shift(delta);
        self.diagnostics.shift(delta);
        self.par_loops.shift(delta);
    }
}

/// A lowered body (or its summary) shared with the analyses that use it,
/// and the version before it, kept to be moved in place once no analysis
/// holds it. While the user types, each keystroke moves the items after it;
/// the analysis of the keystroke before last has been dropped by then, so
/// moving its copy costs no allocation, where copying would copy every node.
#[derive(Clone, Debug)]
pub(crate) struct Moving<T> {
    current: Arc<T>,
    /// The previous version, its ranges `delta` bytes after `current`'s.
    spare: Option<(i64, Arc<T>)>,
}

impl<T> Moving<T> {
    pub(crate) fn new(value: T) -> Moving<T> {
        Moving {
            current: Arc::new(value),
            spare: None,
        }
    }

    /// The current version, to share with an analysis.
    pub(crate) fn get(&self) -> &Arc<T> {
        &self.current
    }
}

impl<T: Shift + Clone> Shift for Moving<T> {
    fn shift(&mut self, delta: i64) {
        if let Some(current) = Arc::get_mut(&mut self.current) {
            // No analysis holds it: move it.
            current.shift(delta);
            if let Some((spare_delta, _)) = &mut self.spare {
                *spare_delta -= delta;
            }
            return;
        }
        let previous = match self.spare.take() {
            Some((spare_delta, mut spare)) => match Arc::get_mut(&mut spare) {
                Some(value) => {
                    // Typing a character and deleting it brings the spare
                    // back to where it was: nothing to move.
                    if delta != spare_delta {
                        value.shift(delta - spare_delta);
                    }
                    std::mem::replace(&mut self.current, spare)
                }
                None => self.copy_moved(delta),
            },
            None => self.copy_moved(delta),
        };
        // The version the last analysis holds, to move when it is dropped.
        self.spare = Some((-delta, previous));
    }
}

impl<T: Shift + Clone> Moving<T> {
    /// Replaces the current version by a moved copy; returns the old one.
    fn copy_moved(&mut self, delta: i64) -> Arc<T> {
        let mut copy = T::clone(&self.current);
        copy.shift(delta);
        std::mem::replace(&mut self.current, Arc::new(copy))
    }
}

/// What the top-level names look like from the bodies this analysis lowers.
pub(crate) struct Visible<'a> {
    pub env: &'a Env<'a>,
    pub consts: &'a ConstValues,
    /// Hash of the names of the consts and globals, the names a suggestion
    /// for an unknown name picks from.
    pub listed: u64,
}

impl Visible<'_> {
    /// The hash `listed` holds, of the names that suggestions pick from.
    pub(crate) fn listed_hash<'n>(names: impl Iterator<Item = &'n str>) -> u64 {
        let mut hasher = FxHasher::default();
        for name in names {
            name.hash(&mut hasher);
        }
        hasher.finish()
    }

    /// What a lookup of `name` finds.
    fn find(&self, name: &str) -> Found {
        let symbol = self.env.names.get(name).copied();
        let (ty, value) = match symbol {
            Some(Symbol::Const(id)) => (
                self.env.const_types.get(id.index()).copied(),
                self.consts.get(id).map(<[Value]>::to_vec),
            ),
            Some(Symbol::Global(id)) => (self.env.global_types.get(id.index()).copied(), None),
            _ => (None, None),
        };
        Found { symbol, ty, value }
    }

    /// True when a lookup of `name` finds `found`.
    fn finds(&self, name: &str, found: &Found) -> bool {
        let symbol = self.env.names.get(name).copied();
        symbol == found.symbol
            && match symbol {
                Some(Symbol::Const(id)) => {
                    self.env.const_types.get(id.index()).copied() == found.ty
                        && self.consts.get(id) == found.value.as_deref()
                }
                Some(Symbol::Global(id)) => {
                    self.env.global_types.get(id.index()).copied() == found.ty
                }
                _ => true,
            }
    }
}

/// What a lowering found when it looked up top-level names (invariant 2).
#[derive(Clone, Debug, Default)]
pub(crate) struct Seen {
    names: Vec<(Box<str>, Found)>,
    /// The hash of the listed names, when the lowering listed them.
    listed: Option<u64>,
}

#[derive(Clone, Debug, PartialEq)]
struct Found {
    symbol: Option<Symbol>,
    ty: Option<ElementType>,
    value: Option<Vec<Value>>,
}

impl Seen {
    /// Records what `lookups` find in `visible`.
    pub(crate) fn record(lookups: &Lookups<'_>, visible: &Visible<'_>) -> Seen {
        Seen {
            names: lookups
                .names
                .iter()
                .map(|name| ((*name).into(), visible.find(name)))
                .collect(),
            listed: lookups.listed.then_some(visible.listed),
        }
    }

    /// True when every lookup would find the same in `visible`.
    pub(crate) fn holds(&self, visible: &Visible<'_>) -> bool {
        self.listed.is_none_or(|listed| listed == visible.listed)
            && self
                .names
                .iter()
                .all(|(name, found)| visible.finds(name, found))
    }
}

impl Cache {
    /// Starts an analysis.
    pub(crate) fn begin(&mut self) {
        self.run += 1;
        self.next_nth.clear();
    }

    /// Ends a complete analysis: what it did not use is dropped.
    pub(crate) fn end(&mut self) {
        let run = self.run;
        self.items.retain(|_, entry| entry.used_in == run);
    }

    /// The key of the entry for the item `node` of `file`, made or found,
    /// and marked used by this analysis. `None` for an item with a syntax
    /// error, which is never cached (invariant 4).
    pub(crate) fn reserve(
        &mut self,
        file: FileId,
        node: Node<'_>,
        source: &str,
    ) -> Option<ItemKey> {
        if node.has_error() {
            return None;
        }
        let text = source.get(node.byte_range())?;
        let mut hasher = FxHasher::default();
        text.hash(&mut hasher);
        let hash = hasher.finish();
        let next = self.next_nth.entry((file, hash)).or_insert(0);
        let mut nth = *next;
        loop {
            self.probes += 1;
            let key = ItemKey { file, hash, nth };
            match self.items.get_mut(&key) {
                // Another item of this text, already used by this analysis
                // (only reserve marks entries used, and it hands out `nth`
                // in order, so this does not happen after `next_nth`).
                Some(entry) if entry.used_in == self.run => nth += 1,
                Some(entry) => {
                    if *entry.text != *text {
                        *entry = ItemEntry::new(text);
                    }
                    entry.used_in = self.run;
                    *next = nth + 1;
                    return Some(key);
                }
                None => {
                    let mut entry = ItemEntry::new(text);
                    entry.used_in = self.run;
                    self.items.insert(key, entry);
                    *next = nth + 1;
                    return Some(key);
                }
            }
        }
    }

    /// The entry `key` names: the cached one, or `scratch`, which the caller
    /// keeps for an item that is not cached.
    pub(crate) fn entry<'e>(
        &'e mut self,
        key: Option<ItemKey>,
        scratch: &'e mut ItemEntry,
    ) -> &'e mut ItemEntry {
        match key.and_then(|key| self.items.get_mut(&key)) {
            Some(entry) => entry,
            None => scratch,
        }
    }
}

impl ItemEntry {
    fn new(text: &str) -> ItemEntry {
        ItemEntry {
            text: text.into(),
            ..ItemEntry::default()
        }
    }

    /// Unsupported C in the item `node` of `file`, found once.
    ///
    /// Where the whole file is one ERROR, its items report none
    /// ([`Parse::is_one_error`]): that depends on the rest of the file, not
    /// on the item's text, so it is answered without the entry (invariant
    /// 1). Keeping it made an item analysed while its file was one ERROR go
    /// on without its errors once the file was repaired around it (the
    /// language server published one diagnostic fewer than a fresh
    /// analysis: CI's `the_servers_text_is_the_clients_after_random_edits`),
    /// and an item analysed before its file became one ERROR kept them.
    pub(crate) fn unsupported(
        &mut self,
        node: Node<'_>,
        parse: &Parse,
        file: FileId,
    ) -> &[Diagnostic] {
        if parse.is_one_error() {
            return &[];
        }
        let start = u32::try_from(node.start_byte()).unwrap_or(u32::MAX);
        self.unsupported
            .get_or_insert_with(|| Placed::new(start, parse.unsupported_in(node, file)))
            .at(start)
    }
}
