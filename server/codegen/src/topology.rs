//! The devices and edges of a graph instance (compilation.md §7), as one
//! enumeration that the XML writer streams and the simulator runs, so that
//! the edges and the counts derived from them can never disagree.

use op2_analysis::model::{ArgKind, InvocationId, Program, SetId};
use op2_syntax::ast::AccessMode;

use crate::model::{GraphType, InvocationPlan, PinRole};
use op2_instance::InstanceData;

/// A device of the instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceRef {
    /// The controller `global`.
    Global,
    /// Element `index` of a set: device `S_index`.
    Element {
        /// The set.
        set: SetId,
        /// The element.
        index: u32,
    },
    /// Aggregator `index` of an invocation's tree: device `tree_{inv}_{index}`.
    Aggregator {
        /// The invocation.
        invocation: InvocationId,
        /// Its number in the tree, from the top level down.
        index: u32,
    },
}

/// One edge: a message sent on `source`'s pin arrives at `destination`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The invocation the edge serves.
    pub invocation: InvocationId,
    /// The sending device and its output pin.
    pub source: (DeviceRef, PinRole),
    /// The receiving device and its input pin.
    pub destination: (DeviceRef, PinRole),
}

/// The elements of one involved set that take part in an invocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Leaves {
    /// Every element, `0..n`.
    All(u32),
    /// These elements, in increasing order.
    Some(Vec<u32>),
}

impl Leaves {
    /// How many elements take part.
    pub fn len(&self) -> u32 {
        match self {
            Leaves::All(n) => *n,
            Leaves::Some(list) => u32::try_from(list.len()).unwrap_or(u32::MAX),
        }
    }

    /// True when no element takes part.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element at position `k`.
    pub fn get(&self, k: u32) -> u32 {
        match self {
            Leaves::All(_) => k,
            Leaves::Some(list) => list[k as usize],
        }
    }
}

/// The parent of a device in an invocation's tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parent {
    /// The controller.
    Controller,
    /// The aggregator with this number.
    Aggregator(u32),
}

/// The devices that take part in one invocation and the tree that carries
/// its `{inv}_begin` and `{inv}_end` (compilation.md §11). With fan limit 0
/// it is the flat controller of §7: every element of every involved set is
/// a leaf, and the controller is the parent of all. With fan limit K, the
/// elements of sets other than the iteration set that no edge of the
/// invocation reaches are left out (they have nothing to send, receive or
/// change), and levels of aggregators give every device at most K
/// children: the leaves are grouped K by K in order under the aggregators
/// of level 0, those K by K under level 1, and so on until at most K remain
/// under the controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    /// The invocation.
    pub invocation: InvocationId,
    /// Per involved set, in plan order, the elements that take part.
    pub sets: Vec<(SetId, Leaves)>,
    /// Children per device at most; 0 for the flat controller.
    pub fan_limit: u32,
    /// Aggregators per level, from the parents of the leaves (level 0) up.
    pub levels: Vec<u32>,
}

impl Tree {
    /// The tree of `plan` on `data` for `graph`'s fan limit.
    pub fn new(
        program: &Program,
        graph: &GraphType,
        data: &InstanceData,
        plan: &InvocationPlan,
    ) -> Tree {
        let fan_limit = graph.fan_limit;
        let sets: Vec<(SetId, Leaves)> = if fan_limit == 0 {
            plan.involved_sets
                .iter()
                .map(|s| (*s, Leaves::All(data.set_size(*s))))
                .collect()
        } else {
            reached(program, data, plan)
        };
        let leaves: u64 = sets.iter().map(|(_, l)| u64::from(l.len())).sum();
        let levels = levels(fan_limit, leaves);
        Tree {
            invocation: plan.id,
            sets,
            fan_limit,
            levels,
        }
    }

    fn k(&self) -> u32 {
        self.fan_limit.max(2)
    }

    /// Levels of aggregators between the controller and the leaves.
    pub fn depth(&self) -> usize {
        self.levels.len()
    }

    /// Aggregators in all.
    pub fn aggregators(&self) -> u32 {
        self.levels.iter().sum()
    }

    /// Devices that take part (the leaves).
    pub fn leaves(&self) -> u64 {
        self.sets.iter().map(|(_, l)| u64::from(l.len())).sum()
    }

    /// The number of aggregator `i` of `level`: numbers run from the top
    /// level down.
    fn number(&self, level: usize, i: u32) -> u32 {
        self.levels[level + 1..].iter().sum::<u32>() + i
    }

