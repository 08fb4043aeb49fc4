//! Writing the `<GraphInstance>` of compilation.md §7 for validated data.
//!
//! The edges of every invocation are enumerated by one function,
//! [`Edges::each`], twice: first to count what each device receives (its
//! `{inv}_read_recv_total`, `{inv}_write_recv_total` and the controller's
//! `{inv}_end_total`), then to write them after the devices. The counts
//! are therefore those of the edges written, by construction.
//!
//! The text is made on a second thread, in chunks of a megabyte that the
//! calling thread hands to the output, so that formatting overlaps with the
//! kernel's copying of gigabytes into a file. Ids and initialisers are
//! assembled from fragments prepared once per device type and invocation: a
//! mesh of millions of elements costs a few copies and integer conversions
//! per line.

use std::cell::Cell;
use std::io::{self, Write};
use std::sync::mpsc;

use op2_analysis::fetch::Lowered;
use op2_analysis::model::{ArgKind, Program, SetId};
use op2_analysis::value::Value;

use op2_instance::{DatValues, InstanceData, Phase, Progress, Section, path};
use rustc_hash::FxHashMap;

use super::instance_id;
use crate::model::{CType, DeviceKind, DeviceType, GraphType, Member};
use crate::names;
use crate::output::{BuildError, InstanceWriter};
use crate::topology::{Parent, Tree};
use crate::xml;

/// Bytes gathered before a write to the output: as much as the buffered
/// writer of `output::write_graph` holds, so that it passes them straight
/// through instead of copying them again.
const BUFFER: usize = 1 << 20;

/// Units between progress reports.
const TICK: u64 = 1 << 16;

/// Writes the graph instance of validated [`InstanceData`] through
/// [`crate::output::write_graph`].
pub struct GraphInstance<'a> {
    /// The program with its `fetch`es lowered, as the graph was built.
    program: &'a Program,
    data: &'a InstanceData,
    progress: &'a mut dyn Progress,
}

impl std::fmt::Debug for GraphInstance<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphInstance")
            .field("elements", &self.data.elements())
            .finish_non_exhaustive()
    }
}

impl<'a> GraphInstance<'a> {
    /// A writer for `data`, read for `program` (the program the graph type
    /// was built from).
    pub fn new(
        program: &'a Lowered,
        data: &'a InstanceData,
        progress: &'a mut dyn Progress,
    ) -> GraphInstance<'a> {
        GraphInstance {
            program,
            data,
            progress,
        }
    }
}

impl InstanceWriter for GraphInstance<'_> {
    fn write(&mut self, out: &mut dyn Write, graph: &GraphType) -> Result<(u64, u64), BuildError> {
        let edges = Edges::new(self.program, graph, self.data)?;
        let counts = edges.count(&mut *self.progress);
        let (program, data) = (self.program, self.data);
        let (edges, counts) = (&edges, &counts);
        let progress = &mut *self.progress;
        // Text is made on a second thread while this one hands it to the
        // output: for a file, the kernel's copying of gigabytes then
        // overlaps with the formatting.
        let (devices, written) = std::thread::scope(|scope| {
            let (full, chunks) = mpsc::sync_channel::<Message>(4);
            let (recycle, empty) = mpsc::channel::<Vec<u8>>();
            let relay = full.clone();
            let producer = scope.spawn(move || {
                let mut sink = Sink {
                    buffer: Vec::with_capacity(BUFFER + 4096),
                    full,
                    empty,
                };
                let mut relay = Relay(relay);
                write_instance(&mut sink, program, graph, data, edges, counts, &mut relay)
            });
            let mut failed = None;
            for message in &chunks {
                match message {
                    Message::Chunk(mut chunk) => {
                        if let Err(error) = out.write_all(&chunk) {
                            failed = Some(error);
                            break;
                        }
                        chunk.clear();
                        let _ = recycle.send(chunk);
                    }
                    Message::Start(phase, total) => progress.start(phase, total),
                    Message::Advance(amount) => progress.advance(amount),
                    Message::Finish => progress.finish(),
                }
            }
            // Stops the producer at its next chunk if the output failed.
            drop(chunks);
            let result = producer.join().map_err(|_| {
                BuildError::Instance("internal error: the instance writer panicked".into())
            })?;
            if let Some(error) = failed {
                return Err(BuildError::Instance(format!(
                    "cannot write the graph instance: {error}"
                )));
            }
            let counted = counts.edges;
            result
                .map_err(|error| match error {
                    Failure::Io(error) => {
                        BuildError::Instance(format!("cannot write the graph instance: {error}"))
                    }
                    Failure::Build(error) => error,
                })
                .inspect(|(_, written)| debug_assert_eq!(*written, counted))
        })?;
        Ok((devices, written))
    }
}

/// What the formatting thread sends to the writing one.
enum Message {
    /// Text to write.
    Chunk(Vec<u8>),
    /// [`Progress::start`].
    Start(Phase, Option<u64>),
    /// [`Progress::advance`].
    Advance(u64),
    /// [`Progress::finish`].
    Finish,
}

/// Passes progress to the writing thread, which owns the real [`Progress`].
struct Relay(mpsc::SyncSender<Message>);

impl Progress for Relay {
    fn start(&mut self, phase: Phase, total: Option<u64>) {
        let _ = self.0.send(Message::Start(phase, total));
    }

    fn advance(&mut self, amount: u64) {
        let _ = self.0.send(Message::Advance(amount));
    }

    fn finish(&mut self) {
        let _ = self.0.send(Message::Finish);
    }
}

