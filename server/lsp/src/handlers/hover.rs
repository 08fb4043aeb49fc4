//! Hover: what a name is, in Markdown. A dat or global shows its type, set
//! and initial value, and inside a par_loop argument which invocations last
//! wrote it and which read it next (the dependency analysis); a set where it
//! is used and the device type generated for it; a kernel its signature and
//! what the body does with each parameter; the kernel or `as` name of a
//! par_loop its invocation name, the kernel with every argument bound and
//! what each argument generates.
//! On a diagnostic, the summary of its explanation and `op2 explain CODE`.
//!
//! [`hover_text`] builds the text from the analysis alone (no LSP); the
//! handler converts the range.

use std::fmt::Write;

use op2_analysis::Reader;
use op2_analysis::explain;
use op2_analysis::model::{
    ArgKind, ConstId, DatId, Data, GlobalId, InitialValue, InvocationId, KernelId, MapId, Program,
    SetId, Symbol,
};
use op2_analysis::value::Value;
use op2_syntax::ast::{AccessMode, AstNode, NodeText, ParLoopStmt};
use op2_syntax::{Code, FileId, TextRange};
use tower_lsp_server::lsp_types::{Hover, HoverContents, MarkupContent, MarkupKind, Position};

use super::Context;
use crate::ide::generated;
use crate::ide::navigation::{self, Target};
use crate::world::Analysed;

/// The hover at `position`.
pub fn hover(context: &Context<'_>, position: Position) -> Option<Hover> {
    let (value, range) = hover_text(context.analysed, context.offset(position))?;
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value,
        }),
        range: Some(context.range(range)),
    })
}

/// The Markdown shown at `offset` of the document and the range it
/// describes (the name, or the diagnostic's range when there is no name).
pub fn hover_text(analysed: &Analysed, offset: u32) -> Option<(String, TextRange)> {
    let program = &analysed.analysis.program;
    let parse = analysed.document.parse();
    let mut sections = Vec::new();
    let mut range = None;
    if let Some((invocation, name)) = navigation::invocation_head_at(program, parse, offset) {
        sections.push(invocation_hover(analysed, invocation));
        range = Some(name);
    } else if let Some((target, name)) = navigation::target_at(program, parse, offset) {
        sections.push(target_hover(analysed, &target, offset));
        range = Some(name);
    }
    let mut codes: Vec<Code> = Vec::new();
    for diagnostic in &analysed.diagnostics {
        let location = diagnostic.location;
        if location.file != FileId::MAIN
            || !location.range.touches(offset)
            || codes.contains(&diagnostic.code)
        {
            continue;
        }
        codes.push(diagnostic.code);
        sections.push(diagnostic_hover(diagnostic.code));
        range = range.or(Some(location.range));
    }
    Some((sections.join("\n\n---\n\n"), range?))
}

fn target_hover(analysed: &Analysed, target: &Target, offset: u32) -> String {
    match target {
        Target::Symbol(Symbol::Set(id)) => set_hover(analysed, *id),
        Target::Symbol(Symbol::Map(id)) => map_hover(&analysed.analysis.program, *id),
        Target::Symbol(Symbol::Dat(id)) => dat_hover(analysed, *id, offset),
        Target::Symbol(Symbol::Const(id)) => const_hover(analysed, *id),
        Target::Symbol(Symbol::Global(id)) => global_hover(analysed, *id, offset),
        Target::Symbol(Symbol::Kernel(id)) => kernel_hover(&analysed.analysis.program, *id),
        Target::Param { kernel, index } => param_hover(&analysed.analysis.program, *kernel, *index),
        Target::Local(local) => local_hover(analysed, local),
        Target::Invocation(id) => invocation_hover(analysed, *id),
    }
}

fn code_block(text: &str) -> String {
    format!("```op2\n{text}\n```")
}

/// Names in backticks, separated by commas; past [`MAX_NAMES`], how many
/// more there are.
fn quoted(names: &[String]) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    capped(&names)
}

/// Items separated by commas, at most [`MAX_NAMES`] of them.
fn capped(items: &[String]) -> String {
    let mut text = items
        .iter()
        .take(MAX_NAMES)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > MAX_NAMES {
        let _ = write!(text, " and {} more", items.len() - MAX_NAMES);
    }
    text
}

/// How many names a list in a hover shows.
const MAX_NAMES: usize = 20;

/// How many lines of a generated device type a hover shows; the command
/// `op2.showDeviceType` (the code lens) opens all of it.
const MAX_DEVICE_LINES: usize = 40;