    /// The parent of the leaf at position `k` (over all sets in order).
    pub fn leaf_parent(&self, k: u64) -> Parent {
        if self.levels.is_empty() {
            Parent::Controller
        } else {
            let i = u32::try_from(k / u64::from(self.k())).unwrap_or(u32::MAX);
            Parent::Aggregator(self.number(0, i))
        }
    }

    /// Each aggregator's leaves, by number: the positions `[from, to)` of
    /// the leaves below it. The leaves are grouped in order, so they are
    /// contiguous: aggregator `i` of level `l` has `[i × K^(l+1),
    /// (i + 1) × K^(l+1))`, cut at the number of leaves.
    pub fn aggregator_leaves(&self) -> Vec<(u64, u64)> {
        let leaves = self.leaves();
        let k = u64::from(self.k());
        let mut ranges = Vec::with_capacity(self.aggregators() as usize);
        for level in (0..self.levels.len()).rev() {
            let span = u32::try_from(level + 1)
                .ok()
                .and_then(|e| k.checked_pow(e))
                .unwrap_or(u64::MAX);
            for i in 0..u64::from(self.levels[level]) {
                let from = i.saturating_mul(span).min(leaves);
                let to = (i + 1).saturating_mul(span).min(leaves);
                ranges.push((from, to));
            }
        }
        ranges
    }

    /// Each aggregator's parent, by number.
    pub fn aggregator_parents(&self) -> Vec<Parent> {
        let mut parents = Vec::with_capacity(self.aggregators() as usize);
        for level in (0..self.levels.len()).rev() {
            for i in 0..self.levels[level] {
                parents.push(if level + 1 == self.levels.len() {
                    Parent::Controller
                } else {
                    Parent::Aggregator(self.number(level + 1, i / self.k()))
                });
            }
        }
        parents
    }
}

/// Aggregators per level, from the parents of the leaves up, of a tree over
/// `leaves` devices with at most `fan_limit` children each (none for the
/// flat controller, `fan_limit` 0). A fan limit of 1 could not shrink a
/// level: it is taken as 2.
pub fn levels(fan_limit: u32, leaves: u64) -> Vec<u32> {
    let mut levels = Vec::new();
    if fan_limit > 0 {
        let k = u64::from(fan_limit.max(2));
        let mut n = leaves;
        while n > k {
            n = n.div_ceil(k);
            levels.push(u32::try_from(n).unwrap_or(u32::MAX));
        }
    }
    levels
}

/// The most devices a tree of `depth` levels of aggregators holds with at
/// most `fan_limit` children each: K^(depth+1), saturating; unbounded
/// (`u64::MAX`) for the flat controller.
pub fn most_leaves(fan_limit: u32, depth: u32) -> u64 {
    if fan_limit == 0 {
        return u64::MAX;
    }
    u64::from(fan_limit.max(2))
        .checked_pow(depth + 1)
        .unwrap_or(u64::MAX)
}

/// Per involved set of `plan`, its elements that take part when pruning:
/// every element of the iteration set, and of the other sets those that
/// an indirect argument of the invocation reaches through its map.
fn reached(program: &Program, data: &InstanceData, plan: &InvocationPlan) -> Vec<(SetId, Leaves)> {
    let invocation = &program.invocations[plan.id.index()];
    let elements = data.set_size(plan.set) as usize;
    plan.involved_sets
        .iter()
        .map(|&set| {
            let size = data.set_size(set);
            if set == plan.set {
                return (set, Leaves::All(size));
            }
            let mut marked = vec![false; size as usize];
            for (_, resolved) in invocation.resolved_args() {
                let ArgKind::IndirectDat { dat, map, index } = resolved.kind else {
                    continue;
                };
                let (Some(target_set), Some(targets)) =
                    (program.dats[dat.index()].set, data.map(map))
                else {
                    continue;
                };
                if target_set != set {
                    continue;
                }
                let arity = program.maps[map.index()].arity as usize;
                for e in 0..elements {
                    if let Some(slot) = targets
                        .get(e * arity + index as usize)
                        .and_then(|&t| marked.get_mut(t as usize))
                    {
                        *slot = true;
                    }
                }
            }
            let list: Vec<u32> = (0..size).filter(|&i| marked[i as usize]).collect();
            if list.len() == size as usize {
                (set, Leaves::All(size))
            } else {
                (set, Leaves::Some(list))
            }
        })
        .collect()
}