/// Why writing stopped.
enum Failure {
    Io(io::Error),
    Build(BuildError),
}

impl From<io::Error> for Failure {
    fn from(error: io::Error) -> Failure {
        Failure::Io(error)
    }
}

impl From<BuildError> for Failure {
    fn from(error: BuildError) -> Failure {
        Failure::Build(error)
    }
}

/// Text gathered in large chunks for the writing thread.
struct Sink {
    buffer: Vec<u8>,
    /// To the writing thread.
    full: mpsc::SyncSender<Message>,
    /// Chunks written, to fill again.
    empty: mpsc::Receiver<Vec<u8>>,
}

impl Sink {
    #[inline]
    fn bytes(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    #[inline]
    fn number(&mut self, n: u32) {
        let mut text = itoa::Buffer::new();
        self.buffer.extend_from_slice(text.format(n).as_bytes());
    }

    #[inline]
    fn spill(&mut self) -> io::Result<()> {
        if self.buffer.len() >= BUFFER {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands the text gathered so far to the writing thread.
    fn flush(&mut self) -> io::Result<()> {
        let next = self
            .empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BUFFER + 4096));
        let chunk = std::mem::replace(&mut self.buffer, next);
        self.full
            .send(Message::Chunk(chunk))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the output was closed"))
    }
}

/// The id of a set's devices split around the element number, from
/// [`names::set_device`]: `cells_` + 42 + ``.
#[derive(Clone, Debug)]
struct DeviceId {
    prefix: String,
    suffix: String,
}

impl DeviceId {
    fn of(set: &str) -> DeviceId {
        DeviceId::split(|index| names::set_device(set, index))
    }

    /// The ids of the aggregators of invocation `inv`'s tree.
    fn tree(inv: &str) -> DeviceId {
        DeviceId::split(|index| names::tree_device(inv, index))
    }

    fn split(make: impl Fn(usize) -> String) -> DeviceId {
        let zero = make(0);
        let one = make(1);
        let at = zero
            .bytes()
            .zip(one.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(zero.len());
        let id = DeviceId {
            prefix: zero[..at].to_owned(),
            suffix: zero.get(at + 1..).unwrap_or("").to_owned(),
        };
        debug_assert_eq!(id.with(12345), make(12345));
        id
    }

    fn with(&self, index: u32) -> String {
        format!("{}{index}{}", self.prefix, self.suffix)
    }
}

/// Which count an edge adds to at its destination.
#[derive(Clone, Copy, Debug)]
enum Counter {
    /// `{inv}_read_recv_total` of slot `.0` (begin and read edges).
    Read(usize),
    /// `{inv}_write_recv_total` of slot `.0` (write edges).
    Write(usize),
    /// The controller's `{inv}_end_total` of invocation `.0`.
    End(usize),
    /// An aggregator's `{inv}_end_total` in the tree of invocation `.0`.
    TreeEnd(usize),
    /// Nothing (a begin edge into an aggregator).
    None,
}

/// One kind of edge of one invocation, as text around the two element
/// numbers: `head` dst-number `middle` src-number `tail`, where a number is
/// left out for the controller.
#[derive(Debug)]
struct Template {
    head: Vec<u8>,
    middle: Vec<u8>,
    tail: Vec<u8>,
    dst_indexed: bool,
    src_indexed: bool,
    counter: Counter,
}

/// An endpoint of an edge: a set's devices, or the controller.
enum Endpoint<'a> {
    Set(&'a DeviceId),
    Controller,
}

impl Template {
    fn new(
        dst: &Endpoint<'_>,
        dst_pin: &str,
        src: &Endpoint<'_>,
        src_pin: &str,
        counter: Counter,
    ) -> Template {
        let (dst_prefix, dst_suffix, dst_indexed) = match dst {
            Endpoint::Set(id) => (id.prefix.as_str(), id.suffix.as_str(), true),
            Endpoint::Controller => (names::GLOBAL_DEVICE, "", false),
        };
        let (src_prefix, src_suffix, src_indexed) = match src {
            Endpoint::Set(id) => (id.prefix.as_str(), id.suffix.as_str(), true),
            Endpoint::Controller => (names::GLOBAL_DEVICE, "", false),
        };
        // poets-v4.md §5.1: `dstDev:dstPin-srcDev:srcPin`.
        let mut template = Template {
            head: format!("      <EdgeI path=\"{}", xml::attribute(dst_prefix)).into_bytes(),
            middle: format!(
                "{}:{}-{}",
                xml::attribute(dst_suffix),
                xml::attribute(dst_pin),
                xml::attribute(src_prefix)
            )
            .into_bytes(),
            tail: format!(
                "{}:{}\"/>\n",
                xml::attribute(src_suffix),
                xml::attribute(src_pin)
            )
            .into_bytes(),
            dst_indexed,
            src_indexed,
            counter,
        };
        // Text around an endpoint without a number is one piece.
        if !dst_indexed {
            let middle = std::mem::take(&mut template.middle);
            template.head.extend_from_slice(&middle);
        }
        if !src_indexed {
            let tail = std::mem::take(&mut template.tail);
            template.middle.extend_from_slice(&tail);
        }
        template
    }
}

/// Edges through a map: for iteration element `e`, the target
/// `targets[e * arity + index]`.
#[derive(Debug)]
struct Through<'d> {
    targets: &'d [u32],
    arity: usize,
    index: usize,
    template: Template,
}

/// The edges of one invocation.
#[derive(Debug)]
struct InvocationEdges<'d> {
    /// Elements of the iteration set.
    elements: u32,
    /// The devices taking part and the tree of its begin and end.
    tree: Tree,
    /// Each aggregator's parent, by number.
    parents: Vec<Parent>,
    /// Begin and end templates between an aggregator and its parent: the
    /// controller, or another aggregator.
    tree_templates: [(Template, Template); 2],
    /// Per involved set: the begin and the end template of its leaves.
    involved: Vec<(Template, Template)>,
    /// Indirect arguments in argument order, a read before a write for
    /// RW: `true` for a read (dst iteration element, src target), `false`
    /// for a write (dst target, src iteration element).
    indirect: Vec<(bool, Through<'d>)>,
}

/// Every edge of the instance, and where each device's counts live.
struct Edges<'d> {
    invocations: Vec<InvocationEdges<'d>>,
    /// Per slot (a set's device type and one of its plans): the set's size.
    slots: Vec<u32>,
    /// Slot of device type `d`'s plan `p`: `slot_of[d][p]`.
    slot_of: Vec<Vec<usize>>,
}

