-- The op2 language server for Neovim 0.11+: `vim.lsp.enable('op2')` starts
-- `op2 lsp` for every .op2 buffer. Override any field with
-- `vim.lsp.config('op2', { … })`, for example
--
--   vim.lsp.config('op2', {
--     cmd = { '/path/to/op2', 'lsp' },
--     settings = { op2 = { build = { onSave = false } } },
--   })
--
-- `settings.op2` is the server's `op2` section (keys as in VS Code without
-- the `op2.` prefix: build.onSave, build.outDir, build.instance,
-- inlayHints.invocationNames, inlayHints.generatedPins, trace.server); a
-- key the server does not know is named in a warning and left out.

---@type vim.lsp.Config
return {
  -- An absolute path, found here (`~` expanded, $PATH searched without
  -- the current directory): Neovim would look for a bare `op2` where it
  -- runs too, and start a cloned repository's own program.
  cmd = { require('op2').server_path() or require('op2').NOT_FOUND, 'lsp' },
  filetypes = { 'op2' },
  root_markers = { '.git' },
  settings = {},
  handlers = {
    -- The build result arrives as a log message: show it, and keep it for
    -- the statusline (`require('op2').status()`).
    ['window/logMessage'] = function(err, result, ctx)
      require('op2').on_log_message(result, ctx)
      return vim.lsp.handlers['window/logMessage'](err, result, ctx)
    end,
  },
  commands = {
    -- A code lens running the server's command shows the text it returns.
    ['op2.showDeviceType'] = function(command, ctx)
      local args = command.arguments or {}
      require('op2').show_device_type(args[2], ctx.bufnr, args[1])
    end,
  },
  on_attach = function(client, bufnr)
    if vim.g.op2_inlay_hints ~= false and client:supports_method('textDocument/inlayHint') then
      vim.lsp.inlay_hint.enable(true, { bufnr = bufnr })
    end
  end,
}
