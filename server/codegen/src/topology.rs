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
        let id = plan.id;
        for set in &plan.involved_sets {
            for index in 0..data.set_size(*set) {
                let device = DeviceRef::Element { set: *set, index };
                visit(Edge {
                    invocation: id,
                    source: (DeviceRef::Global, PinRole::ControllerBegin(id)),
                    destination: (device, PinRole::Begin(id)),
                });
            }
        }
        for set in &plan.involved_sets {
            for index in 0..data.set_size(*set) {
                let device = DeviceRef::Element { set: *set, index };
                visit(Edge {
                    invocation: id,
                    source: (device, PinRole::End(id)),
                    destination: (DeviceRef::Global, PinRole::ControllerEnd(id)),
                });
            }
        }
        indirect_edges(program, plan, data, &mut visit);
    }
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
}

impl Counts {
    /// Counts the messages each device receives, from the edges.
    pub fn new(program: &Program, graph: &GraphType, data: &InstanceData) -> Counts {
        let shape = |plan: &InvocationPlan| -> Vec<Vec<u32>> {
            plan.involved_sets
                .iter()
                .map(|s| vec![1; data.set_size(*s) as usize])
                .collect()
        };
        let mut counts = Counts {
            read_recv_total: graph.invocations.iter().map(shape).collect(),
            write_recv_total: graph.invocations.iter().map(shape).collect(),
            end_total: vec![0; graph.invocations.len()],
        };
        let position = |id: InvocationId| {
            graph
                .invocations
                .iter()
                .position(|p| p.id == id)
                .unwrap_or(0)
        };
        for_each_edge(program, graph, data, |edge| {
            let plan_index = position(edge.invocation);
            let plan = &graph.invocations[plan_index];
            let (device, role) = edge.destination;
            match (device, role) {
                (DeviceRef::Global, PinRole::ControllerEnd(_)) => counts.end_total[plan_index] += 1,
                (DeviceRef::Element { set, index }, PinRole::ArgReadRecv(..)) => {
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
        });
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
