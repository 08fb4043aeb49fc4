; Syntax highlighting for .op2 files.
;
; Capture names follow nvim-treesitter (which tree-sitter-highlight and Helix
; also read, falling back along the dots: `@keyword.repeat` is `keyword` where
; a theme knows no more). Later patterns override earlier ones, as in Neovim
; and tree-sitter-highlight, so the catch-all `@variable` comes first.

; ----------------------------------------------------------------------------
; Names
; ----------------------------------------------------------------------------

(identifier) @variable

; Sets are the domains everything else is declared on, so they read as types
; wherever they are named (the same capture at the declaration, because
; tree-sitter-highlight colours a reference like its definition).
(set_declaration
  name: (identifier) @type)

(map_declaration
  from: (identifier) @type
  to: (identifier) @type)

(dat_declaration
  set: (identifier) @type)

(par_loop_statement
  set: (identifier) @type)

(len_expression
  set: (identifier) @type)

; Maps and consts do not change while the program runs.
(map_declaration
  name: (identifier) @constant)

(par_loop_argument
  map: (identifier) @constant)

(const_declaration
  name: (identifier) @constant)

; Dats and globals are the program's mutable data.
(dat_declaration
  name: (identifier) @variable)

(global_declaration
  name: (identifier) @variable)

(parameter
  name: (identifier) @variable.parameter)

(kernel_definition
  name: (identifier) @function)

(par_loop_statement
  kernel: (identifier) @function.call)

; `as NAME` names the invocation, not a value.
(par_loop_statement
  alias: (identifier) @label)

(call_expression
  function: (identifier) @function.call)

(call_expression
  function: (identifier) @function.builtin
  (#any-of? @function.builtin
    "sqrt" "fabs" "abs" "fmin" "fmax" "min" "max" "pow" "exp" "log" "log10"
    "sin" "cos" "tan" "asin" "acos" "atan" "atan2" "floor" "ceil" "round"
    "isnan" "isinf"))

(goto_statement
  label: (identifier) @label)

; ----------------------------------------------------------------------------
; Types and modes
; ----------------------------------------------------------------------------

(primitive_type) @type.builtin

(struct_specifier
  name: (identifier) @type)

(access_mode) @constant.builtin

"INFO" @constant.builtin

(info_mode
  global: (identifier) @variable)

; ----------------------------------------------------------------------------
; Keywords
; ----------------------------------------------------------------------------

[
  "set"
  "map"
  "dat"
  "global"
  "on"
  "over"
  "as"
  "print"
  "printf"
  "fetch"
  "into"
] @keyword

(const_declaration
  "const" @keyword)

(const_qualifier) @keyword.modifier

[
  "kernel"
  "main"
] @keyword.function

"import" @keyword.import

"len" @keyword.operator

(index_argument) @keyword.operator

"par_loop" @keyword.repeat

[
  "for"
  "while"
  "do"
  "break"
  "continue"
] @keyword.repeat

[
  "if"
  "else"
  "switch"
  "case"
  "default"
] @keyword.conditional

[
  "return"
  "exit"
] @keyword.return

"goto" @keyword

"struct" @keyword.type

; ----------------------------------------------------------------------------
; Literals
; ----------------------------------------------------------------------------

(integer_literal) @number

(float_literal) @number.float

(boolean_literal) @boolean

(string_literal) @string

(import_declaration
  path: (string_literal) @string.special.path)

(escape_sequence) @string.escape

(comment) @comment

; ----------------------------------------------------------------------------
; Operators and punctuation
; ----------------------------------------------------------------------------

[
  "="
  "+="
  "-="
  "*="
  "/="
  "%="
  "&="
  "|="
  "^="
  "<<="
  ">>="
  "||"
  "&&"
  "|"
  "^"
  "&"
  "=="
  "!="
  "<"
  "<="
  ">"
  ">="
  "<<"
  ">>"
  "+"
  "-"
  "*"
  "/"
  "%"
  "!"
  "~"
  "++"
  "--"
  "->"
] @operator

; `double *q` in a parameter, and the unsupported `double *p` in a body.
(pointer_marker) @operator

(conditional_expression
  [
    "?"
    ":"
  ] @keyword.conditional.ternary)

[
  "("
  ")"
  "["
  "]"
  "{"
  "}"
] @punctuation.bracket

[
  ";"
  ","
] @punctuation.delimiter

; `name: type` in declarations and `case 1:`; the ternary `:` is above.
(map_declaration
  ":" @punctuation.delimiter)

(dat_declaration
  ":" @punctuation.delimiter)

(const_declaration
  ":" @punctuation.delimiter)

(global_declaration
  ":" @punctuation.delimiter)

(case_label
  ":" @punctuation.delimiter)