/// What the counting pass found.
struct Counts {
    /// Per slot: `{inv}_read_recv_total` of every element.
    read: Vec<Vec<u32>>,
    /// Per slot: `{inv}_write_recv_total` of every element.
    write: Vec<Vec<u32>>,
    /// Per invocation: `{inv}_end_total`.
    end: Vec<u64>,
    /// Per invocation: each aggregator's `{inv}_end_total`.
    tree: Vec<Vec<u32>>,
    /// Edges in all.
    edges: u64,
}

fn inconsistent(what: String) -> BuildError {
    BuildError::Instance(format!(
        "internal error: the graph type does not match the program: {what}"
    ))
}

fn has_pin(device: &DeviceType, pin: &str, input: bool) -> bool {
    let pins = if input {
        &device.inputs
    } else {
        &device.outputs
    };
    pins.iter().any(|p| p.name == pin)
}

impl<'d> Edges<'d> {
    fn new(
        program: &Program,
        graph: &GraphType,
        data: &'d InstanceData,
    ) -> Result<Edges<'d>, BuildError> {
        let mut slots = Vec::new();
        let mut slot_of = Vec::new();
        let mut device_ids: Vec<Option<DeviceId>> = vec![None; program.sets.len()];
        let mut device_index: Vec<Option<usize>> = vec![None; program.sets.len()];
        for (d, device) in graph.device_types.iter().enumerate() {
            let mut mine = Vec::new();
            if let DeviceKind::Set(set) = device.kind {
                device_ids[set.index()] = Some(DeviceId::of(&program.sets[set.index()].name));
                device_index[set.index()] = Some(d);
                for _ in &device.plans {
                    mine.push(slots.len());
                    slots.push(data.set_size(set));
                }
            }
            slot_of.push(mine);
        }
        let slot = |set: SetId,
                    invocation: op2_analysis::model::InvocationId|
         -> Result<(usize, &DeviceType, usize), BuildError> {
            let d = device_index[set.index()].ok_or_else(|| {
                inconsistent(format!(
                    "set `{}` has no device type",
                    program.sets[set.index()].name
                ))
            })?;
            let device = &graph.device_types[d];
            let p = device
                .plans
                .iter()
                .position(|p| p.invocation == invocation)
                .ok_or_else(|| {
                    inconsistent(format!(
                        "`{}` has no plan for invocation {}",
                        device.id, invocation.0
                    ))
                })?;
            Ok((slot_of[d][p], device, p))
        };
        let controller = graph
            .device_types
            .iter()
            .find(|d| d.kind == DeviceKind::Controller)
            .ok_or_else(|| inconsistent("no controller device type".into()))?;

