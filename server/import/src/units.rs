//! The application's sources: its main file, its other translation units
//! and every header they include with `#include "…"`, nested headers too,
//! each read once; which of them the main file's translation unit sees; and
//! the checks that several translation units need (a function defined in
//! two of them, a macro defined differently in two of them).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use tree_sitter::Node;

use crate::c::{self, Define, Location, Source, walk};
use crate::compdb::Flags;
use crate::{Files, ImportError};

/// The most files (sources and headers) an import reads.
pub const MAX_FILES: usize = 1024;

/// The most bytes of text an import reads in all (each file is at most
/// 16 MiB as well).
pub const MAX_BYTES: usize = 64 << 20;

/// The most directories a translation unit's `#include "…"` are looked for
/// in: its entry's `-I` and `-iquote` in the compilation database and the
/// `-I` given to op2 import together (a real build has dozens).
pub const MAX_SEARCH_DIRS: usize = 1024;

/// The endings of the files a translation unit may be.
pub const UNIT_EXTENSIONS: &[&str] = &["c", "cc", "cpp", "cxx", "C", "c++"];

/// The application's sources, read.
#[derive(Debug)]
pub struct Application {
    /// Every file, each once: the headers the main file's translation unit
    /// includes (in the order found), the main file, then the other units
    /// and the headers only they include.
    pub all: Vec<Source>,
    /// The main file's index in `all`.
    pub main: usize,
    /// How many of `all`, from the start, the main file's translation unit
    /// sees (its headers and itself): what the capture, compiled there, can
    /// name.
    pub visible: usize,
    /// Where each translation unit's files end in `all` (the main file's
    /// first, `visible`): a file belongs to the first unit that read it.
    pub unit_ends: Vec<usize>,
}

impl Application {
    /// The translation unit (0: the main file's, then the others in the
    /// order given) that first read `all[index]`.
    pub fn unit_of(&self, index: usize) -> usize {
        self.unit_ends.partition_point(|&end| end <= index)
    }
}

/// Reads `main`, `units` and the headers they include with `"…"`, looked
/// for as the capture's compiler looks (the including file's directory,
/// the recorder's, the main file's, then the unit's own `-I` directories in
/// `unit_flags` and `include_dirs`), with `read`, at most [`MAX_FILES`]
/// files and [`MAX_BYTES`] bytes.
pub fn read(
    main: &Path,
    units: &[PathBuf],
    include_dirs: &[PathBuf],
    unit_flags: &BTreeMap<PathBuf, Flags>,
    files: &dyn Files,
    read: &dyn Fn(&Path) -> Result<Source, ImportError>,
) -> Result<Application, ImportError> {
    let dirs = |unit: &Path| -> Result<Vec<PathBuf>, ImportError> {
        let own = unit_flags
            .get(unit)
            .map_or(&[][..], |f| &f.include_dirs[..]);
        let count = own.len().saturating_add(include_dirs.len());
        if count > MAX_SEARCH_DIRS {
            return Err(ImportError::Read(format!(
                "the `#include \"…\"` of `{}` would be looked for in {count} directories (the `-I` and `-iquote` of its compilation database entry and the `-I` given), more than the {MAX_SEARCH_DIRS} op2 import looks in",
                unit.display()
            )));
        }
        Ok(own.iter().chain(include_dirs).cloned().collect())
    };
    let mut reader = Reader {
        files,
        read,
        main_dir: main.parent().unwrap_or(Path::new("")).to_owned(),
        include_dirs: dirs(main)?,
        found: BTreeMap::new(),
        seen: BTreeSet::new(),
        bytes: 0,
        all: Vec::new(),
    };
    reader.seen.insert(files.identity(main));
    reader.unit(main)?;
    let visible = reader.all.len();
    let mut unit_ends = vec![visible];
    for unit in units {
        let extension = unit.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !UNIT_EXTENSIONS.contains(&extension) {
            return Err(ImportError::Read(format!(
                "`{}` is not a C/C++ source (`.c`, `.cc`, `.cpp`, `.cxx`, `.c++`, `.C`): give the application's other translation units; the headers they include are read where they are included",
                unit.display()
            )));
        }
        if !reader.seen.insert(files.identity(unit)) {
            return Err(ImportError::Read(format!(
                "`{}` is given twice, or is the main file or a header it includes: give each other translation unit once",
                unit.display()
            )));
        }
        reader.include_dirs = dirs(unit)?;
        reader.found.clear();
        reader.unit(unit)?;
        unit_ends.push(reader.all.len());
    }
    Ok(Application {
        all: reader.all,
        main: visible - 1,
        visible,
        unit_ends,
    })
}

