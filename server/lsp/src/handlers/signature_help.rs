//! `textDocument/signatureHelp`: the kernel's parameters while its par_loop
//! arguments are typed, the one the current argument binds highlighted.

use tower_lsp_server::lsp_types::{
    Documentation, MarkupContent, MarkupKind, ParameterInformation, ParameterLabel, Position,
    SignatureHelp, SignatureInformation,
};

use super::Context;
use crate::ide::completion;

/// The signature at `position`, inside a par_loop's argument list.
pub fn signature_help(context: &Context<'_>, position: Position) -> Option<SignatureHelp> {
    let analysed = context.analysed;
    let offset = context.offset(position) as usize;
    let help = completion::signature_help(
        analysed.document.parse(),
        &analysed.analysis.program,
        offset,
    )?;
    // Offsets into the label are in UTF-16 units (the label is ASCII, as
    // names are, so bytes are units).
    let parameters = help
        .parameters
        .iter()
        .map(|p| ParameterInformation {
            label: ParameterLabel::LabelOffsets([p.label.0, p.label.1]),
            documentation: Some(Documentation::MarkupContent(MarkupContent {
                kind: MarkupKind::Markdown,
                value: p.documentation.clone(),
            })),
        })
        .collect();
    Some(SignatureHelp {
        signatures: vec![SignatureInformation {
            label: help.label,
            documentation: None,
            parameters: Some(parameters),
            active_parameter: help.active_parameter,
        }],
        active_signature: Some(0),
        active_parameter: help.active_parameter,
    })
}
