//! Inlay hints (compilation.md §8): after each par_loop's kernel name the
//! invocation name when it is not the kernel's own (`sum_1` for the second
//! par_loop of `sum`; `op2.inlayHints.invocationNames`), and at the end of
//! each argument a short label of the pins, buffer, state member or
//! property it generates, with the full summary as tooltip
//! (`op2.inlayHints.generatedPins`, only when the graph exists).
//!
//! Works from the program's invocations, never from the syntax tree, and
//! converts positions only for the par_loops that meet the requested range.
//!
//! The tooltips cost more than the labels (a summary per argument), so for
//! a client that resolves tooltips (`inlayHint/resolve`, VS Code) they are
//! left out and filled in when the client asks for one: the hint carries the
//! document, the generation of its analysis and the argument in `data`.

use op2_analysis::model::InvocationId;
use op2_syntax::FileId;
use serde::{Deserialize, Serialize};
use tower_lsp_server::lsp_types::{
    InlayHint, InlayHintKind, InlayHintLabel, InlayHintTooltip, MarkupContent, MarkupKind,
    Position, Range, Uri,
};

use super::Context;
use crate::ide::generated;

/// Above this many par_loops in range, positions are converted with the
/// version's line index instead of the rope.
const MANY_PAR_LOOPS: usize = 60;

/// When a hint's tooltip is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tooltips {
    /// With the hint.
    Now,
    /// On `inlayHint/resolve`.
    OnResolve,
}

/// What a hint whose tooltip is left for later carries in `data`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Data {
    /// The document.
    pub uri: Uri,
    /// The generation of the analysis the hint came from: a hint of an
    /// older text is not resolved.
    pub generation: u64,
    /// The invocation.
    pub invocation: u32,
    /// The argument, or none for the invocation name.
    pub arg: Option<usize>,
}

/// The hints of the par_loops that meet `range`, with their tooltips.
pub fn inlay_hints(context: &Context<'_>, range: Range) -> Option<Vec<InlayHint>> {
    inlay_hints_with(context, range, Tooltips::Now)
}

/// The hints of the par_loops that meet `range`.
pub fn inlay_hints_with(
    context: &Context<'_>,
    range: Range,
    tooltips: Tooltips,
) -> Option<Vec<InlayHint>> {
    let settings = &context.settings.inlay_hints;
    if !settings.invocation_names && !settings.generated_pins {
        return Some(Vec::new());
    }
    let start = context.offset(range.start);
    let end = context.offset(range.end);
    let program = &context.analysed.analysis.program;
    // Built once per request, for the arguments of every par_loop in range.
    let graph_index = context
        .analysed
        .graph
        .as_ref()
        .filter(|_| settings.generated_pins)
        .map(|graph| generated::GraphIndex::new(program, graph));
    // Positions through the version's line index when the range holds many
    // par_loops (the whole file, say), through the rope otherwise.
    let in_range = program
        .invocations
        .iter()
        .filter(|i| i.location.range.end >= start && i.location.range.start <= end)
        .count();
    let line_index = (in_range > MANY_PAR_LOOPS).then(|| context.analysed.line_index());
    let position = |offset: u32| match line_index {
        Some(index) => {
            let at = index.line_col(offset, context.encoding.line_index_encoding());
            Position::new(at.line, at.col)
        }
        None => context
            .analysed
            .document
            .position(offset as usize, context.encoding),
    };
    let mut hints = Vec::new();
    for (index, invocation) in program.invocations.iter().enumerate() {
        let location = invocation.location;
        if location.file != FileId::MAIN || location.range.end < start || location.range.start > end
        {
            continue;
        }
        let id = InvocationId(u32::try_from(index).unwrap_or(u32::MAX));
        let name_end = invocation.name_location.range.end;
        // A name given with `as` is already in the text, and one equal to
        // the kernel's name (its first par_loop) would repeat it.
        let kernel_name = invocation
            .kernel
            .map(|kernel| program.kernels[kernel.index()].name.as_str());
        if settings.invocation_names
            && !invocation.named_explicitly
            && !invocation.name.is_empty()
            && kernel_name != Some(invocation.name.as_str())
            && (start..=end).contains(&name_end)
        {
            let mut hint = InlayHint {
                position: context
                    .analysed
                    .document
                    .position(name_end as usize, context.encoding),
                label: InlayHintLabel::String(format!(": {}", invocation.name)),
                kind: Some(InlayHintKind::TYPE),
                text_edits: None,
                tooltip: None,
                padding_left: Some(false),
                padding_right: Some(true),
                data: None,
            };
            complete(context, &mut hint, id, None, tooltips);
            hints.push(hint);
        }
        let Some(graph_index) = &graph_index else {
            continue;
        };
        for (arg, resolved) in invocation.resolved_args() {
            let at = resolved.location.range.end;
            if resolved.location.file != FileId::MAIN || !(start..=end).contains(&at) {
                continue;
            }
            let Some(label) = graph_index.label(id, arg) else {
                continue;
            };
            let mut hint = InlayHint {
                position: position(at),
                label: InlayHintLabel::String(label),
                kind: None,
                text_edits: None,
                tooltip: None,
                padding_left: Some(true),
                padding_right: Some(false),
                data: None,
            };
            match tooltips {
                Tooltips::Now => hint.tooltip = markdown(&graph_index.summary(id, arg)),
                Tooltips::OnResolve => complete(context, &mut hint, id, Some(arg), tooltips),
            }
            hints.push(hint);
        }
    }
    Some(hints)
}