/// The reading of [`read`].
struct Reader<'a> {
    files: &'a dyn Files,
    read: &'a dyn Fn(&Path) -> Result<Source, ImportError>,
    main_dir: PathBuf,
    /// The `-I` directories of the unit being read.
    include_dirs: Vec<PathBuf>,
    /// Where each `#include "…"` name of the unit being read that is not
    /// beside its includer was found in the main file's directory and
    /// `include_dirs`, or `None`: each is looked for once per unit, so that
    /// the lookups are the includes plus the directories, not their product.
    found: BTreeMap<String, Option<PathBuf>>,
    /// Every file read, as [`Files::identity`] names it.
    seen: BTreeSet<PathBuf>,
    bytes: usize,
    all: Vec<Source>,
}

impl Reader<'_> {
    /// Reads `path` (`at`: the `#include` that names it) within the limits.
    fn take(&mut self, path: &Path, at: Option<&Location>) -> Result<Source, ImportError> {
        if self.all.len() >= MAX_FILES {
            return Err(too_many(at, format!("more than {MAX_FILES} files")));
        }
        let source = (self.read)(path)?;
        self.bytes = self.bytes.saturating_add(source.text.len());
        if self.bytes > MAX_BYTES {
            return Err(too_many(
                at,
                format!("more than {} MiB of text", MAX_BYTES >> 20),
            ));
        }
        Ok(source)
    }

    /// Reads the translation unit `path` and the headers it includes not
    /// read yet, breadth first and without recursion, and adds them to
    /// `all`, the unit after its headers.
    fn unit(&mut self, path: &Path) -> Result<(), ImportError> {
        let unit = self.take(path, None)?;
        let first = self.all.len();
        let mut found = includes(&unit);
        let mut unit_dir = unit.path.parent().unwrap_or(Path::new("")).to_owned();
        let mut next = first;
        loop {
            for (include, at) in found {
                // As the capture's compiler looks: the including file's
                // directory, the recorder's (which has the names of OP2's
                // headers, never read here), the main file's, then `-I`.
                let own = unit_dir.join(&include);
                let path = if self.files.is_file(&own) {
                    Some(own)
                } else if crate::capture::RECORDER_HEADERS.contains(&include.as_str()) {
                    None
                } else if let Some(found) = self.found.get(&include) {
                    found.clone()
                } else {
                    let found = std::iter::once(&self.main_dir)
                        .chain(&self.include_dirs)
                        .map(|d| d.join(&include))
                        .find(|p| self.files.is_file(p));
                    self.found.insert(include.clone(), found.clone());
                    found
                };
                if let Some(path) = path
                    && self.seen.insert(self.files.identity(&path))
                {
                    let header = self.take(&path, Some(&at))?;
                    self.all.push(header);
                }
            }
            let Some(header) = self.all.get(next) else {
                break;
            };
            found = includes(header);
            unit_dir = header.path.parent().unwrap_or(Path::new("")).to_owned();
            next += 1;
        }
        self.all.push(unit);
        Ok(())
    }
}

fn too_many(at: Option<&Location>, what: String) -> ImportError {
    let at = at.map_or(String::new(), |at| format!("{at}: "));
    ImportError::Read(format!(
        "{at}the application's sources and the headers they include come to {what}, which is more than op2 import reads"
    ))
}

