-- The op2 plugin's functions: the server's commands (build, device type),
-- the graph file, and the last build for a statusline.
local M = {}

--- The last build the server reported: { ok, summary, message, time }.
M.last_build = nil

--- How long the synchronous helpers wait for the server, in milliseconds.
M.timeout_ms = 10000

local levels = vim.log.levels

local function notify(message, level)
  vim.notify('op2: ' .. message, level or levels.INFO, { title = 'op2' })
end

local function resolve_buf(bufnr)
  if bufnr == nil or bufnr == 0 then
    return vim.api.nvim_get_current_buf()
  end
  return bufnr
end

--- Whether `vim.lsp.enable('op2')` is set: `vim.lsp.is_enabled` from Neovim
--- 0.11.2 on, the table `vim.lsp.enable` fills before (0.11.0 and 0.11.1).
function M.enabled()
  if vim.lsp.is_enabled then
    return vim.lsp.is_enabled('op2')
  end
  local enabled = rawget(vim.lsp, '_enabled_configs')
  return type(enabled) == 'table' and enabled.op2 ~= nil
end

--- The command of the default configuration (lsp/op2.lua) when no server
--- is found ([`M.server_path`]): an absolute path where nothing is, so
--- that Neovim finds it not executable and starts nothing, rather than a
--- bare `op2` that Neovim would look for in its current directory too.
M.NOT_FOUND = vim.fs.joinpath(vim.fn.stdpath('data'), 'op2-server-not-found', 'op2')

--- Whether `path` is absolute as the system sees it (`isabsolutepath()`
--- takes a leading `~` for absolute, which $PATH does not expand).
local function is_absolute(path)
  if vim.fn.has('win32') == 1 then
    return path:match('^%a:[/\\]') ~= nil or path:match('^[/\\][/\\]') ~= nil
  end
  return path:sub(1, 1) == '/'
end

--- The `op2` the plugin starts, as an absolute path: `g:op2_server_path`
--- (`~` expanded; it must be absolute), else the first `op2` (`op2.exe` on
--- Windows) in an absolute entry of $PATH that is not the current
--- directory. Never one found from where Neovim runs: Neovim on Windows
--- looks in the current directory before $PATH (and takes `op2.bat` or
--- `op2.cmd` there), and a relative entry of $PATH is relative to it, so a
--- bare `op2` would start a cloned repository's own program. nil and why
--- when there is none.
function M.server_path()
  local configured = vim.g.op2_server_path
  if type(configured) == 'string' and configured ~= '' then
    local path = vim.fn.expand(configured)
    if not is_absolute(path) then
      return nil,
        ('g:op2_server_path is `%s`, a relative path, which would be looked for from the current directory: give an absolute one'):format(
          configured
        )
    end
    return path
  end
  local windows = vim.fn.has('win32') == 1
  local name = windows and 'op2.exe' or 'op2'
  -- As the system reads $PATH: `~` and variables in an entry are not
  -- expanded (such an entry is relative), so absoluteness is asked of the
  -- entry as written, and only an absolute one is normalised.
  local literal = { expand_env = false }
  -- The current directory however it is spelt: through links, and in any
  -- case on Windows.
  local function real(dir)
    local path = vim.uv.fs_realpath(dir) or dir
    return windows and path:lower() or path
  end
  local cwd = real(vim.fn.getcwd())
  for entry in vim.gsplit(vim.env.PATH or '', windows and ';' or ':', { plain = true }) do
    local dir = is_absolute(entry) and vim.fs.normalize(entry, literal) or nil
    if dir and real(dir) ~= cwd then
      local candidate = vim.fs.joinpath(dir, name)
      local stat = vim.uv.fs_stat(candidate)
      if stat and stat.type == 'file' and vim.fn.executable(candidate) == 1 then
        return candidate
      end
    end
  end
  return nil,
    ('`%s` is not on $PATH (only its absolute entries other than the current directory are searched)'):format(
      name
    )
end

