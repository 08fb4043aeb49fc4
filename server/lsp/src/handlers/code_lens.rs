//! Code lenses over each par_loop (compilation.md §8): the pins, state
//! members and messages per iteration element the invocation costs and
//! when its begin and end trees grow a level, with
//! the command `op2.showDeviceType` that opens the generated device type of
//! its iteration set; and that device type as text.

use op2_analysis::model::{SetId, Symbol};
use op2_codegen::names;
use op2_syntax::{FileId, TextRange};
use tower_lsp_server::lsp_types::{CodeLens, Command};

use super::Context;
use crate::ide::generated;
use crate::server::commands;

/// One lens per par_loop of the document, on its first line. Without a
/// graph (the program has errors) the lenses stay, saying so, so that the
/// text does not jump while typing.
pub fn code_lenses(context: &Context<'_>) -> Option<Vec<CodeLens>> {
    let program = &context.analysed.analysis.program;
    let graph = context.analysed.graph.as_ref();
    let all_counts = graph.map(|g| generated::all_invocation_counts(program, g));
    let trees = graph.map(generated::TreeIndex::new);
    let mut lenses = Vec::new();
    for (index, invocation) in program.invocations.iter().enumerate() {
        if invocation.location.file != FileId::MAIN {
            continue;
        }
        let start = invocation.location.range.start;
        let range = context.range(TextRange::new(start, start));
        let counts = all_counts
            .as_ref()
            .and_then(|c| c.get(index))
            .and_then(Option::as_ref);
        let id = op2_analysis::model::InvocationId(u32::try_from(index).unwrap_or(u32::MAX));
        let tree = trees.as_ref().and_then(|t| t.summary(id));
        let title = match &counts {
            Some(counts) => format!(
                "{} pins · {} state · {} messages/element · {}",
                counts.pins(),
                counts.state(),
                counts.messages_per_element(),
                tree.as_ref().map_or_else(String::new, tree_title)
            ),
            None => "no graph while the program has errors".to_owned(),
        };
        let set = invocation
            .set
            .and_then(|s| program.sets.get(s.index()))
            .map(|s| s.name.clone());
        let command = match (counts.is_some(), set) {
            (true, Some(set)) => Command {
                title,
                command: commands::SHOW_DEVICE_TYPE.into(),
                arguments: Some(vec![
                    serde_json::Value::String(context.uri.as_str().to_owned()),
                    serde_json::Value::String(set),
                ]),
            },
            // Shown as plain text: nothing to open.
            _ => Command {
                title,
                command: String::new(),
                arguments: None,
            },
        };
        lenses.push(CodeLens {
            range,
            command: Some(command),
            data: None,
        });
    }
    Some(lenses)
}

/// `tree depth 1 from 17 devices, 2 from 257` (or `flat controller`): when
/// the invocation's begin and end trees gain levels.
fn tree_title(tree: &generated::TreeSummary) -> String {
    match tree.depths.as_slice() {
        [(_, one), (_, two), ..] => format!(
            "tree depth 1 from {} devices, 2 from {}",
            one.saturating_add(1),
            two.saturating_add(1)
        ),
        _ => "flat controller".to_owned(),
    }
}

/// The generated device type of the set named `set` as text (`global`: the
/// controller). Without a name, every device type of the graph, controller
/// first, the aggregators of the trees last. `None` without a graph or for a set no invocation involves.
pub fn device_type_text(context: &Context<'_>, set: Option<&str>) -> Option<String> {
    let program = &context.analysed.analysis.program;
    let graph = context.analysed.graph.as_ref()?;
    match set {
        Some(names::GLOBAL_DEVICE) => generated::controller_text(program, graph),
        Some(name) => match program.lookup(name) {
            Some(Symbol::Set(id)) => generated::device_type_text(program, graph, id),
            _ => None,
        },
        None => {
            let mut texts = Vec::new();
            texts.extend(generated::controller_text(program, graph));
            for (index, _) in program.sets.iter().enumerate() {
                let id = SetId(u32::try_from(index).unwrap_or(u32::MAX));
                texts.extend(generated::device_type_text(program, graph, id));
            }
            texts.extend(generated::tree_texts(program, graph));
            Some(texts.join("\n"))
        }
    }
}