        // The set size each map's targets were found within, so that a map
        // is scanned once, not once per argument that goes through it.
        let within: Vec<Cell<Option<u32>>> = vec![Cell::new(None); program.maps.len()];
        let mut invocations = Vec::new();
        for (number, plan) in graph.invocations.iter().enumerate() {
            let inv = plan.name.as_str();
            let invocation = &program.invocations[plan.id.index()];
            let tree = Tree::new(program, graph, data, plan);
            let parents = tree.aggregator_parents();
            let begin = names::begin(inv);
            let end = names::end(inv);
            if !has_pin(controller, &begin, false) || !has_pin(controller, &end, true) {
                return Err(inconsistent(format!("missing begin/end pins of `{inv}`")));
            }
            let tree_id = DeviceId::tree(inv);
            let begin_forward = names::begin_forward(inv);
            let end_forward = names::end_forward(inv);
            if tree.aggregators() > 0 && graph.tree_device_type(plan.id).is_none() {
                return Err(inconsistent(format!("no tree device type for `{inv}`")));
            }
            let aggregator = Endpoint::Set(&tree_id);
            // The parent of the leaves: the controller, or aggregators.
            let (parent, parent_begin, parent_end, leaf_end) = if tree.aggregators() > 0 {
                (&aggregator, &begin_forward, &end, Counter::TreeEnd(number))
            } else {
                (&Endpoint::Controller, &begin, &end, Counter::End(number))
            };
            let tree_templates = [
                (
                    Template::new(
                        &aggregator,
                        &begin,
                        &Endpoint::Controller,
                        &begin,
                        Counter::None,
                    ),
                    Template::new(
                        &Endpoint::Controller,
                        &end,
                        &aggregator,
                        &end_forward,
                        Counter::End(number),
                    ),
                ),
                (
                    Template::new(
                        &aggregator,
                        &begin,
                        &aggregator,
                        &begin_forward,
                        Counter::None,
                    ),
                    Template::new(
                        &aggregator,
                        &end,
                        &aggregator,
                        &end_forward,
                        Counter::TreeEnd(number),
                    ),
                ),
            ];
            let mut involved = Vec::new();
            for &set in &plan.involved_sets {
                let (slot, device, _) = slot(set, plan.id)?;
                let id = device_ids[set.index()]
                    .as_ref()
                    .expect("set device types have ids");
                if !has_pin(device, &begin, true) || !has_pin(device, &end, false) {
                    return Err(inconsistent(format!("missing begin/end pins of `{inv}`")));
                }
                involved.push((
                    Template::new(
                        &Endpoint::Set(id),
                        &begin,
                        parent,
                        parent_begin,
                        Counter::Read(slot),
                    ),
                    Template::new(parent, parent_end, &Endpoint::Set(id), &end, leaf_end),
                ));
            }
            let (iter_slot, iter_device, p) = slot(plan.set, plan.id)?;
            let iter_plan = &iter_device.plans[p];
            let iter_id = device_ids[plan.set.index()]
                .as_ref()
                .expect("set device types have ids");
            let through = |arg: usize, read: bool| -> Result<Through<'d>, BuildError> {
                let Some(ArgKind::IndirectDat { dat, map, index }) = invocation
                    .args
                    .get(arg)
                    .and_then(Option::as_ref)
                    .map(|a| a.kind)
                else {
                    return Err(inconsistent(format!(
                        "argument {arg} of `{inv}` is not indirect"
                    )));
                };
                let d = &program.dats[dat.index()];
                let target_set = d
                    .set
                    .ok_or_else(|| inconsistent(format!("dat `{}` has no set", d.name)))?;
                let (target_slot, target_device, _) = slot(target_set, plan.id)?;
                let target_id = device_ids[target_set.index()]
                    .as_ref()
                    .expect("set device types have ids");
                let targets = data.map(map).ok_or_else(|| {
                    inconsistent(format!(
                        "map `{}` has no data",
                        program.maps[map.index()].name
                    ))
                })?;
                let arity = program.maps[map.index()].arity as usize;
                let limit = data.set_size(target_set);
                let checked = within.get(map.index());
                if checked.is_none_or(|c| c.get() != Some(limit)) {
                    if targets.iter().any(|&t| t >= limit) {
                        return Err(BuildError::Instance(format!(
                            "map `{}` has a target outside set `{}` of {limit} elements (E702)",
                            program.maps[map.index()].name,
                            program.sets[target_set.index()].name
                        )));
                    }
                    if let Some(c) = checked {
                        c.set(Some(limit));
                    }
                }
                let template = if read {
                    let dst_pin = names::read_recv(inv, arg);
                    let src_pin = names::read_send(inv, &d.name);
                    if !has_pin(iter_device, &dst_pin, true)
                        || !has_pin(target_device, &src_pin, false)
                    {
                        return Err(inconsistent(format!(
                            "missing pins `{dst_pin}`/`{src_pin}`"
                        )));
                    }
                    Template::new(
                        &Endpoint::Set(iter_id),
                        &dst_pin,
                        &Endpoint::Set(target_id),
                        &src_pin,
                        Counter::Read(iter_slot),
                    )
                } else {
                    let dst_pin = names::write_recv(inv, &d.name);
                    let src_pin = names::write_send(inv, arg);
                    if !has_pin(target_device, &dst_pin, true)
                        || !has_pin(iter_device, &src_pin, false)
                    {
                        return Err(inconsistent(format!(
                            "missing pins `{dst_pin}`/`{src_pin}`"
                        )));
                    }
                    Template::new(
                        &Endpoint::Set(target_id),
                        &dst_pin,
                        &Endpoint::Set(iter_id),
                        &src_pin,
                        Counter::Write(target_slot),
                    )
                };
                Ok(Through {
                    targets,
                    arity,
                    index: index as usize,
                    template,
                })
            };
            let mut indirect = Vec::new();
            for (arg, _) in invocation.resolved_args() {
                for read in [true, false] {
                    let list = if read {
                        &iter_plan.read_recvs
                    } else {
                        &iter_plan.write_sends
                    };
                    if list.contains(&arg) {
                        indirect.push((read, through(arg, read)?));
                    }
                }
            }
            let elements = data.set_size(plan.set);
            for (_, t) in &indirect {
                if t.targets.len() != elements as usize * t.arity || t.index >= t.arity {
                    return Err(inconsistent(format!(
                        "a map of `{inv}` does not fit its set"
                    )));
                }
            }
            invocations.push(InvocationEdges {
                elements,
                tree,
                parents,
                tree_templates,
                involved,
                indirect,
            });
        }
        Ok(Edges {
            invocations,
            slots,
            slot_of,
        })
    }

    /// Calls `f(template, dst element, src element)` for every edge of
    /// invocation `number`, in the order they are written: begin edges,
    /// end edges, then per iteration element and indirect argument its read
    /// and its write (the order of `topology::for_each_edge`).
    #[inline]
    fn each<E>(
        &self,
        number: usize,
        mut f: impl FnMut(&Template, u32, u32) -> Result<(), E>,
    ) -> Result<(), E> {
        let invocation = &self.invocations[number];
        let tree = &invocation.tree;
        let parent_index = |parent: Parent| match parent {
            Parent::Controller => (0, 0),
            Parent::Aggregator(index) => (1, index),
        };
        for begin in [true, false] {
            for (index, parent) in invocation.parents.iter().enumerate() {
                let index = u32::try_from(index).unwrap_or(u32::MAX);
                let (kind, up) = parent_index(*parent);
                let (to, from) = &invocation.tree_templates[kind];
                if begin {
                    f(to, index, up)?;
                } else {
                    f(from, up, index)?;
                }
            }
            let mut k = 0u64;
            for ((_, leaves), (to, from)) in tree.sets.iter().zip(&invocation.involved) {
                for position in 0..leaves.len() {
                    let (_, up) = parent_index(tree.leaf_parent(k));
                    k += 1;
                    let element = leaves.get(position);
                    if begin {
                        f(to, element, up)?;
                    } else {
                        f(from, up, element)?;
                    }
                }
            }
        }
        if invocation.indirect.is_empty() {
            return Ok(());
        }
        for e in 0..invocation.elements {
            for (read, through) in &invocation.indirect {
                let target = through.targets[e as usize * through.arity + through.index];
                if *read {
                    f(&through.template, e, target)?;
                } else {
                    f(&through.template, target, e)?;
                }
            }
        }
        Ok(())
    }

    /// Edges of all invocations, for progress totals only.
    fn expected(&self) -> u64 {
        self.invocations
            .iter()
            .map(|i| {
                let devices = i.tree.leaves() + u64::from(i.tree.aggregators());
                2 * devices + u64::from(i.elements) * i.indirect.len() as u64
            })
            .sum()
    }

    /// The counting pass.
    fn count(&self, progress: &mut dyn Progress) -> Counts {
        progress.start(Phase::Counting, Some(self.expected()));
        let mut counts = Counts {
            read: self.slots.iter().map(|&n| vec![0; n as usize]).collect(),
            // The execute step counts as one write (compilation.md §5).
            write: self.slots.iter().map(|&n| vec![1; n as usize]).collect(),
            end: vec![0; self.invocations.len()],
            tree: self
                .invocations
                .iter()
                .map(|i| vec![0; i.tree.aggregators() as usize])
                .collect(),
            edges: 0,
        };
        for number in 0..self.invocations.len() {
            let mut ticks = 0u64;
            let _ = self.each(number, |template, dst, _| -> Result<(), ()> {
                match template.counter {
                    Counter::Read(slot) => counts.read[slot][dst as usize] += 1,
                    Counter::Write(slot) => counts.write[slot][dst as usize] += 1,
                    Counter::End(inv) => counts.end[inv] += 1,
                    Counter::TreeEnd(inv) => counts.tree[inv][dst as usize] += 1,
                    Counter::None => {}
                }
                counts.edges += 1;
                ticks += 1;
                if ticks == TICK {
                    progress.advance(TICK);
                    ticks = 0;
                }
                Ok(())
            });
            progress.advance(ticks);
        }
        progress.finish();
        counts
    }
}