/// Gives `hint` its tooltip now, or the data to resolve it later.
fn complete(
    context: &Context<'_>,
    hint: &mut InlayHint,
    invocation: InvocationId,
    arg: Option<usize>,
    tooltips: Tooltips,
) {
    match tooltips {
        Tooltips::Now => hint.tooltip = tooltip(context, invocation, arg),
        Tooltips::OnResolve => {
            let data = Data {
                uri: context.uri.clone(),
                generation: context.analysed.generation,
                invocation: invocation.0,
                arg,
            };
            hint.data = serde_json::to_value(data).ok();
        }
    }
}

/// The tooltip of the hint of `arg` of `invocation` (or of its name).
fn tooltip(
    context: &Context<'_>,
    invocation: InvocationId,
    arg: Option<usize>,
) -> Option<InlayHintTooltip> {
    let program = &context.analysed.analysis.program;
    match arg {
        None => {
            let name = &program.invocations.get(invocation.index())?.name;
            markdown(&[format!(
                "invocation `{name}`: the prefix of every pin, state member and message generated for this par_loop"
            )])
        }
        Some(arg) => {
            let graph = context.analysed.graph.as_ref()?;
            markdown(&generated::argument_summary(
                program, graph, invocation, arg,
            ))
        }
    }
}

fn markdown(lines: &[String]) -> Option<InlayHintTooltip> {
    (!lines.is_empty()).then(|| {
        InlayHintTooltip::MarkupContent(MarkupContent {
            kind: MarkupKind::Markdown,
            value: lines.join("\n\n"),
        })
    })
}

/// The document a hint left for resolving belongs to.
pub fn resolve_target(hint: &InlayHint) -> Option<Uri> {
    let data: Data = serde_json::from_value(hint.data.clone()?).ok()?;
    Some(data.uri)
}

/// `inlayHint/resolve`: the tooltip of a hint from
/// [`inlay_hints_with`]`(…, Tooltips::OnResolve)`, when the hint came from
/// the analysis in `context`; otherwise the hint as it was.
pub fn resolve(context: &Context<'_>, mut hint: InlayHint) -> InlayHint {
    let Some(data) = hint
        .data
        .clone()
        .and_then(|d| serde_json::from_value::<Data>(d).ok())
    else {
        return hint;
    };
    if data.generation == context.analysed.generation && hint.tooltip.is_none() {
        hint.tooltip = tooltip(context, InvocationId(data.invocation), data.arg);
    }
    hint
}