/// What a translation unit gives the link and asks of it: the functions and
/// variables it defines that other units can use (not `static`), whether one
/// is `main`, and the names it uses without defining them.
#[derive(Debug, Default)]
pub struct Symbols {
    /// Functions defined, and variables defined at file scope, not `static`
    /// (a linker takes a unit for either).
    pub defines: Vec<String>,
    /// Whether it defines `main`.
    pub main: bool,
    /// Functions called, kernels named by `op_par_loop`, names declared
    /// `extern` in its own text, and every other name its code uses that
    /// its own text does not declare (a global of another unit, declared
    /// `extern` in a header it includes).
    pub uses: Vec<String>,
}

/// The [`Symbols`] of `source`'s own text (its headers are not read: what
/// they define inline is every unit's), in one walk. A name counts as used
/// where the text never declares it, in any scope: a local or a parameter
/// named as another unit's global hides it (a linker would not take that
/// unit for it either, or only for another use).
pub fn symbols(source: &Source) -> Symbols {
    let mut symbols = Symbols::default();
    // Names this text declares (locals, parameters, `static`s, its own
    // definitions), and the identifiers its code names.
    let mut declared: BTreeSet<&str> = BTreeSet::new();
    let mut named: BTreeSet<&str> = BTreeSet::new();
    walk(source.tree.root_node(), |node, ancestors| {
        match node.kind() {
            "function_definition" => {
                if let Some(name) = crate::inline::function_name(source, node) {
                    declared.insert(name);
                    if name == "main" {
                        symbols.main = true;
                    } else if !has_storage(source, node, "static") {
                        symbols.defines.push(name.to_owned());
                    }
                }
            }
            "declaration" | "parameter_declaration" => {
                let at_file_scope = node.kind() == "declaration"
                    && ancestors.iter().all(|a| {
                        matches!(
                            a.kind(),
                            "translation_unit"
                                | "linkage_specification"
                                | "declaration_list"
                                | "preproc_if"
                                | "preproc_ifdef"
                                | "preproc_else"
                                | "preproc_elif"
                                | "preproc_elifdef"
                        )
                    });
                let is_extern = has_storage(source, node, "extern");
                let is_static = has_storage(source, node, "static");
                let mut cursor = node.walk();
                for declarator in node.children_by_field_name("declarator", &mut cursor) {
                    // A prototype declares a function, which is a use
                    // only where it is called.
                    let Some((name, _, _)) = c::declared_name(declarator) else {
                        continue;
                    };
                    let name = source.text(name);
                    if is_extern {
                        symbols.uses.push(name.to_owned());
                    } else {
                        declared.insert(name);
                        if at_file_scope && !is_static {
                            symbols.defines.push(name.to_owned());
                        }
                    }
                }
            }
            "identifier" => {
                named.insert(source.text(node));
            }
            _ => {}
        }
        if let Some(name) = c::called_name(source, node) {
            if name == "op_par_loop"
                && let Some(kernel) = node
                    .child_by_field_name("arguments")
                    .and_then(c::first_named_child)
                && kernel.kind() == "identifier"
            {
                symbols.uses.push(source.text(kernel).to_owned());
            }
            symbols.uses.push(name.to_owned());
        }
        true
    });
    symbols.uses.extend(
        named
            .into_iter()
            .filter(|name| !declared.contains(name))
            .map(str::to_owned),
    );
    symbols
}

/// Whether `node` (a definition or declaration) has the storage class
/// `word` (`static`, `extern`).
fn has_storage(source: &Source, node: Node<'_>, word: &str) -> bool {
    c::named_children(node)
        .iter()
        .any(|child| child.kind() == "storage_class_specifier" && source.text(*child) == word)
}

/// Which of `candidates` (with their [`Symbols`]) an application whose main
/// file has `main` links, chosen as a linker chooses the members of a
/// library: a unit that defines a function that the units already chosen
/// use and do not define, in the order given, never a unit with a `main` of
/// its own. Each name and each unit is taken once.
pub fn linked(main: &Symbols, candidates: &[Symbols]) -> Vec<usize> {
    linked_counting(main, candidates, &mut 0)
}

