//! Inlay hints (compilation.md §8): after each par_loop's kernel name the
//! invocation name (`op2.inlayHints.invocationNames`), and at the end of
//! each argument a short label of the pins, buffer, state member or
//! property it generates, with the full summary as tooltip
//! (`op2.inlayHints.generatedPins`, only when the graph exists).
//!
//! Works from the program's invocations, never from the syntax tree, and
//! converts positions only for the par_loops that meet the requested range.

use op2_analysis::model::InvocationId;
use op2_syntax::FileId;
use tower_lsp_server::lsp_types::{
    InlayHint, InlayHintKind, InlayHintLabel, InlayHintTooltip, MarkupContent, MarkupKind, Range,
};

use super::Context;
use crate::ide::generated;

/// The hints of the par_loops that meet `range`.
pub fn inlay_hints(context: &Context<'_>, range: Range) -> Option<Vec<InlayHint>> {
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
    let mut hints = Vec::new();
    for (index, invocation) in program.invocations.iter().enumerate() {
        let location = invocation.location;
        if location.file != FileId::MAIN || location.range.end < start || location.range.start > end
        {
            continue;
        }
        let id = InvocationId(u32::try_from(index).unwrap_or(u32::MAX));
        let name_end = invocation.name_location.range.end;
        // A name given with `as` is already in the text.
        if settings.invocation_names
            && !invocation.named_explicitly
            && !invocation.name.is_empty()
            && (start..=end).contains(&name_end)
        {
            hints.push(InlayHint {
                position: context.analysed.document.position(name_end as usize, context.encoding),
                label: InlayHintLabel::String(format!(": {}", invocation.name)),
                kind: Some(InlayHintKind::TYPE),
                text_edits: None,
                tooltip: Some(InlayHintTooltip::MarkupContent(MarkupContent {
                    kind: MarkupKind::Markdown,
                    value: format!(
                        "invocation `{}`: the prefix of every pin, state member and message generated for this par_loop",
                        invocation.name
                    ),
                })),
                padding_left: Some(false),
                padding_right: Some(true),
                data: None,
            });
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
            let summary = graph_index.summary(id, arg);
            hints.push(InlayHint {
                position: context
                    .analysed
                    .document
                    .position(at as usize, context.encoding),
                label: InlayHintLabel::String(label),
                kind: None,
                text_edits: None,
                tooltip: (!summary.is_empty()).then(|| {
                    InlayHintTooltip::MarkupContent(MarkupContent {
                        kind: MarkupKind::Markdown,
                        value: summary.join("\n\n"),
                    })
                }),
                padding_left: Some(true),
                padding_right: Some(false),
                data: None,
            });
        }
    }
    Some(hints)
}
