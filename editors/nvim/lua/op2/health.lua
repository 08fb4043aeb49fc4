-- :checkhealth op2
local M = {}

function M.check()
  local health = vim.health
  health.start('op2')

  if vim.fn.has('nvim-0.11') == 1 then
    health.ok('Neovim ' .. tostring(vim.version()))
  else
    health.error('Neovim 0.11 or newer is needed for lsp/op2.lua (vim.lsp.config / vim.lsp.enable)')
  end

  local config = vim.lsp.config and vim.lsp.config.op2
  local op2 = require('op2')
  local cmd = config and type(config.cmd) == 'table' and config.cmd[1] or op2.server_path() or op2.NOT_FOUND
  if cmd == op2.NOT_FOUND then
    local _, why = op2.server_path()
    health.error(('server: none found: %s'):format(why or 'it was not found when the configuration was read'), {
      'Build it with `cargo install --path server/cli` in the op2 repository, which puts `op2` on PATH,',
      'or set g:op2_server_path to its absolute path before the first .op2 buffer opens',
    })
  elseif vim.fn.executable(cmd) == 1 and not vim.fs.basename(cmd):match('^op2') then
    -- A wrapper (`env`, `nice`, a script) that starts op2: its own
    -- `--version` says nothing about the server.
    health.ok(('server: started through %s (not run here)'):format(vim.fn.exepath(cmd)))
  elseif vim.fn.executable(cmd) == 1 then
    -- `wait` kills the process after 5 s and answers nil when something it
    -- started still holds its output.
    local ran, result = pcall(function()
      return vim.system({ cmd, '--version' }, { text = true }):wait(5000)
    end)
    local version = ran and result and result.code == 0 and vim.trim(result.stdout or '') or ''
    if version:match('^op2 ') then
      health.ok(('server: %s (%s)'):format(vim.fn.exepath(cmd), version))
    else
      -- It is there but does not run (a broken build, a library missing,
      -- another program of the same name): the server would not start.
      local why
      if not ran then
        why = tostring(result)
      elseif result == nil or result.code == 124 then
        why = 'it did not answer within 5 s'
      elseif (result.signal or 0) ~= 0 then
        why = ('it was killed by signal %d'):format(result.signal)
      elseif result.code ~= 0 then
        why = ('it exited with %d: %s'):format(result.code, vim.trim(result.stderr or ''))
      else
        why = ('it printed %q, not an op2 version'):format(vim.trim(result.stdout or ''))
      end
      health.error(('server: `%s --version` failed: %s'):format(vim.fn.exepath(cmd), why), {
        'Rebuild it with `cargo install --path server/cli` in the op2 repository,',
        "or point the config at a working one: vim.lsp.config('op2', { cmd = { '/path/to/op2', 'lsp' } })",
      })
    end
  else
    health.error(('server: `%s` is not executable'):format(cmd), {
      'Build it with `cargo install --path server/cli` in the op2 repository, which puts `op2` on PATH,',
      "or point the config at it: vim.lsp.config('op2', { cmd = { '/path/to/op2', 'lsp' } })",
    })
  end

  local enabled = require('op2').enabled()
  if enabled then
    health.ok("vim.lsp.enable('op2') is set")
  elseif enabled == false then
    health.warn("the server is not enabled: add vim.lsp.enable('op2') to your config")
  end

  local ok, loaded = pcall(vim.treesitter.language.add, 'op2')
  if ok and loaded then
    health.ok('tree-sitter parser: ' .. (vim.api.nvim_get_runtime_file('parser/op2.*', false)[1] or 'loaded'))
  else
    health.warn('tree-sitter parser for op2 not found: highlighting falls back to none', {
      'Build grammar/src/parser.c into parser/op2.so on your runtimepath (see docs/editors.md).',
    })
  end

  for _, name in ipairs({ 'highlights', 'locals', 'folds', 'indents' }) do
    local files = vim.treesitter.query.get_files('op2', name)
    -- The query must also parse with the parser found (an older parser
    -- lacks the node types a newer grammar added).
    local parsed, why = true, nil
    if #files > 0 and ok and loaded then
      parsed, why = pcall(vim.treesitter.query.get, 'op2', name)
    end
    if #files > 0 and not parsed then
      health.error(('queries/op2/%s.scm does not fit the parser: %s'):format(name, tostring(why)), {
        'Rebuild parser/op2.so from grammar/src/parser.c (see docs/editors.md): it is older than the queries.',
      })
    elseif #files > 0 then
      health.ok(('queries/op2/%s.scm: %s'):format(name, files[1]))
    else
      health.warn(('queries/op2/%s.scm not found on the runtimepath'):format(name))
    end
  end
end

return M