--- The server's command when `vim.lsp.enable('op2')` is set, if it has one
--- (a table; a function is the user's own way to start it), and why it is
--- [`M.NOT_FOUND`] when it is.
local function server_command()
  if not M.enabled() then
    return nil
  end
  local config = vim.lsp.config and vim.lsp.config.op2
  local cmd = config and config.cmd
  if type(cmd) == 'table' and type(cmd[1]) == 'string' then
    if cmd[1] == M.NOT_FOUND then
      local _, why = M.server_path()
      return cmd[1], why
    end
    return cmd[1]
  end
  return nil
end

--- A message saying that the enabled server cannot start because its
--- command is not an executable, or nil when it is (or is not enabled).
function M.missing_server()
  local command, why = server_command()
  if command == nil or vim.fn.executable(command) == 1 then
    return nil
  end
  local what = why and ('no language server was found: ' .. why)
    or ('the language server `%s` is not found'):format(command)
  return ('op2: %s, so .op2 files get no diagnostics, hints or builds:'
    .. ' install it (`cargo install --path server/cli` in the op2 repository) or set g:op2_server_path;'
    .. ' see :checkhealth op2'):format(what)
end

--- The op2 client attached to a buffer, or nil with a message saying why.
function M.client(bufnr)
  bufnr = resolve_buf(bufnr)
  local client = vim.lsp.get_clients({ bufnr = bufnr, name = 'op2' })[1]
  if client == nil then
    local missing = M.missing_server()
    notify(
      missing and missing:gsub('^op2: ', '')
        or 'no op2 language server is attached to this buffer (is `vim.lsp.enable("op2")` in your config? see :checkhealth op2)',
      levels.ERROR
    )
  end
  return client
end

--- The buffer whose name is `name` exactly, or nil (`vim.fn.bufnr` takes a
--- pattern, and would find `main.cpp.orig` for `main.cpp`).
local function buffer_named(name)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(buf) == name then
      return buf
    end
  end
  return nil
end

--- Called for every window/logMessage of the server.
function M.on_log_message(result, _ctx)
  if type(result) ~= 'table' or type(result.message) ~= 'string' then
    return
  end
  local message = result.message
  if not message:match('^op2 build') then
    return
  end
  local ok = result.type == vim.lsp.protocol.MessageType.Info or result.type == vim.lsp.protocol.MessageType.Log
  local first = message:match('^[^\n]*')
  M.last_build = {
    ok = ok,
    summary = (first:gsub('^op2 build:%s*', '')),
    message = message,
    time = os.time(),
  }
  if vim.g.op2_notify_builds ~= false then
    vim.schedule(function()
      vim.notify(message, ok and levels.INFO or levels.ERROR, { title = 'op2' })
    end)
  end
end

--- A short text for a statusline: the last build.
function M.status()
  local build = M.last_build
  if build == nil then
    return ''
  end
  return ('op2 %s %s'):format(build.ok and 'built' or 'build failed', os.date('%H:%M', build.time))
end

--- Asks the server to build the graph of a buffer now (op2.build).
function M.build(bufnr)
  bufnr = resolve_buf(bufnr)
  local client = M.client(bufnr)
  if client == nil then
    return false
  end
  local params = { command = 'op2.build', arguments = { vim.uri_from_bufnr(bufnr) } }
  client:request('workspace/executeCommand', params, function(err)
    if err then
      notify('build failed: ' .. tostring(err.message or err), levels.ERROR)
    end
  end, bufnr)
  return true
end

local function show_text(text, source_uri, set)
  local stem = vim.fn.fnamemodify(vim.uri_to_fname(source_uri), ':t:r')
  vim.cmd('vertical new')
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  local name = ('op2-device-type://%s/%s.txt'):format(stem, set or 'all-device-types')
  -- A second request for the same set replaces the old buffer's name.
  local existing = buffer_named(name)
  if existing ~= nil and existing ~= buf then
    vim.api.nvim_buf_delete(existing, { force = true })
  end
  vim.api.nvim_buf_set_name(buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, '\n', { plain = true }))
  vim.bo[buf].filetype = 'text'
  vim.bo[buf].modifiable = false
  vim.bo[buf].readonly = true
  return buf
end

local function is_null(value)
  return value == nil or value == vim.NIL
end