/// A piece of an initialiser: fixed text, or something per element.
#[derive(Debug)]
enum Piece {
    Text(Vec<u8>),
    /// A count of slot `.1` (read counts when `.0`, else write counts).
    Count(bool, usize),
    /// The components of a dat given per element: `{v0,v1,…}`.
    Dat {
        dat: usize,
        dimension: u32,
    },
    /// The element's own index.
    Index,
    /// The target of entry `index` of map `map` for the element.
    MapTarget {
        map: usize,
        index: u32,
    },
}

/// What a graph property of the instance's `P` is.
#[derive(Clone, Copy)]
enum GraphProperty {
    /// Const number `.0`: `global_{C}`.
    Const(usize),
    /// The size of set number `.0`: `length_{S}`.
    Length(usize),
}

/// An initialiser as pieces.
#[derive(Debug, Default)]
struct Pieces(Vec<Piece>);

impl Pieces {
    fn text(&mut self, text: &[u8]) {
        if let Some(Piece::Text(last)) = self.0.last_mut() {
            last.extend_from_slice(text);
        } else {
            self.0.push(Piece::Text(text.to_vec()));
        }
    }

    fn piece(&mut self, piece: Piece) {
        self.0.push(piece);
    }
}

/// The value of a member of type `ty` that holds zero.
fn zero(ty: CType) -> Value {
    match ty {
        CType::Double => Value::Double(0.0),
        CType::Float => Value::Float(0.0),
        CType::I32 => Value::Int(0),
        CType::U32 => Value::Uint(0),
        CType::I64 => Value::Ll(0),
        CType::U64 => Value::Ull(0),
        CType::U8 => Value::Bool(false),
    }
}

/// A number for an initialiser (poets-v4.md §5.3), refused when NaN or
/// infinite; `origin` names where the value came from.
fn number(value: Value, origin: impl FnOnce() -> String) -> Result<String, BuildError> {
    let finite = match value {
        Value::Double(v) => v.is_finite(),
        Value::Float(v) => v.is_finite(),
        _ => true,
    };
    if finite {
        Ok(xml::number(value))
    } else {
        Err(BuildError::Instance(format!(
            "{}: {value} cannot be written in a POETS initialiser (NaN and infinity are not allowed)",
            origin()
        )))
    }
}

/// The text of a member with `values` (zero where short), as an item of an
/// initialiser: a bare number for a scalar, `{…}` for an array.
fn member_text(
    member: &Member,
    values: &[Value],
    origin: &dyn Fn(usize) -> String,
) -> Result<String, BuildError> {
    let item = |c: usize| -> Result<String, BuildError> {
        let value = values.get(c).copied().unwrap_or_else(|| zero(member.ty));
        number(value, || origin(c))
    };
    match member.length {
        None => item(0),
        Some(length) => {
            let items = (0..length as usize)
                .map(item)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(format!("{{{}}}", items.join(",")))
        }
    }
}

