//! The graph instance of compilation.md §7.
//!
//! [`GraphInstance`] writes the `<GraphInstance>` for a graph type and
//! validated [`op2_instance::InstanceData`], streaming it through
//! [`output::write_graph`](crate::output::write_graph): a device per element
//! of every set with a device type plus the controller, the edges the maps
//! imply, and device properties counted from those same edges. It reports
//! its phases to the same [`op2_instance::Progress`] as reading does.

mod write;

pub use write::GraphInstance;

/// The id of the graph instance of graph type `graph`: `{graph}_instance`
/// (compilation.md §7).
pub fn instance_id(graph: &str) -> String {
    crate::names::graph_instance(graph)
}
