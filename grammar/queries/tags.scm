; Symbols for code navigation (tree-sitter tags, GitHub, ctags-like tools).
; The comment lines directly above a kernel are its documentation.

((comment)* @doc
  .
  (kernel_definition
    name: (identifier) @name) @definition.function
  (#strip! @doc "^//\\s*")
  (#select-adjacent! @doc @definition.function))

(main_definition
  "main" @name) @definition.function

; Sets are the domains the other declarations are defined on.
(set_declaration
  name: (identifier) @name) @definition.type

; Maps and consts do not change while the program runs.
(map_declaration
  name: (identifier) @name) @definition.constant

(const_declaration
  name: (identifier) @name) @definition.constant

; Dats and globals are the program's mutable data.
(dat_declaration
  name: (identifier) @name) @definition.variable

(global_declaration
  name: (identifier) @name) @definition.variable

; A par_loop applies its kernel to every element of the set.
(par_loop_statement
  kernel: (identifier) @name) @reference.call
