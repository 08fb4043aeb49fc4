//! Go to definition: the declaration of the name under the cursor, in
//! whichever file of the program it is; on an `import`, the imported file.

use op2_syntax::{Location, TextRange};
use tower_lsp_server::lsp_types::{GotoDefinitionResponse, Position};

use super::Context;
use crate::ide::navigation;

/// The definition of what is at `position`.
pub fn definition(context: &Context<'_>, position: Position) -> Option<GotoDefinitionResponse> {
    let offset = context.offset(position);
    let program = &context.analysed.analysis.program;
    let parse = context.analysed.document.parse();
    let location = match navigation::target_at(program, parse, offset) {
        Some((target, _)) => navigation::definition(program, &target)?,
        None => {
            let file = navigation::import_at(program, parse, offset)?;
            Location {
                file,
                range: TextRange::empty(0),
            }
        }
    };
    context
        .location(location)
        .map(GotoDefinitionResponse::Scalar)
}
