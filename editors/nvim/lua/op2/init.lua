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

--- The op2 client attached to a buffer, or nil with a message saying why.
function M.client(bufnr)
  bufnr = resolve_buf(bufnr)
  local client = vim.lsp.get_clients({ bufnr = bufnr, name = 'op2' })[1]
  if client == nil then
    notify('no op2 language server is attached to this buffer (is `vim.lsp.enable("op2")` in your config? see :checkhealth op2)', levels.ERROR)
  end
  return client
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
  local existing = vim.fn.bufnr(name)
  if existing ~= -1 and existing ~= buf then
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

--- Opens the graph file of the current buffer.
function M.open_graph(bufnr)
  local path = M.graph_path(bufnr)
  if path == nil then
    notify('save the buffer to a file first; the graph is written beside it', levels.WARN)
    return false
  end
  if vim.fn.filereadable(path) == 0 then
    notify(('no graph at %s yet: save the file or run :Op2Build'):format(path), levels.WARN)
    return false
  end
  vim.cmd.edit(vim.fn.fnameescape(path))
  return true
end

return M
