-- Buffer settings for .op2 files, and tree-sitter highlighting when the op2
-- parser is installed (parser/op2.so on 'runtimepath'; see docs/editors.md).
--
--   vim.g.op2_recommended_style = false  keep your own indentation settings
--   vim.g.op2_treesitter = false         do not start tree-sitter highlighting
--   vim.g.op2_folds = true               fold with the tree-sitter folds query

if vim.b.did_ftplugin then
  return
end
vim.b.did_ftplugin = 1

local undo = { 'setlocal commentstring< comments< cindent< cinoptions<' }

vim.bo.commentstring = '// %s'
vim.bo.comments = 's1:/*,mb:*,ex:*/,://'
-- C-style indentation; nvim-treesitter's indentexpr (queries/op2/indents.scm)
-- replaces it where that is enabled.
vim.bo.cindent = true
vim.bo.cinoptions = '(s,m1'

if vim.g.op2_recommended_style ~= false then
  vim.bo.expandtab = true
  vim.bo.shiftwidth = 4
  vim.bo.softtabstop = 4
  table.insert(undo, 'setlocal expandtab< shiftwidth< softtabstop<')
end

if vim.g.op2_treesitter ~= false then
  local ok, loaded = pcall(vim.treesitter.language.add, 'op2')
  -- A parser built before the queries last changed (the plugin is linked
  -- to the repository, the parser a copy built by hand) fails on them: say
  -- so once, instead of an error on every .op2 buffer.
  local started, why = false, nil
  if ok and loaded then
    started, why = pcall(vim.treesitter.start, 0, 'op2')
    if not started and not vim.g.op2_parser_warned then
      vim.g.op2_parser_warned = true
      vim.notify(
        'op2: tree-sitter highlighting is off: the op2 parser does not fit the queries (rebuild it'
          .. ' from grammar/src/parser.c, see docs/editors.md): '
          .. tostring(why),
        vim.log.levels.WARN
      )
    end
  end
  if started then
    table.insert(undo, 'lua pcall(vim.treesitter.stop)')
    if vim.g.op2_folds then
      vim.wo[0][0].foldmethod = 'expr'
      vim.wo[0][0].foldexpr = 'v:lua.vim.treesitter.foldexpr()'
      vim.wo[0][0].foldlevel = 99
    end
  end
end

-- Neovim skips a server whose command is not executable without a word:
-- say so once, with where to look.
if not vim.g.op2_server_missing_warned then
  local missing = require('op2').missing_server()
  if missing then
    vim.g.op2_server_missing_warned = true
    vim.notify(missing, vim.log.levels.WARN)
  end
end

vim.b.undo_ftplugin = table.concat(undo, ' | ')
