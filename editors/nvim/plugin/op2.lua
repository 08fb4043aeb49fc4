-- User commands of the op2 plugin. They act on the current buffer through
-- the attached op2 language server (`vim.lsp.enable('op2')`).
if vim.g.loaded_op2 then
  return
end
vim.g.loaded_op2 = 1

vim.api.nvim_create_user_command('Op2Build', function()
  require('op2').build()
end, { desc = 'op2: build the POETS graph of this file now' })

vim.api.nvim_create_user_command('Op2ShowDeviceType', function(opts)
  require('op2').show_device_type(opts.args ~= '' and opts.args or nil)
end, {
  nargs = '?',
  desc = 'op2: show the generated device type of a set (default: the word under the cursor)',
})

vim.api.nvim_create_user_command('Op2OpenGraph', function()
  require('op2').open_graph()
end, { desc = 'op2: open the graph file that build on save writes' })

vim.api.nvim_create_user_command('Op2Import', function(opts)
  require('op2').import(opts.args ~= '' and vim.fn.expand(opts.args) or nil)
end, {
  nargs = '?',
  complete = 'file',
  desc = 'op2: import an OP2 C/C++ application (default: this file) into .op2 and its instance',
})
