-- Minimal init for the headless test (scripts/test-editors.sh): this plugin
-- on the runtimepath, the compiled parser from OP2_PARSER_DIR, and the
-- server from OP2_BIN, configured the way docs/editors.md tells users to.
local plugin = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
vim.opt.runtimepath:prepend(plugin)
if os.getenv('OP2_PARSER_DIR') then
  vim.opt.runtimepath:append(os.getenv('OP2_PARSER_DIR'))
end
vim.opt.swapfile = false
vim.opt.shadafile = 'NONE'

vim.lsp.config('op2', { cmd = { os.getenv('OP2_BIN') or 'op2', 'lsp' } })
vim.lsp.enable('op2')
