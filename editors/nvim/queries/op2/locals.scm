; Scopes, definitions and references, for tree-sitter-highlight (which colours
; a reference like its definition), Neovim and Helix.
;
; Top-level names (sets, maps, dats, consts, globals, kernels) live in the
; file's root scope; parameters and locals in the kernel, block or `for` that
; declares them.

; ----------------------------------------------------------------------------
; Scopes
; ----------------------------------------------------------------------------

[
  (kernel_definition)
  (main_definition)
  (compound_statement)
  (for_statement)
] @local.scope

; ----------------------------------------------------------------------------
; Definitions
; ----------------------------------------------------------------------------

(parameter
  name: (identifier) @local.definition)

(variable_declarator
  name: (identifier) @local.definition)

(set_declaration
  name: (identifier) @local.definition)

(map_declaration
  name: (identifier) @local.definition)

(dat_declaration
  name: (identifier) @local.definition)

(const_declaration
  name: (identifier) @local.definition)

(global_declaration
  name: (identifier) @local.definition)

(kernel_definition
  name: (identifier) @local.definition)

; ----------------------------------------------------------------------------
; References
; ----------------------------------------------------------------------------

; Every other identifier names something; definitions above take precedence.
; Labels of the unsupported `goto` and the `as` name of a par_loop are not
; references to anything.
(identifier) @local.reference