/// [`linked`], adding to `steps` one for each unit it looks at and each
/// name it reads, files or looks up (a lookup in a map is one): its work,
/// which a test holds to a few steps per name of the input.
fn linked_counting(main: &Symbols, candidates: &[Symbols], steps: &mut usize) -> Vec<usize> {
    let mut providers: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, candidate) in candidates.iter().enumerate() {
        *steps += 1;
        if candidate.main {
            continue;
        }
        for name in &candidate.defines {
            *steps += 1;
            providers.entry(name.as_str()).or_default().push(i);
        }
    }
    *steps += main.defines.len() + main.uses.len();
    let mut defined: BTreeSet<&str> = main.defines.iter().map(String::as_str).collect();
    let mut asked: BTreeSet<&str> = BTreeSet::new();
    let mut pending: Vec<&str> = main.uses.iter().map(String::as_str).collect();
    let mut chosen = Vec::new();
    let mut taken = vec![false; candidates.len()];
    while let Some(name) = pending.pop() {
        *steps += 1;
        if defined.contains(name) || !asked.insert(name) {
            continue;
        }
        if let Some(&i) = providers.get(name).and_then(|p| p.first())
            && !taken[i]
        {
            taken[i] = true;
            chosen.push(i);
            *steps += candidates[i].defines.len() + candidates[i].uses.len();
            defined.extend(candidates[i].defines.iter().map(String::as_str));
            pending.extend(candidates[i].uses.iter().map(String::as_str));
        }
    }
    chosen.sort_unstable();
    chosen
}

/// `path` without `.` and with each `dir/..` taken away, for telling two
/// spellings of one file apart where the file system is not asked.
pub fn normalised(path: &Path) -> PathBuf {
    let mut out: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            // `/..` is `/`.
            Component::ParentDir if matches!(out.last(), Some(Component::RootDir)) => {}
            other => out.push(other),
        }
    }
    out.iter().collect()
}

/// The paths of the `#include "…"` lines of `source` outside functions,
/// with where each is written.
pub fn includes(source: &Source) -> Vec<(String, Location)> {
    let mut out = Vec::new();
    walk(source.tree.root_node(), |node, _| {
        if node.kind() == "preproc_include" {
            if let Some(path) = node.child_by_field_name("path")
                && path.kind() == "string_literal"
                && let Some(value) = c::string_literal(source, path)
            {
                out.push((value, source.location(node)));
            }
            return false;
        }
        node.kind() != "function_definition"
    });
    out
}

/// The items at file scope of `source`, those inside preprocessor
/// conditionals (a header's include guard) and `extern "C" { … }` too, in
/// order (iteratively).
pub fn file_scope<'t>(source: &'t Source) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    // Nodes still to visit, the next last.
    let mut pending: Vec<Node<'t>> = c::named_children(source.tree.root_node());
    pending.reverse();
    while let Some(node) = pending.pop() {
        let inside = match node.kind() {
            "preproc_if" | "preproc_ifdef" | "preproc_else" | "preproc_elif"
            | "preproc_elifdef" | "declaration_list" => Some(node),
            "linkage_specification" => node.child_by_field_name("body"),
            _ => None,
        };
        match inside {
            Some(inside) if inside.kind() != "declaration" => {
                pending.extend(c::named_children(inside).into_iter().rev());
            }
            Some(declaration) => out.push(declaration),
            None => out.push(node),
        }
    }
    out
}

/// The names of the functions that the host code after the first par_loop
/// and the kernels its par_loops name may run, followed from call to call
/// through every definition of each name in `sources` (iteratively; each
/// function once).
pub fn reached<'s>(
    roots: impl IntoIterator<Item = (&'s Source, Node<'s>)>,
    definitions: &BTreeMap<String, Vec<(&'s Source, Node<'s>)>>,
) -> BTreeSet<String> {
    let mut reached = BTreeSet::new();
    let mut pending: Vec<(&Source, Node<'_>)> = roots.into_iter().collect();
    while let Some((source, node)) = pending.pop() {
        walk(node, |n, _| {
            if n.kind() == "call_expression"
                && let Some(function) = n.child_by_field_name("function")
            {
                let name = match function.kind() {
                    "template_function" => function.child_by_field_name("name"),
                    "identifier" | "qualified_identifier" => Some(function),
                    _ => None,
                }
                .map(|f| source.text(f));
                if let Some(name) = name
                    && let Some(defined) = definitions.get(name)
                    && reached.insert(name.to_owned())
                {
                    pending.extend(defined.iter().copied());
                }
            }
            true
        });
    }
    reached
}

/// The first two places where a name of `names` is defined in different
/// files of `definitions`, by name.
pub fn defined_twice<'s>(
    names: &BTreeSet<String>,
    definitions: &BTreeMap<String, Vec<(&'s Source, Node<'s>)>>,
) -> Vec<(String, Location, Location)> {
    let mut out = Vec::new();
    for name in names {
        let Some(defined) = definitions.get(name) else {
            continue;
        };
        let Some((first, node)) = defined.first() else {
            continue;
        };
        if let Some((other, other_node)) = defined.iter().find(|(s, _)| s.path != first.path) {
            out.push((
                name.clone(),
                first.location(*node),
                other.location(*other_node),
            ));
        }
    }
    out
}