/// Visits every edge of the instance, invocation by invocation in program
/// order: begin edges, then end edges, then indirect reads and writes by
/// iteration element and argument.
pub fn for_each_edge(
    program: &Program,
    graph: &GraphType,
    data: &InstanceData,
    mut visit: impl FnMut(Edge),
) {
    for plan in &graph.invocations {
        let tree = Tree::new(program, graph, data, plan);
        for_each_edge_of(program, plan, &tree, data, &mut visit);
    }
}

/// The edges of one invocation with its tree: begin edges to every
/// aggregator (by number) and every leaf, end edges from them in the same
/// order, then the indirect edges.
pub fn for_each_edge_of(
    program: &Program,
    plan: &InvocationPlan,
    tree: &Tree,
    data: &InstanceData,
    visit: &mut impl FnMut(Edge),
) {
    let id = plan.id;
    let parents = tree.aggregator_parents();
    let parent_ref = |parent: Parent| match parent {
        Parent::Controller => DeviceRef::Global,
        Parent::Aggregator(index) => DeviceRef::Aggregator {
            invocation: id,
            index,
        },
    };
    let aggregator = |index: usize| DeviceRef::Aggregator {
        invocation: id,
        index: u32::try_from(index).unwrap_or(u32::MAX),
    };
    for begin in [true, false] {
        for (index, parent) in parents.iter().enumerate() {
            let (up, up_role) = match parent {
                Parent::Controller if begin => (DeviceRef::Global, PinRole::ControllerBegin(id)),
                Parent::Controller => (DeviceRef::Global, PinRole::ControllerEnd(id)),
                Parent::Aggregator(_) if begin => {
                    (parent_ref(*parent), PinRole::TreeBeginForward(id))
                }
                Parent::Aggregator(_) => (parent_ref(*parent), PinRole::TreeEnd(id)),
            };
            let down = aggregator(index);
            visit(if begin {
                Edge {
                    invocation: id,
                    source: (up, up_role),
                    destination: (down, PinRole::TreeBegin(id)),
                }
            } else {
                Edge {
                    invocation: id,
                    source: (down, PinRole::TreeEndForward(id)),
                    destination: (up, up_role),
                }
            });
        }
        let mut k = 0u64;
        for (set, leaves) in &tree.sets {
            for position in 0..leaves.len() {
                let device = DeviceRef::Element {
                    set: *set,
                    index: leaves.get(position),
                };
                let parent = tree.leaf_parent(k);
                k += 1;
                let up = parent_ref(parent);
                visit(match (begin, parent) {
                    (true, Parent::Controller) => Edge {
                        invocation: id,
                        source: (up, PinRole::ControllerBegin(id)),
                        destination: (device, PinRole::Begin(id)),
                    },
                    (true, Parent::Aggregator(_)) => Edge {
                        invocation: id,
                        source: (up, PinRole::TreeBeginForward(id)),
                        destination: (device, PinRole::Begin(id)),
                    },
                    (false, Parent::Controller) => Edge {
                        invocation: id,
                        source: (device, PinRole::End(id)),
                        destination: (up, PinRole::ControllerEnd(id)),
                    },
                    (false, Parent::Aggregator(_)) => Edge {
                        invocation: id,
                        source: (device, PinRole::End(id)),
                        destination: (up, PinRole::TreeEnd(id)),
                    },
                });
            }
        }
    }
    indirect_edges(program, plan, data, visit);
}

fn indirect_edges(
    program: &Program,
    plan: &InvocationPlan,
    data: &InstanceData,
    visit: &mut impl FnMut(Edge),
) {
    let id = plan.id;
    let invocation = &program.invocations[id.index()];
    for element in 0..data.set_size(plan.set) {
        let iteration = DeviceRef::Element {
            set: plan.set,
            index: element,
        };
        for (arg, resolved) in invocation.resolved_args() {
            let ArgKind::IndirectDat { dat, map, index } = resolved.kind else {
                continue;
            };
            let (Some(target_set), Some(targets)) = (program.dats[dat.index()].set, data.map(map))
            else {
                continue;
            };
            let arity = program.maps[map.index()].arity as usize;
            let target = targets[element as usize * arity + index as usize];
            let target = DeviceRef::Element {
                set: target_set,
                index: target,
            };
            if matches!(resolved.mode, AccessMode::Read | AccessMode::Rw) {
                visit(Edge {
                    invocation: id,
                    source: (target, PinRole::DatReadSend(id, dat)),
                    destination: (iteration, PinRole::ArgReadRecv(id, arg)),
                });
            }
            if matches!(
                resolved.mode,
                AccessMode::Rw | AccessMode::Write | AccessMode::Inc
            ) {
                let add = resolved.mode == AccessMode::Inc;
                visit(Edge {
                    invocation: id,
                    source: (iteration, PinRole::ArgWriteSend(id, arg)),
                    destination: (
                        target,
                        PinRole::DatWriteRecv {
                            invocation: id,
                            dat,
                            add,
                        },
                    ),
                });
            }
        }
    }
}