--- Shows the generated device type of `set` (default: the word under the
--- cursor, then the server's default) in a read-only scratch buffer.
--- `on_done(buf_or_nil)` is called when the answer has been handled.
function M.show_device_type(set, bufnr, uri, on_done)
  bufnr = resolve_buf(bufnr)
  local client = M.client(bufnr)
  if client == nil then
    return false
  end
  uri = uri or vim.uri_from_bufnr(bufnr)
  local guessed = false
  if set == nil and vim.api.nvim_get_current_buf() == bufnr then
    local word = vim.fn.expand('<cword>')
    if word:match('^[%a_][%w_]*$') then
      set, guessed = word, true
    end
  end
  local function ask(arguments, callback)
    client:request('workspace/executeCommand', { command = 'op2.showDeviceType', arguments = arguments }, callback, bufnr)
  end
  local function done(err, result, asked_set)
    local buf
    if err then
      notify('cannot show the device type: ' .. tostring(err.message or err), levels.ERROR)
    elseif is_null(result) or type(result) ~= 'string' then
      notify('no generated device type here: put the cursor on a set name, or fix the errors in the program first', levels.WARN)
    else
      buf = show_text(result, uri, asked_set)
    end
    if on_done then
      on_done(buf)
    end
  end
  ask(set and { uri, set } or { uri }, function(err, result)
    if not err and is_null(result) and guessed then
      -- The word under the cursor was not a set: ask for the default.
      ask({ uri }, function(err2, result2)
        done(err2, result2, nil)
      end)
      return
    end
    done(err, result, set)
  end)
  return true
end

--- Where build on save writes the graph of a buffer: `<stem>.graph.xml`
--- beside it, or in `op2.build.outDir` relative to the workspace root.
function M.graph_path(bufnr)
  bufnr = resolve_buf(bufnr)
  local source = vim.api.nvim_buf_get_name(bufnr)
  if source == '' then
    return nil
  end
  local stem = vim.fn.fnamemodify(source, ':t:r')
  local client = vim.lsp.get_clients({ bufnr = bufnr, name = 'op2' })[1]
  local settings = client and client.settings or {}
  local out_dir = vim.tbl_get(settings, 'op2', 'build', 'outDir') or ''
  if out_dir ~= '' and client and client.root_dir then
    return vim.fs.normalize(vim.fs.joinpath(client.root_dir, out_dir, stem .. '.graph.xml'))
  end
  return vim.fs.joinpath(vim.fn.fnamemodify(source, ':p:h'), stem .. '.graph.xml')
end

--- Opens the graph file of the current buffer: where the server says build
--- on save writes it (`op2.graphPath`, links resolved as the build resolves
--- them), or, with no server or one too old to know the command, where
--- `graph_path` works it out. `on_done(opened)` is called when it is done.
function M.open_graph(bufnr, on_done)
  bufnr = resolve_buf(bufnr)
  local function finish(opened)
    if on_done then
      on_done(opened)
    end
    return opened
  end
  local function open(path)
    if path == nil then
      notify('save the buffer to a file first; the graph is written beside it', levels.WARN)
      return finish(false)
    end
    if vim.fn.filereadable(path) == 0 then
      notify(('no graph at %s yet: save the file or run :Op2Build'):format(path), levels.WARN)
      return finish(false)
    end
    vim.cmd.edit(vim.fn.fnameescape(path))
    return finish(true)
  end
  local client = vim.lsp.get_clients({ bufnr = bufnr, name = 'op2' })[1]
  if client == nil or vim.api.nvim_buf_get_name(bufnr) == '' then
    return open(M.graph_path(bufnr))
  end
  local params = { command = 'op2.graphPath', arguments = { vim.uri_from_bufnr(bufnr) } }
  client:request('workspace/executeCommand', params, function(err, result)
    if err and not tostring(err.message or ''):match('unknown command') then
      notify('no graph is written for this file: ' .. tostring(err.message or err), levels.WARN)
      finish(false)
    elseif not err and type(result) == 'table' and type(result.uri) == 'string' then
      open(vim.uri_to_fname(result.uri))
    else
      open(M.graph_path(bufnr))
    end
  end, bufnr)
  return true
end

--- The C and C++ extensions an OP2 application's main file may have.
local C_SOURCES = { c = true, cc = true, cpp = true, cxx = true, C = true }

--- An op2 client whose workspace holds `path`, or one started for the
--- project of `path` (found by .git) without attaching it to any buffer:
--- the server analyses .op2 files only.
local function client_for(path)
  for _, client in ipairs(vim.lsp.get_clients({ name = 'op2' })) do
    for _, folder in ipairs(client.workspace_folders or {}) do
      local root = vim.uri_to_fname(folder.uri)
      if path:sub(1, #root + 1) == root .. '/' then
        return client
      end
    end
  end
  local config = vim.deepcopy(vim.lsp.config.op2 or {})
  if config.cmd == nil then
    notify('the op2 language server is not configured (is `vim.lsp.enable("op2")` in your config? see :checkhealth op2)', levels.ERROR)
    return nil
  end
  if type(config.cmd) == 'table' and vim.fn.executable(config.cmd[1]) == 0 then
    notify(('the language server `%s` is not found: install it or set g:op2_server_path (see :checkhealth op2)'):format(config.cmd[1]), levels.ERROR)
    return nil
  end
  config.name = 'op2'
  config.root_dir = vim.fs.root(path, config.root_markers or { '.git' }) or vim.fs.dirname(path)
  config.workspace_folders = nil
  local id = vim.lsp.start(config, { attach = false })
  local client = id and vim.lsp.get_client_by_id(id)
  if client == nil then
    notify('cannot start the op2 language server (see :checkhealth op2 and :LspLog)', levels.ERROR)
    return nil
  end
  -- A server that exits at once (a broken binary) ends the wait early.
  vim.wait(M.timeout_ms, function()
    return client.initialized or client:is_stopped()
  end, 20)
  if not client.initialized then
    notify(
      ('the op2 language server %s (see :checkhealth op2 and :LspLog)'):format(
        client:is_stopped() and 'stopped before it started' or ('did not start within %d s'):format(M.timeout_ms / 1000)
      ),
      levels.ERROR
    )
    if not client:is_stopped() then
      client:stop()
    end
    return nil
  end
  return client
end

--- The last import's answer: { program, instance, faithful, report }.
M.last_import = nil

--- Imports an OP2 application (the server's op2.import): the C/C++ main
--- file `path` (default: the current buffer's) into `<stem>.op2` and its
--- instance beside it, then opens the program. The server shows progress;
--- the report is in the notification. `on_done(answer_or_nil)` is called
--- when the answer has been handled.
function M.import(path, on_done)
  path = path or vim.api.nvim_buf_get_name(0)
  if path == '' or not C_SOURCES[vim.fn.fnamemodify(path, ':e')] then
    notify('open the main C/C++ file of an OP2 application (the one that calls op_init) first', levels.WARN)
    return false
  end
  path = vim.fn.fnamemodify(path, ':p')
  local buf = buffer_named(path)
  if buf ~= nil and vim.bo[buf].modified then
    vim.api.nvim_buf_call(buf, function()
      vim.cmd('silent write')
    end)
  end
  local client = client_for(path)
  if client == nil then
    return false
  end
  notify(('importing %s (the application is compiled and its set-up run)'):format(vim.fn.fnamemodify(path, ':t')))
  local params = { command = 'op2.import', arguments = { vim.uri_from_fname(path) } }
  client:request('workspace/executeCommand', params, function(err, result)
    local answer
    if err then
      notify('import failed: ' .. tostring(err.message or err), levels.ERROR)
    elseif type(result) == 'table' and type(result.program) == 'string' then
      answer = result
      M.last_import = result
      local program = vim.uri_to_fname(result.program)
      vim.cmd.edit(vim.fn.fnameescape(program))
      local written = vim.fn.fnamemodify(program, ':t')
      if type(result.instance) == 'string' then
        written = written .. ' and ' .. vim.fn.fnamemodify(vim.uri_to_fname(result.instance), ':t')
      end
      local from = vim.fn.fnamemodify(path, ':t')
      -- The other translation units the server took from the application's
      -- compilation database.
      local units = {}
      for _, unit in ipairs(type(result.units) == 'table' and result.units or {}) do
        table.insert(units, vim.fn.fnamemodify(vim.uri_to_fname(unit), ':t'))
      end
      if #units > 0 then
        from = from .. ' with ' .. table.concat(units, ', ')
      end
      if result.faithful then
        notify(('imported %s into %s'):format(from, written))
      else
        notify(('imported %s into %s, but the result is not faithful to the application:\n%s'):format(from, written, result.report or ''), levels.WARN)
      end
    end
    if on_done then
      on_done(answer)
    end
  end)
  return true
end

return M