/// Text of a whole initialiser whose members are given by `value_of`.
fn initialiser(
    members: &[Member],
    mut value_of: impl FnMut(&Member) -> Result<String, BuildError>,
) -> Result<String, BuildError> {
    let mut out = String::from("{");
    for (k, member) in members.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        out.push_str(&value_of(member)?);
    }
    out.push('}');
    Ok(out)
}

fn zero_member(member: &Member) -> Result<String, BuildError> {
    member_text(member, &[], &|_| String::new())
}

/// Writes ` NAME="value"` when there are members; nothing otherwise (an
/// empty struct needs no initialiser).
fn attribute_text(name: &str, members: &[Member], text: &str) -> String {
    if members.is_empty() {
        String::new()
    } else {
        format!(" {name}=\"{text}\"")
    }
}

/// Pieces of an initialiser of a set device's members. Each member is
/// looked up by its name in maps made once per call from the device's
/// plans (its properties) or from `dats_of_set`, the dats of its set in
/// declaration order (its state), so the cost is linear in the members,
/// the plans' arguments and the dats.
#[allow(clippy::too_many_arguments)]
fn set_pieces(
    program: &Program,
    data: &InstanceData,
    device: &DeviceType,
    slots: &[usize],
    dats_of_set: &[usize],
    members: &[Member],
    properties: bool,
) -> Result<Pieces, BuildError> {
    let DeviceKind::Set(set) = device.kind else {
        unreachable!("set devices only")
    };
    // The maps of the properties: `{inv}_arg{k}_index` of the map targets
    // `idx` arguments pass (only an iterating plan has them, build.rs),
    // then the counts; the first of equal names is kept, as a search in
    // that order would find it.
    let mut targets = FxHashMap::default();
    let mut totals = FxHashMap::default();
    let mut dats = FxHashMap::default();
    if properties {
        for plan in device.plans.iter().filter(|plan| plan.iterates) {
            let invocation = &program.invocations[plan.invocation.index()];
            for (k, arg) in invocation.resolved_args() {
                if let ArgKind::Index(Some((map, index))) = arg.kind {
                    targets
                        .entry(names::index_property(&plan.name, k))
                        .or_insert((map.index(), index));
                }
            }
        }
        for (plan, &slot) in device.plans.iter().zip(slots) {
            totals
                .entry(names::read_recv_total(&plan.name))
                .or_insert((true, slot));
            totals
                .entry(names::write_recv_total(&plan.name))
                .or_insert((false, slot));
        }
    } else {
        for &index in dats_of_set {
            dats.entry(names::dat_state(&program.dats[index].name))
                .or_insert(index);
        }
    }
    let mut pieces = Pieces::default();
    pieces.text(b"{");
    for (k, member) in members.iter().enumerate() {
        if k > 0 {
            pieces.text(b",");
        }
        if properties {
            if member.name == names::INDEX_PROPERTY {
                pieces.piece(Piece::Index);
                continue;
            }
            if let Some(&(map, index)) = targets.get(member.name.as_str()) {
                pieces.piece(Piece::MapTarget { map, index });
                continue;
            }
            match totals.get(member.name.as_str()) {
                Some(&(read, slot)) if member.length.is_none() => {
                    pieces.piece(Piece::Count(read, slot));
                }
                _ => pieces.text(zero_member(member)?.as_bytes()),
            }
            continue;
        }
        let dat = dats
            .get(member.name.as_str())
            .map(|&index| (index, &program.dats[index]));
        match dat {
            Some((index, d)) => match &data.dats[index] {
                DatValues::Given(column)
                    if column.len() != data.set_size(set) as usize * d.ty.dimension as usize =>
                {
                    return Err(BuildError::Instance(format!(
                        "dat `{}` has {} values for {} elements of dimension {} (E703)",
                        d.name,
                        column.len(),
                        data.set_size(set),
                        d.ty.dimension
                    )));
                }
                DatValues::Given(_) => pieces.piece(Piece::Dat {
                    dat: index,
                    dimension: d.ty.dimension,
                }),
                DatValues::Uniform(values) => {
                    let text = member_text(member, values, &|c| {
                        format!("the initial value of dat `{}` (component {c})", d.name)
                    })?;
                    pieces.text(text.as_bytes());
                }
            },
            None => pieces.text(zero_member(member)?.as_bytes()),
        }
    }
    pieces.text(b"}");
    Ok(pieces)
}

/// Writes one element's initialiser from its pieces.
fn write_pieces(
    sink: &mut Sink,
    pieces: &Pieces,
    program: &Program,
    data: &InstanceData,
    counts: &Counts,
    element: u32,
) -> Result<(), BuildError> {
    for piece in &pieces.0 {
        match piece {
            Piece::Text(text) => sink.bytes(text),
            Piece::Count(read, slot) => {
                let counts = if *read { &counts.read } else { &counts.write };
                sink.number(counts[*slot][element as usize]);
            }
            Piece::Index => sink.number(element),
            Piece::MapTarget { map, index } => {
                let arity = program.maps[*map].arity;
                let targets = data
                    .map(op2_analysis::model::MapId(*map as u32))
                    .ok_or_else(|| {
                        BuildError::Instance(format!(
                            "map `{}` has no data (E701)",
                            program.maps[*map].name
                        ))
                    })?;
                let target = targets
                    .get((element * arity + index) as usize)
                    .copied()
                    .unwrap_or_default();
                sink.number(target);
            }
            Piece::Dat { dat, dimension } => {
                sink.bytes(b"{");
                for c in 0..*dimension {
                    if c > 0 {
                        sink.bytes(b",");
                    }
                    let value = data.dat_value(
                        op2_analysis::model::DatId(*dat as u32),
                        *dimension,
                        element,
                        c,
                    );
                    let text = number(value, || {
                        path(
                            Section::Dats,
                            &program.dats[*dat].name,
                            &[u64::from(element), u64::from(c)],
                        )
                    })?;
                    sink.bytes(text.as_bytes());
                }
                sink.bytes(b"}");
            }
        }
    }
    Ok(())
}