fn set_name(program: &Program, set: Option<SetId>) -> &str {
    set.map_or("?", |s| program.sets[s.index()].name.as_str())
}

fn values_text(values: &[Value]) -> String {
    match values {
        [single] => single.to_string(),
        _ => format!(
            "{{{}}}",
            values
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// ` = …` as declared (approximately), and a sentence on the initial value.
fn initial_value(program: &Program, init: &InitialValue) -> (String, String) {
    match init {
        InitialValue::Zero => (
            String::new(),
            "Initial value zero, unless the instance data gives one.".into(),
        ),
        InitialValue::Components(values) => {
            let text = values_text(values);
            (
                format!(" = {text}"),
                format!("Initial value `{text}`, unless the instance data gives one."),
            )
        }
        InitialValue::FromConst(id) => {
            let name = &program.consts[id.index()].name;
            (
                format!(" = {name}"),
                format!(
                    "Initial value: the value of the const `{name}`, unless the instance data gives one."
                ),
            )
        }
    }
}

/// "`a` (READ), `b` (READ, INC)": the invocations that pass `data`, with the
/// modes they pass it with.
fn users(program: &Program, data: Data) -> Vec<String> {
    let mut out = Vec::new();
    for invocation in &program.invocations {
        let mut modes: Vec<AccessMode> = Vec::new();
        for (_, arg) in invocation.resolved_args() {
            if arg.kind.data() == Some(data) && !modes.contains(&arg.mode) {
                modes.push(arg.mode);
            }
        }
        if !modes.is_empty() {
            let modes: Vec<&str> = modes.iter().map(|m| m.keyword()).collect();
            out.push(format!("`{}` ({})", invocation.name, modes.join(", ")));
        }
    }
    out
}

/// What the dependency analysis says about `data` in the argument at
/// `offset`, when the cursor is in one that passes it.
fn argument_flow(analysed: &Analysed, data: Data, offset: u32) -> Option<String> {
    let program = &analysed.analysis.program;
    let (invocation, arg) = navigation::argument_at(program, offset)?;
    let argument = program.invocations[invocation.index()].args[arg].as_ref()?;
    if argument.kind.data() != Some(data) {
        return None;
    }
    let name = &program.invocations[invocation.index()].name;
    let dependencies = &analysed.analysis.dependencies;
    let writers: Vec<String> = dependencies
        .last_writers(invocation, data)
        .into_iter()
        .map(|w| program.invocations[w.index()].name.clone())
        .collect();
    let readers: Vec<String> = dependencies
        .next_readers(invocation, data)
        .into_iter()
        .map(|r| match r {
            Reader::Invocation(id) => format!("`{}`", program.invocations[id.index()].name),
            Reader::Main(location) => {
                let line = program
                    .files
                    .get(location.file.0 as usize)
                    .map_or(0, |f| navigation::line_of(&f.text, location.range.start));
                format!("main (line {line})")
            }
        })
        .collect();
    let mut text = format!(
        "**In `{name}`**, argument {} (`{}`):\n\n",
        arg + 1,
        argument.mode
    );
    if writers.is_empty() {
        text.push_str(match data {
            Data::Dat(_) => "- not written by any par_loop before: it holds its initial value\n",
            Data::Global(_) => "- not written by any par_loop before this one\n",
        });
    } else {
        let _ = writeln!(text, "- last written by {}", quoted(&writers));
    }
    if readers.is_empty() {
        text.push_str("- not read afterwards");
    } else {
        let _ = write!(text, "- next read by {}", readers.join(", "));
    }
    if let Some(graph) = &analysed.graph {
        for line in generated::argument_summary(program, graph, invocation, arg) {
            let _ = write!(text, "\n- {line}");
        }
    }
    Some(text)
}

fn dat_hover(analysed: &Analysed, id: DatId, offset: u32) -> String {
    let program = &analysed.analysis.program;
    let dat = &program.dats[id.index()];
    let set = set_name(program, dat.set);
    let (init, init_sentence) = initial_value(program, &dat.init);
    let mut text = code_block(&format!("dat {}: {} on {set}{init}", dat.name, dat.ty));
    let _ = write!(
        text,
        "\n\nDat on set `{set}`: element type `{}`, dimension {}. {init_sentence}",
        dat.ty.scalar, dat.ty.dimension
    );
    let users = users(program, Data::Dat(id));
    if !users.is_empty() {
        let _ = write!(text, "\n\nUsed by {}.", capped(&users));
    }
    if let Some(flow) = argument_flow(analysed, Data::Dat(id), offset) {
        let _ = write!(text, "\n\n{flow}");
    }
    text
}

fn global_hover(analysed: &Analysed, id: GlobalId, offset: u32) -> String {
    let program = &analysed.analysis.program;
    let global = &program.globals[id.index()];
    let (init, init_sentence) = initial_value(program, &global.init);
    let mut text = code_block(&format!("global {}: {}{init}", global.name, global.ty));
    let _ = write!(
        text,
        "\n\nMutable global held by the controller: element type `{}`, dimension {}. {init_sentence}",
        global.ty.scalar, global.ty.dimension
    );
    let users = users(program, Data::Global(id));
    if !users.is_empty() {
        let _ = write!(text, "\n\nUsed by {}.", capped(&users));
    }
    if let Some(flow) = argument_flow(analysed, Data::Global(id), offset) {
        let _ = write!(text, "\n\n{flow}");
    }
    text
}

fn const_hover(analysed: &Analysed, id: ConstId) -> String {
    let program = &analysed.analysis.program;
    let constant = &program.consts[id.index()];
    let value = analysed.analysis.const_values.get(id);
    let declared = match value {
        Some(values) => format!(
            "const {}: {} = {}",
            constant.name,
            constant.ty,
            values_text(values)
        ),
        None => format!("const {}: {}", constant.name, constant.ty),
    };
    let mut text = code_block(&declared);
    let _ = write!(
        text,
        "\n\nConst of type `{}`, dimension {}. ",
        constant.ty.scalar, constant.ty.dimension
    );
    match value {
        Some(values) => {
            let _ = write!(text, "Value at compile time: `{}`.", values_text(values));
        }
        None => text.push_str("No value here: it must come from the instance data."),
    }
    let kernels: Vec<String> = program
        .kernels
        .iter()
        .filter(|k| k.consts_used.contains(&id))
        .map(|k| k.name.clone())
        .collect();
    if !kernels.is_empty() {
        let _ = write!(text, "\n\nRead by the kernels {}.", quoted(&kernels));
    }
    text
}

fn set_hover(analysed: &Analysed, id: SetId) -> String {
    let program = &analysed.analysis.program;
    let set = &program.sets[id.index()];
    let mut text = code_block(&format!("set {}", set.name));
    text.push_str("\n\nSet of mesh elements: its size comes from the instance data.");
    let dats: Vec<String> = program
        .dats
        .iter()
        .filter(|d| d.set == Some(id))
        .map(|d| d.name.clone())
        .collect();
    let from: Vec<String> = program
        .maps
        .iter()
        .filter(|m| m.from == Some(id))
        .map(|m| m.name.clone())
        .collect();
    let to: Vec<String> = program
        .maps
        .iter()
        .filter(|m| m.to == Some(id))
        .map(|m| m.name.clone())
        .collect();
    let loops: Vec<String> = program
        .invocations
        .iter()
        .filter(|i| i.set == Some(id))
        .map(|i| i.name.clone())
        .collect();
    let mut facts = Vec::new();
    for (label, names) in [
        ("dats on it", &dats),
        ("maps from it", &from),
        ("maps to it", &to),
        ("par_loops over it", &loops),
    ] {
        if !names.is_empty() {
            facts.push(format!("- {label}: {}", quoted(names)));
        }
    }
    if !facts.is_empty() {
        let _ = write!(text, "\n\n{}", facts.join("\n"));
    }
    if let Some(device) = analysed
        .graph
        .as_ref()
        .and_then(|graph| generated::device_type_head(program, graph, id, MAX_DEVICE_LINES))
    {
        let shown = device.text.trim_end();
        let _ = write!(text, "\n\nGenerated device type:\n\n```text\n{shown}\n```");
        if device.omitted() > 0 {
            let _ = write!(
                text,
                "\n\n{} more lines: the code lens of a par_loop over `{}` opens the whole device type.",
                device.omitted(),
                set.name
            );
        }
    }
    text
}

fn map_hover(program: &Program, id: MapId) -> String {
    let map = &program.maps[id.index()];
    let (from, to) = (set_name(program, map.from), set_name(program, map.to));
    let mut text = code_block(&format!("map {}: {from} -> {to}[{}]", map.name, map.arity));
    let _ = write!(
        text,
        "\n\nMap `{from}` -> `{to}`[{}]: every element of `{from}` names {} of `{to}`.",
        map.arity, map.arity
    );
    let loops: Vec<String> = program
        .invocations
        .iter()
        .filter(|i| {
            i.resolved_args()
                .any(|(_, a)| matches!(a.kind, ArgKind::IndirectDat { map, .. } if map == id))
        })
        .map(|i| i.name.clone())
        .collect();
    if !loops.is_empty() {
        let _ = write!(text, "\n\nUsed by {}.", quoted(&loops));
    }
    text
}

/// What a body does with a parameter, in a few words.
fn param_usage(program: &Program, kernel: KernelId, index: usize) -> &'static str {
    let Some(usage) = program.kernels[kernel.index()].summary.params.get(index) else {
        return "unknown";
    };
    let increments_only = usage.reads.is_empty()
        && usage.assigns.is_empty()
        && !usage.compound.is_empty()
        && usage.compound.iter().all(|(_, op)| {
            matches!(
                op,
                op2_syntax::ast::AssignOp::Add | op2_syntax::ast::AssignOp::Sub
            )
        });
    match (usage.is_read(), usage.is_written()) {
        (false, false) => "not used",
        _ if increments_only => "only incremented (`+=`/`-=`)",
        (true, false) => "read",
        (false, true) => "written",
        (true, true) => "read and written",
    }
}

fn kernel_hover(program: &Program, id: KernelId) -> String {
    let kernel = &program.kernels[id.index()];
    let mut text = code_block(&navigation::kernel_signature(program, id));
    if !kernel.params.is_empty() {
        text.push_str("\n\nWhat the body does with each parameter:\n");
        for (index, param) in kernel.params.iter().enumerate() {
            let _ = write!(
                text,
                "\n- `{}`: {}",
                param.name,
                param_usage(program, id, index)
            );
        }
    }
    if !kernel.consts_used.is_empty() {
        let consts: Vec<String> = kernel
            .consts_used
            .iter()
            .map(|c| program.consts[c.index()].name.clone())
            .collect();
        let _ = write!(text, "\n\nReads the consts {}.", quoted(&consts));
    }
    let loops: Vec<String> = program
        .invocations
        .iter()
        .filter(|i| i.kernel == Some(id))
        .map(|i| i.name.clone())
        .collect();
    if !loops.is_empty() {
        let _ = write!(text, "\n\nRun by {}.", quoted(&loops));
    }
    text
}

/// The argument texts of a par_loop in the document, whitespace collapsed.
fn argument_texts(analysed: &Analysed, invocation: InvocationId) -> Vec<String> {
    let program = &analysed.analysis.program;
    let location = program.invocations[invocation.index()].location;
    let imported;
    let (text, root) = if location.file == FileId::MAIN {
        let parse = analysed.document.parse();
        (parse.text(), parse.tree().root_node())
    } else {
        let Some(file) = program.files.get(location.file.0 as usize) else {
            return Vec::new();
        };
        imported = op2_syntax::Parse::new(file.text.as_ref());
        (imported.text(), imported.tree().root_node())
    };
    let node =
        root.descendant_for_byte_range(location.range.start as usize, location.range.end as usize);
    let Some(par_loop) = node.and_then(ParLoopStmt::cast) else {
        return Vec::new();
    };
    par_loop
        .arguments()
        .map(|a| {
            a.text(text)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn invocation_hover(analysed: &Analysed, id: InvocationId) -> String {
    let program = &analysed.analysis.program;
    let invocation = &program.invocations[id.index()];
    let set = set_name(program, invocation.set);
    let how = if invocation.named_explicitly {
        "named with `as`"
    } else {
        "named after its kernel (language.md §6)"
    };
    let mut text = format!("**par_loop `{}`** over `{set}`, {how}", invocation.name);
    let arguments = argument_texts(analysed, id);
    let Some(kernel_id) = invocation.kernel else {
        return text;
    };
    let kernel = &program.kernels[kernel_id.index()];
    let mut signature = format!("kernel {}(", kernel.name);
    let count = kernel.params.len().max(arguments.len());
    for index in 0..count {
        let param = kernel
            .params
            .get(index)
            .map_or_else(|| "?".to_owned(), navigation::param_signature);
        let argument = arguments.get(index).map_or("?", String::as_str);
        let comma = if index + 1 < count { "," } else { "" };
        let _ = write!(signature, "\n    {param}{comma} // ← {argument}");
    }
    signature.push_str(if count == 0 { ")" } else { "\n)" });
    let _ = write!(text, "\n\n{}", code_block(&signature));
    if let Some(graph) = &analysed.graph {
        let mut generated_lines = String::new();
        for index in 0..invocation.args.len() {
            let lines = generated::argument_summary(program, graph, id, index);
            if lines.is_empty() {
                continue;
            }
            let name = kernel.params.get(index).map_or("?", |p| p.name.as_str());
            let _ = write!(
                generated_lines,
                "\n- `{name}` ← `{}`",
                arguments.get(index).map_or("?", String::as_str)
            );
            for line in lines {
                let _ = write!(generated_lines, "\n  - {line}");
            }
        }
        if !generated_lines.is_empty() {
            let _ = write!(text, "\n\nWhat each argument generates:\n{generated_lines}");
        }
        if let Some(tree) = generated::tree_summary(graph, id) {
            let arrows = generated::TreeSummary::path_text;
            if tree.fan_limit == 0 {
                text.push_str("\n\nBegin and end: the flat controller (`--fan-limit 0`)");
            } else {
                let _ = write!(
                    text,
                    "\n\nBegin and end trees (at most {} edges per pin):",
                    tree.fan_limit
                );
            }
            let _ = write!(
                text,
                "\n- begin: {}\n- end: {}",
                arrows(&tree.begin),
                arrows(&tree.end)
            );
            if !tree.depths.is_empty() {
                let _ = write!(
                    text,
                    "\n- depth (levels of aggregators) by the devices taking part: {}; \
                     `op2 simulate` reports each loop's on an instance",
                    tree.depth_text()
                );
            }
        }
    }
    text
}

fn param_hover(program: &Program, kernel: KernelId, index: usize) -> String {
    let kernel_model = &program.kernels[kernel.index()];
    let Some(param) = kernel_model.params.get(index) else {
        return String::new();
    };
    let mut text = code_block(&navigation::param_signature(param));
    let dimension = match param.dimension {
        Some(d) => format!("dimension {d}, checked against each bound argument"),
        None => "dimension taken from the bound argument".into(),
    };
    let _ = write!(
        text,
        "\n\nParameter {} of kernel `{}`: `{}`, {dimension}; {}.",
        index + 1,
        kernel_model.name,
        param.ty,
        param_usage(program, kernel, index)
    );
    let mut bindings = Vec::new();
    for invocation in program
        .invocations
        .iter()
        .filter(|i| i.kernel == Some(kernel))
    {
        if let Some(Some(arg)) = invocation.args.get(index) {
            let file = &program.file(arg.location.file).text;
            let argument = file.get(arg.location.range.to_usize()).unwrap_or("?");
            let argument = argument.split_whitespace().collect::<Vec<_>>().join(" ");
            bindings.push(format!("- `{argument}` in `{}`", invocation.name));
        }
    }
    if !bindings.is_empty() {
        let _ = write!(text, "\n\nBound to:\n{}", bindings.join("\n"));
    }
    text
}

fn local_hover(analysed: &Analysed, local: &navigation::LocalTarget) -> String {
    let parse = analysed.document.parse();
    let text = parse.text();
    let range = local.declaration.range;
    let path = op2_syntax::NodePath::at(
        parse.tree().root_node(),
        range.start as usize,
        range.end as usize,
    );
    let declarator = path.ancestor(1);
    let declaration = path.ancestor(2);
    let mut declared = String::new();
    if let Some(declaration) = declaration {
        if declaration.child_by_field_name("const").is_some() {
            declared.push_str("const ");
        }
        if let Some(ty) = declaration.child_by_field_name("type") {
            declared.push_str(ty.text(text));
            declared.push(' ');
        }
    }
    declared.push_str(&local.name);
    if let Some(dimension) = declarator.and_then(|d| d.child_by_field_name("dimension")) {
        let _ = write!(declared, "[{}]", dimension.text(text));
    }
    format!(
        "{}\n\nLocal variable of {}.",
        code_block(&declared),
        local.owner
    )
}

/// The title and first paragraph of a code's explanation.
fn diagnostic_hover(code: Code) -> String {
    let explanation = explain::explanation(code);
    let paragraph: Vec<&str> = explanation
        .lines()
        .skip(1)
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .collect();
    format!(
        "**{code}**: {}\n\n{}\n\n`op2 explain {code}`",
        explain::title(code),
        paragraph.join(" ")
    )
}