/// Whether `a` and `b` define their macro alike: the same parameters and
/// the same body but for spaces.
pub fn same_definition(a: &Define, b: &Define) -> bool {
    let squeezed = |text: &str| text.split_whitespace().collect::<String>();
    a.params == b.params && a.variadic == b.variadic && squeezed(&a.body) == squeezed(&b.body)
}

/// One table of macros from the tables of the main file's translation unit
/// (the first) and of the other units: a macro only another unit defines
/// is added as it defines it; one defined differently is kept as the main
/// file's and returned by name with the two definitions.
pub fn merge_macros(
    tables: impl IntoIterator<Item = Vec<Define>>,
) -> (Vec<Define>, Vec<(Define, Define)>) {
    let mut tables = tables.into_iter();
    let mut merged = tables.next().unwrap_or_default();
    let mut index: BTreeMap<String, usize> = merged
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.clone(), i))
        .collect();
    let mut differing = Vec::new();
    let mut reported = BTreeSet::new();
    for table in tables {
        for define in table {
            match index.get(&define.name) {
                None => {
                    index.insert(define.name.clone(), merged.len());
                    merged.push(define);
                }
                Some(&i) => {
                    let kept = &merged[i];
                    if !same_definition(kept, &define) && reported.insert(define.name.clone()) {
                        differing.push((kept.clone(), define));
                    }
                }
            }
        }
    }
    (merged, differing)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files in memory: `text` by path, and how many times `is_file` was
    /// asked.
    struct Counted {
        text: BTreeMap<PathBuf, String>,
        asked: std::cell::Cell<usize>,
    }

    impl Files for Counted {
        fn is_file(&self, path: &Path) -> bool {
            self.asked.set(self.asked.get() + 1);
            self.text.contains_key(path)
        }

        fn read(&self, path: &Path) -> Result<String, String> {
            self.text
                .get(path)
                .cloned()
                .ok_or_else(|| format!("no `{}`", path.display()))
        }
    }

    /// `files` read as [`crate::Disk`] would not: from memory.
    fn read_counted(
        files: &Counted,
        include_dirs: &[PathBuf],
        unit_flags: &BTreeMap<PathBuf, Flags>,
    ) -> Result<Application, ImportError> {
        let parse = |path: &Path| -> Result<Source, ImportError> {
            let text = files.read(path).map_err(ImportError::Read)?;
            Source::parse(path, path.display().to_string(), text).map_err(ImportError::Read)
        };
        read(
            Path::new("/app/main.cpp"),
            &[],
            include_dirs,
            unit_flags,
            files,
            &parse,
        )
    }

    #[test]
    fn includes_are_looked_for_once_each_whatever_the_directories() {
        // Many `#include "…"` of a missing header and of one found in the
        // last directory, with many `-I` directories: each name is looked
        // for in the directories once, so the lookups are the includes
        // plus the directories, not their product. Counted, not timed.
        for (lines, dirs) in [(100, 100), (1_000, 1_000)] {
            let text = "#include \"missing.h\"\n#include \"found.h\"\n".repeat(lines / 2);
            let include_dirs: Vec<PathBuf> =
                (0..dirs).map(|k| PathBuf::from(format!("/i{k}"))).collect();
            let mut text_of = BTreeMap::new();
            text_of.insert(PathBuf::from("/app/main.cpp"), text);
            let last = include_dirs[dirs - 1].join("found.h");
            text_of.insert(last.clone(), "int found;\n".to_owned());
            let files = Counted {
                text: text_of,
                asked: std::cell::Cell::new(0),
            };
            // Half from the database's entry, half given.
            let (own, given) = include_dirs.split_at(dirs / 2);
            let flags = Flags {
                include_dirs: own.to_vec(),
                ..Flags::default()
            };
            let unit_flags = BTreeMap::from([(PathBuf::from("/app/main.cpp"), flags)]);
            let application = read_counted(&files, given, &unit_flags).unwrap();
            assert_eq!(application.all.len(), 2);
            assert_eq!(application.all[0].path, last);
            let asked = files.asked.get();
            // Each include beside its includer, then each name once in the
            // main file's directory and every `-I` (at least that: a count
            // that has stopped counting fails).
            let least = lines + 2 * (dirs + 1) - 1;
            assert!(
                (least..=2 * least).contains(&asked),
                "{asked} lookups for {lines} includes and {dirs} directories"
            );
        }
    }

    #[test]
    fn more_include_directories_than_the_limit_is_an_error_naming_the_unit() {
        let files = Counted {
            text: BTreeMap::from([(
                PathBuf::from("/app/main.cpp"),
                "#include \"a.h\"\n".to_owned(),
            )]),
            asked: std::cell::Cell::new(0),
        };
        let dirs: Vec<PathBuf> = (0..=MAX_SEARCH_DIRS)
            .map(|k| PathBuf::from(format!("/i{k}")))
            .collect();
        let Err(ImportError::Read(why)) = read_counted(&files, &dirs, &BTreeMap::new()) else {
            panic!("{} directories taken", dirs.len());
        };
        assert_eq!(
            why,
            "the `#include \"…\"` of `/app/main.cpp` would be looked for in 1025 directories (the `-I` and `-iquote` of its compilation database entry and the `-I` given), more than the 1024 op2 import looks in"
        );
        // No file was looked for.
        assert_eq!(files.asked.get(), 0);
        // At the limit, it is read.
        assert!(read_counted(&files, &dirs[1..], &BTreeMap::new()).is_ok());
    }

    #[test]
    fn paths_are_normalised_without_the_file_system() {
        assert_eq!(
            normalised(Path::new("app/./kernels/../app.h")),
            Path::new("app/app.h")
        );
        assert_eq!(normalised(Path::new("../a/b")), Path::new("../a/b"));
        assert_eq!(normalised(Path::new("/a/../../b")), Path::new("/b"));
    }

    #[test]
    fn file_scope_items_inside_conditionals_and_extern_c_are_found_in_order() {
        let text = "#ifndef G\n#define G\nextern double a;\n#if X\nint b;\n#else\nint c;\n#endif\n#endif\nextern \"C\" { float d; }\nextern \"C\" int e;\nvoid f() { int g; }\n";
        let source = Source::parse(Path::new("g.h"), "g.h".to_owned(), text.to_owned()).unwrap();
        let declared: Vec<&str> = file_scope(&source)
            .into_iter()
            .filter(|n| n.kind() == "declaration")
            .filter_map(|n| n.child_by_field_name("declarator"))
            .map(|d| source.text(d))
            .collect();
        assert_eq!(declared, ["a", "b", "c", "d", "e"]);
    }

    #[test]
    fn units_are_linked_as_a_linker_chooses_library_members() {
        let parse = |text: &str| {
            symbols(
                &Source::parse(Path::new("u.cpp"), "u.cpp".to_owned(), text.to_owned()).unwrap(),
            )
        };
        let main = parse(
            "static double local() { return 1.0; }\nint main() { op_par_loop(kern, \"kern\", s); build(); local(); }\n",
        );
        assert!(main.main);
        assert_eq!(main.defines, Vec::<String>::new());
        let candidates = [
            // Another program: never linked, though it defines `build`.
            parse("void build() {}\nint main() {}\n"),
            parse("void unrelated() {}\n"),
            // Defines the kernel, and calls what the last defines.
            parse("void kern(double *x) { helper(x); }\n"),
            // `build`, not `static`: linked; its `static` helper is its own.
            parse("static void own() {}\nvoid build() { own(); }\n"),
            parse("void helper(double *x) {}\nvoid local() {}\n"),
        ];
        assert_eq!(linked(&main, &candidates), [2, 3, 4]);
    }

    #[test]
    fn a_unit_that_only_defines_globals_the_others_use_is_linked() {
        let parse = |text: &str| {
            symbols(
                &Source::parse(Path::new("u.cpp"), "u.cpp".to_owned(), text.to_owned()).unwrap(),
            )
        };
        // `gam` and `cfl` come from a header's `extern`s (not read here);
        // `eps` is declared `extern` in the main file itself; `i` and `n`
        // are the main file's own.
        let main = parse(
            "extern double eps;\nint n = 4;\nint main() { int i = 0; op_decl_const(1, \"double\", &gam); double c = cfl * eps + i + n; }\n",
        );
        assert_eq!(main.defines, ["n"]);
        for name in ["gam", "cfl", "eps", "op_decl_const"] {
            assert!(
                main.uses.iter().any(|u| u == name),
                "{name}: {:?}",
                main.uses
            );
        }
        for name in ["i", "n", "c", "main"] {
            assert!(
                !main.uses.iter().any(|u| u == name),
                "{name}: {:?}",
                main.uses
            );
        }
        let candidates = [
            // Globals only, one of them in `extern "C"`: linked.
            parse("double gam = 1.4, gm1;\nextern \"C\" { double cfl; }\n"),
            // A `static` global and a local named as the main file's uses,
            // and a global of a name nobody uses: not linked.
            parse("static double eps = 1e-9;\nvoid f() { double i; }\ndouble unused;\n"),
            // Defines `eps`, and uses `gm1`, which the first defines.
            parse("double eps = gm1 * 1e-9;\n"),
            // Only declares: `extern` is a use, not a definition.
            parse("extern double gam;\n"),
        ];
        assert_eq!(candidates[0].defines, ["gam", "gm1", "cfl"]);
        assert_eq!(candidates[1].defines, ["f", "unused"]);
        assert_eq!(candidates[3].defines, Vec::<String>::new());
        assert_eq!(linked(&main, &candidates), [0, 2]);
    }

    #[test]
    fn units_are_linked_in_linear_time() {
        // A chain of units, each calling the next one's function, listed
        // last first: a linker that went over the units again until none
        // was added would add one a pass. Counted, not timed: a few steps
        // per name of the input.
        for n in [1_000, 20_000] {
            let main = Symbols {
                uses: vec!["f0".to_owned()],
                ..Symbols::default()
            };
            let candidates: Vec<Symbols> = (0..n)
                .rev()
                .map(|i| Symbols {
                    defines: vec![format!("f{i}")],
                    main: false,
                    uses: vec![format!("f{}", i + 1), "f0".to_owned()],
                })
                .collect();
            let names = 1 + 3 * n;
            let mut steps = 0;
            assert_eq!(linked_counting(&main, &candidates, &mut steps).len(), n);
            // At least one each: a count that has stopped counting fails.
            assert!(
                (names..=3 * names).contains(&steps),
                "{steps} steps for {n} units of {names} names"
            );
        }
    }

    #[test]
    fn macros_only_another_unit_defines_are_added_and_different_ones_returned() {
        let table = |text: &str| c::macro_table(text);
        let (merged, differing) = merge_macros(vec![
            table("#define A 1\n#define B(x) (x)\n"),
            table("#define A 1\n#define C 3\n#define B(y) (y * 2)\n"),
            table("#define B(x) (x + 1)\n"),
        ]);
        let names: Vec<&str> = merged.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["A", "B", "C"]);
        assert_eq!(merged[1].body, "(x)");
        // Reported once, with the main file's definition first.
        assert_eq!(differing.len(), 1);
        assert_eq!(differing[0].0.body, "(x)");
        assert_eq!(differing[0].1.body, "(y * 2)");
    }
}