#[allow(clippy::too_many_lines)]
fn write_instance(
    sink: &mut Sink,
    program: &Program,
    graph: &GraphType,
    data: &InstanceData,
    edges: &Edges<'_>,
    counts: &Counts,
    progress: &mut dyn Progress,
) -> Result<(u64, u64), Failure> {
    // Every initialiser below looks its members up by name in a map made
    // once per write: a search of every declaration per member was
    // quadratic (40,000 consts took 25 s).
    //
    // The graph instance and its properties: consts and set sizes (a
    // const's name first, as the graph type declares them in that order).
    let mut graph_names = FxHashMap::default();
    for (index, c) in program.consts.iter().enumerate() {
        graph_names
            .entry(names::const_property(&c.name))
            .or_insert(GraphProperty::Const(index));
    }
    for (index, s) in program.sets.iter().enumerate() {
        graph_names
            .entry(names::length_property(&s.name))
            .or_insert(GraphProperty::Length(index));
    }
    let graph_p = initialiser(&graph.properties, |member| {
        match graph_names.get(member.name.as_str()) {
            Some(&GraphProperty::Const(index)) => {
                let name = &program.consts[index].name;
                member_text(
                    member,
                    data.const_value(op2_analysis::model::ConstId(index as u32)),
                    &|k| path(Section::Consts, name, &[k as u64]),
                )
            }
            Some(&GraphProperty::Length(index)) => {
                let size = data.set_size(SetId(index as u32));
                let size = i32::try_from(size).unwrap_or(i32::MAX);
                member_text(member, &[Value::Int(size)], &|_| String::new())
            }
            None => zero_member(member),
        }
    })?;
    sink.bytes(
        format!(
            "  <GraphInstance id=\"{}\" graphTypeId=\"{}\"{}>\n    <DeviceInstances>\n",
            xml::attribute(&instance_id(&graph.id)),
            xml::attribute(&graph.id),
            attribute_text("P", &graph.properties, &graph_p)
        )
        .as_bytes(),
    );

    let device_total: u64 = 1
        + graph
            .device_types
            .iter()
            .filter_map(|d| match d.kind {
                DeviceKind::Set(set) => Some(u64::from(data.set_size(set))),
                DeviceKind::Controller | DeviceKind::Aggregator(_) => None,
            })
            .sum::<u64>()
        + edges
            .invocations
            .iter()
            .map(|i| u64::from(i.tree.aggregators()))
            .sum::<u64>();
    progress.start(Phase::WritingDevices, Some(device_total));
    let mut devices = 0u64;

    // The controller: `{inv}_end_total` from the edges, the globals'
    // initial values, everything else zero.
    for device in graph
        .device_types
        .iter()
        .filter(|d| d.kind == DeviceKind::Controller)
    {
        let mut end_totals = FxHashMap::default();
        for (number, plan) in graph.invocations.iter().enumerate() {
            end_totals
                .entry(names::end_total(&plan.name))
                .or_insert(number);
        }
        let p = initialiser(&device.properties, |member| {
            let Some(&number) = end_totals.get(member.name.as_str()) else {
                return zero_member(member);
            };
            let plan = &graph.invocations[number];
            let total = u32::try_from(counts.end[number]).map_err(|_| {
                BuildError::Instance(format!(
                    "invocation `{}` involves {} devices, more than a POETS count can hold",
                    plan.name, counts.end[number]
                ))
            })?;
            member_text(member, &[Value::Uint(total)], &|_| String::new())
        })?;
        let mut globals = FxHashMap::default();
        for (index, g) in program.globals.iter().enumerate() {
            globals.entry(names::global_state(&g.name)).or_insert(index);
        }
        let s = initialiser(&device.state, |member| {
            let Some(&index) = globals.get(member.name.as_str()) else {
                return zero_member(member);
            };
            let name = &program.globals[index].name;
            member_text(
                member,
                data.global_value(op2_analysis::model::GlobalId(index as u32)),
                &|k| path(Section::Globals, name, &[k as u64]),
            )
        })?;
        sink.bytes(
            format!(
                "      <DevI id=\"{}\" type=\"{}\"{}{}/>\n",
                xml::attribute(names::GLOBAL_DEVICE),
                xml::attribute(&device.id),
                attribute_text("P", &device.properties, &p),
                attribute_text("S", &device.state, &s)
            )
            .as_bytes(),
        );
        devices += 1;
        progress.advance(1);
    }

    // The set devices, with the dats of each set found once.
    let mut dats_by_set = vec![Vec::new(); program.sets.len()];
    for (index, dat) in program.dats.iter().enumerate() {
        if let Some(list) = dat.set.and_then(|set| dats_by_set.get_mut(set.index())) {
            list.push(index);
        }
    }
    for (d, device) in graph.device_types.iter().enumerate() {
        let DeviceKind::Set(set) = device.kind else {
            continue;
        };
        let slots = &edges.slot_of[d];
        let dats_of_set = dats_by_set.get(set.index()).map_or(&[][..], Vec::as_slice);
        let id = DeviceId::of(&program.sets[set.index()].name);
        let p = set_pieces(
            program,
            data,
            device,
            slots,
            dats_of_set,
            &device.properties,
            true,
        )?;
        let s = set_pieces(
            program,
            data,
            device,
            slots,
            dats_of_set,
            &device.state,
            false,
        )?;
        let head = format!("      <DevI id=\"{}", xml::attribute(&id.prefix)).into_bytes();
        let mut middle = format!(
            "{}\" type=\"{}\"",
            xml::attribute(&id.suffix),
            xml::attribute(&device.id)
        );
        let has_p = !device.properties.is_empty();
        let has_s = !device.state.is_empty();
        if has_p {
            middle.push_str(" P=\"");
        }
        let between = if has_p && has_s {
            "\" S=\""
        } else if has_s {
            " S=\""
        } else {
            ""
        };
        let end = if has_p || has_s { "\"/>\n" } else { "/>\n" };
        let mut ticks = 0u64;
        for element in 0..data.set_size(set) {
            sink.bytes(&head);
            sink.number(element);
            sink.bytes(middle.as_bytes());
            if has_p {
                write_pieces(sink, &p, program, data, counts, element)?;
            }
            sink.bytes(between.as_bytes());
            if has_s {
                write_pieces(sink, &s, program, data, counts, element)?;
            }
            sink.bytes(end.as_bytes());
            sink.spill()?;
            ticks += 1;
            if ticks == TICK {
                progress.advance(TICK);
                ticks = 0;
            }
        }
        progress.advance(ticks);
        devices += u64::from(data.set_size(set));
    }
    // The aggregators of each invocation's tree: `{inv}_end_total` from
    // the edges, state zero.
    for (number, plan) in graph.invocations.iter().enumerate() {
        let aggregators = edges.invocations[number].tree.aggregators();
        // A tree with no aggregators (all its leaves the controller's
        // children) writes none, so its zero state is not made either.
        let Some(device) = graph.tree_device_type(plan.id).filter(|_| aggregators > 0) else {
            continue;
        };
        let id = DeviceId::tree(&plan.name);
        let s = initialiser(&device.state, zero_member)?;
        let head = format!("      <DevI id=\"{}", xml::attribute(&id.prefix));
        let middle = format!(
            "{}\" type=\"{}\" P=\"{{",
            xml::attribute(&id.suffix),
            xml::attribute(&device.id)
        );
        let tail = format!("}}\"{}/>\n", attribute_text("S", &device.state, &s));
        // A fetch's aggregators hold the items of their leaves,
        // `item_lo` and `item_hi` (crate::fetch).
        let ranges = plan
            .fetch
            .as_ref()
            .map(|fetch| (edges.invocations[number].tree.aggregator_leaves(), fetch));
        for index in 0..aggregators {
            sink.bytes(head.as_bytes());
            sink.number(index);
            sink.bytes(middle.as_bytes());
            match &ranges {
                Some((leaves, fetch)) => {
                    let (from, to) = leaves[index as usize];
                    let item = |leaf: u64| {
                        u32::try_from(leaf * u64::from(fetch.parts)).unwrap_or(u32::MAX)
                    };
                    sink.number(item(from));
                    sink.bytes(b",");
                    sink.number(item(to));
                }
                None => sink.number(counts.tree[number][index as usize]),
            }
            sink.bytes(tail.as_bytes());
            sink.spill()?;
        }
        progress.advance(u64::from(aggregators));
        devices += u64::from(aggregators);
    }
    sink.bytes(b"    </DeviceInstances>\n    <EdgeInstances>\n");
    progress.finish();

    // The edges, in the order they were counted.
    progress.start(Phase::WritingEdges, Some(counts.edges));
    let mut written = 0u64;
    for number in 0..edges.invocations.len() {
        let mut ticks = 0u64;
        edges.each(number, |template, dst, src| -> io::Result<()> {
            sink.bytes(&template.head);
            if template.dst_indexed {
                sink.number(dst);
                sink.bytes(&template.middle);
            }
            // Without a destination number, `middle` is part of `head`;
            // without a source number, `tail` is part of `middle`.
            if template.src_indexed {
                sink.number(src);
                sink.bytes(&template.tail);
            }
            sink.spill()?;
            ticks += 1;
            if ticks == TICK {
                progress.advance(TICK);
                written += TICK;
                ticks = 0;
            }
            Ok(())
        })?;
        progress.advance(ticks);
        written += ticks;
    }
    sink.bytes(b"    </EdgeInstances>\n  </GraphInstance>\n");
    sink.flush()?;
    progress.finish();
    Ok((devices, written))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_ids_split_around_the_element_number() {
        for set in ["cells", "s1", "a_0", "x10"] {
            let id = DeviceId::of(set);
            for index in [0, 1, 9, 10, 123_456, u32::MAX] {
                assert_eq!(id.with(index), names::set_device(set, index as usize));
            }
        }
    }

    #[test]
    fn edge_templates_follow_the_path_syntax() {
        let cells = DeviceId::of("cells");
        let template = Template::new(
            &Endpoint::Controller,
            "inv_end",
            &Endpoint::Set(&cells),
            "inv_end",
            Counter::End(0),
        );
        let mut text = template.head.clone();
        text.extend_from_slice(b"7");
        text.extend_from_slice(&template.tail);
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "      <EdgeI path=\"global:inv_end-cells_7:inv_end\"/>\n"
        );
    }
}
