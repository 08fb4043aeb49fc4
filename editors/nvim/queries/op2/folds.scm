; Folding ranges (Neovim `foldexpr=v:lua.vim.treesitter.foldexpr()`, and any
; editor that folds on @fold captures).

[
  (kernel_definition)
  (main_definition)
  (compound_statement)
  (parameter_list)
  (par_loop_arguments)
  (initializer_list)
  (argument_list)
] @fold

; Block comments only: a run of `//` lines is one node per line.
((comment) @fold
  (#match? @fold "^/\\*"))
