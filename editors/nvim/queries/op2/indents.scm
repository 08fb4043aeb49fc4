; Indentation, in the style of nvim-treesitter's indents.scm.
;
; @indent.begin  the lines inside this node are indented one level
; @indent.end    this token ends the indented region
; @indent.branch this line goes back to the level of the node that began it
; @indent.dedent the lines inside this node are indented one level less
; @indent.auto   keep the indentation of the previous line
; @indent.ignore leave these lines as they are

[
  (compound_statement)
  (parameter_list)
  (par_loop_arguments)
  (initializer_list)
  (argument_list)
  (parenthesized_expression)
] @indent.begin

; `print(` and `len(` have no list node of their own.
(print_statement
  "(" @indent.begin)

(print_statement
  ")" @indent.end)

; A body without braces is indented under its `for`, `while` or `if`.
((for_statement
  body: (_) @_body) @indent.begin
  (#not-has-type? @_body compound_statement))

((while_statement
  body: (_) @_body) @indent.begin
  (#not-has-type? @_body compound_statement))

((do_statement
  body: (_) @_body) @indent.begin
  (#not-has-type? @_body compound_statement))

((if_statement
  consequence: (_) @_consequence) @indent.begin
  (#not-has-type? @_consequence compound_statement))

; `else` lines up with its `if`. After a consequence without braces the
; `if` is indented (above), so a braced `else` or an `else if` is taken back
; one level rather than indented twice.
(if_statement
  "else" @indent.branch)

((if_statement
  consequence: (_) @_consequence
  alternative: [
    (compound_statement)
    (if_statement)
  ] @indent.dedent)
  (#not-has-type? @_consequence compound_statement))

; The `while` of a `do … while` lines up with its `do`.
(do_statement
  "while" @indent.branch)

; `case 1:` and `default:` of the unsupported `switch` sit one level out.
(case_label) @indent.branch

(compound_statement
  "}" @indent.end)

(parameter_list
  ")" @indent.end)

(par_loop_arguments
  ")" @indent.end)

(initializer_list
  "}" @indent.end)

(argument_list
  ")" @indent.end)

(parenthesized_expression
  ")" @indent.end)

[
  ")"
  "]"
  "}"
] @indent.branch

(comment) @indent.auto

(string_literal) @indent.ignore
