//! The code generator as the language server keeps it between versions of
//! a program: [`Generator`].

use std::fmt;
use std::sync::Arc;

use op2_analysis::Analysis;
use op2_analysis::model::Program;

use crate::build;
use crate::kernels::KernelCache;
use crate::model::{Controller, GraphType};
use crate::same;

/// Builds graph types, keeping work between builds so that building the
/// next version of a program after a small edit costs a fraction of the
/// first build. The language server builds the graph type after every edit,
/// for the limits of the format (W801, E802) and the pins shown in hovers.
///
/// It keeps two things, each used only while what it was made from is
/// unchanged:
///
/// - the printed C++ of each kernel function, while the kernel's lowered
///   body, name, parameters (with their constness) and the consts it uses
///   are the same; the functions of kernels a build no longer prints are
///   dropped;
/// - the last graph type but for its kernel functions and `main`'s state
///   machine, while the program is the same apart from source positions and
///   kernel bodies (the common case while typing inside a kernel).
///
/// It holds at most one program's worth of each. Whatever it kept, its
/// result equals that of [`crate::graph_type`] on the same analysis, which
/// is the build of a generator that has kept nothing.
pub struct Generator {
    kernels: KernelCache,
    last: Option<LastBuild>,
    graphs_reused: usize,
    graphs_built: usize,
    /// The fan limit of the graphs it builds.
    fan_limit: u32,
}

impl Default for Generator {
    fn default() -> Generator {
        Generator {
            kernels: KernelCache::default(),
            last: None,
            graphs_reused: 0,
            graphs_built: 0,
            fan_limit: crate::model::DEFAULT_FAN_LIMIT,
        }
    }
}

/// What a [`Generator`] reused over its life, for tests and benchmarks of
/// what it keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GeneratorStats {
    /// Kernel functions whose printed C++ was reused.
    pub kernels_reused: usize,
    /// Kernel functions printed.
    pub kernels_printed: usize,
    /// Builds that reused the last graph type but for its kernel functions.
    pub graphs_reused: usize,
    /// Builds from scratch (but for the kernel functions kept).
    pub graphs_built: usize,
}

/// The graph type last built, without its kernel functions and controller
/// (kept empty), and what it was built from.
struct LastBuild {
    program: Arc<Program>,
    graph_id: String,
    graph: GraphType,
}

impl fmt::Debug for Generator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Generator")
            .field("kernel_functions", &self.kernels.len())
            .field("last_graph", &self.last.as_ref().map(|l| &l.graph.id))
            .finish_non_exhaustive()
    }
}

impl Generator {
    /// A generator that has kept nothing.
    pub fn new() -> Generator {
        Generator::default()
    }

    /// A generator whose graphs have trees of at most `fan_limit` edges per
    /// begin and end pin (0: the flat controller).
    pub fn with_fan_limit(fan_limit: u32) -> Generator {
        Generator {
            fan_limit,
            ..Generator::default()
        }
    }

    /// Builds the graph type of an analysed program that has no errors,
    /// reusing what earlier builds made where it still holds.
    pub fn graph_type(&mut self, analysis: &Analysis, graph_id: &str) -> GraphType {
        // A `fetch` is built from its invocation (op2_analysis::fetch), lowered
        // once per analysis: the same analysis gives the same `Arc`.
        let lowered = analysis.lowered();
        let program = lowered.program();
        if let Some(last) = &mut self.last
            && last.graph_id == graph_id
            && last.graph.fan_limit == self.fan_limit
            && (Arc::ptr_eq(&last.program, program)
                || same::program_but_kernel_bodies(&last.program, program))
        {
            last.program = Arc::clone(program);
            self.graphs_reused += 1;
            // `main`'s blocks hold its statements with their source ranges,
            // which move with edits above it: compiled again, as is cheap.
            let controller = build::controller(program);
            let shared_code =
                build::shared_code(program, &last.graph.invocations, &mut self.kernels);
            return with_parts(&last.graph, shared_code, controller);
        }
        let graph = build::build(lowered, graph_id, self.fan_limit, &mut self.kernels);
        self.graphs_built += 1;
        self.last = Some(LastBuild {
            program: Arc::clone(program),
            graph_id: graph_id.to_owned(),
            graph: with_parts(&graph, String::new(), Controller::default()),
        });
        graph
    }

    /// What this generator reused over its life.
    pub fn stats(&self) -> GeneratorStats {
        let (kernels_reused, kernels_printed) = self.kernels.stats();
        GeneratorStats {
            kernels_reused,
            kernels_printed,
            graphs_reused: self.graphs_reused,
            graphs_built: self.graphs_built,
        }
    }
}

/// A copy of `graph` with another shared code and controller.
fn with_parts(graph: &GraphType, shared_code: String, controller: Controller) -> GraphType {
    let GraphType {
        id,
        properties,
        shared_code: _,
        message_types,
        device_types,
        invocations,
        controller: _,
        fan_limit,
    } = graph;
    GraphType {
        id: id.clone(),
        properties: properties.clone(),
        shared_code,
        message_types: message_types.clone(),
        device_types: device_types.clone(),
        invocations: invocations.clone(),
        controller,
        fan_limit: *fan_limit,
    }
}