/// The count properties of every device, derived from the edges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counts {
    /// Per invocation (graph order) and involved set (plan order): per
    /// element, `{inv}_read_recv_total`.
    pub read_recv_total: Vec<Vec<Vec<u32>>>,
    /// Same layout: `{inv}_write_recv_total`.
    pub write_recv_total: Vec<Vec<Vec<u32>>>,
    /// Per invocation: `{inv}_end_total`.
    pub end_total: Vec<u32>,
    /// Per invocation: the `{inv}_end_total` of each aggregator, by number.
    pub tree_end_total: Vec<Vec<u32>>,
    /// Per invocation: its tree.
    pub trees: Vec<Tree>,
}

impl Counts {
    /// Counts the messages each device receives, from the edges.
    pub fn new(program: &Program, graph: &GraphType, data: &InstanceData) -> Counts {
        let shape = |plan: &InvocationPlan, first: u32| -> Vec<Vec<u32>> {
            plan.involved_sets
                .iter()
                .map(|s| vec![first; data.set_size(*s) as usize])
                .collect()
        };
        let trees: Vec<Tree> = graph
            .invocations
            .iter()
            .map(|plan| Tree::new(program, graph, data, plan))
            .collect();
        let mut counts = Counts {
            // The begin edge counts as a read (compilation.md §4); a device
            // left out of the tree has none. The execute step counts as a
            // write.
            read_recv_total: graph.invocations.iter().map(|p| shape(p, 0)).collect(),
            write_recv_total: graph.invocations.iter().map(|p| shape(p, 1)).collect(),
            end_total: vec![0; graph.invocations.len()],
            tree_end_total: trees
                .iter()
                .map(|t| vec![0; t.aggregators() as usize])
                .collect(),
            trees: Vec::new(),
        };
        let position = |id: InvocationId| {
            graph
                .invocations
                .iter()
                .position(|p| p.id == id)
                .unwrap_or(0)
        };
        let mut visit = |edge: Edge| {
            let plan_index = position(edge.invocation);
            let plan = &graph.invocations[plan_index];
            let (device, role) = edge.destination;
            match (device, role) {
                (DeviceRef::Global, PinRole::ControllerEnd(_)) => counts.end_total[plan_index] += 1,
                (DeviceRef::Aggregator { index, .. }, PinRole::TreeEnd(_)) => {
                    if let Some(total) = counts.tree_end_total[plan_index].get_mut(index as usize) {
                        *total += 1;
                    }
                }
                (
                    DeviceRef::Element { set, index },
                    PinRole::ArgReadRecv(..) | PinRole::Begin(_),
                ) => {
                    if let Some(s) = plan.involved_sets.iter().position(|x| *x == set) {
                        counts.read_recv_total[plan_index][s][index as usize] += 1;
                    }
                }
                (DeviceRef::Element { set, index }, PinRole::DatWriteRecv { .. }) => {
                    if let Some(s) = plan.involved_sets.iter().position(|x| *x == set) {
                        counts.write_recv_total[plan_index][s][index as usize] += 1;
                    }
                }
                _ => {}
            }
        };
        for (plan, tree) in graph.invocations.iter().zip(&trees) {
            for_each_edge_of(program, plan, tree, data, &mut visit);
        }
        counts.trees = trees;
        counts
    }

    /// `{inv}_read_recv_total` of a device, for the invocation at
    /// `plan_index` in the graph.
    pub fn read_total(&self, graph: &GraphType, plan_index: usize, set: SetId, index: u32) -> u32 {
        let s = graph.invocations[plan_index]
            .involved_sets
            .iter()
            .position(|x| *x == set);
        s.map_or(0, |s| self.read_recv_total[plan_index][s][index as usize])
    }

    /// `{inv}_write_recv_total` of a device.
    pub fn write_total(&self, graph: &GraphType, plan_index: usize, set: SetId, index: u32) -> u32 {
        let s = graph.invocations[plan_index]
            .involved_sets
            .iter()
            .position(|x| *x == set);
        s.map_or(0, |s| self.write_recv_total[plan_index][s][index as usize])
    }
}
