-- .op2 files are OP2 programs.
vim.filetype.add({ extension = { op2 = 'op2' } })
