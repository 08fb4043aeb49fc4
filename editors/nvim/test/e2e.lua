-- Headless Neovim end-to-end test of editors/nvim, run by
-- scripts/test-editors.sh as
--
--   nvim --headless -u editors/nvim/test/minimal_init.lua -i NONE -n -c "luafile editors/nvim/test/e2e.lua"
--
-- with OP2_BIN (the server), OP2_PARSER_DIR (holding parser/op2.so),
-- OP2_WORKSPACE (a scratch directory with a copy of an example),
-- OP2_STRICT=1 to fail on features the server answers with null, and
-- OP2_PENDING_FILE to record them. Exits 0 when every check passes; every
-- wait is bounded.

local workspace = assert(os.getenv('OP2_WORKSPACE'), 'OP2_WORKSPACE is not set')
local strict = os.getenv('OP2_STRICT') == '1'
local timeout = tonumber(os.getenv('OP2_TIMEOUT_MS') or '20000')

local failures, passes, pending = 0, 0, {}

local function out(line)
  io.stdout:write(line .. '\n')
  io.stdout:flush()
end

local function check(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    passes = passes + 1
    out('ok - ' .. name)
  else
    failures = failures + 1
    out('not ok - ' .. name .. '\n    ' .. tostring(err):gsub('\n', '\n    '))
  end
  return ok
end

local function not_yet(feature, detail)
  local line = feature .. ': ' .. detail
  if strict then
    error(line .. ' (OP2_STRICT=1)', 2)
  end
  table.insert(pending, line)
  out('PENDING ' .. line)
  local file = os.getenv('OP2_PENDING_FILE')
  if file then
    local f = io.open(file, 'a')
    if f then
      f:write('nvim ' .. line .. '\n')
      f:close()
    end
  end
end

local function wait_for(what, probe, ms)
  local value
  local ok = vim.wait(ms or timeout, function()
    value = probe()
    return value ~= nil and value ~= false
  end, 20)
  if not ok then
    error(('timed out after %d ms waiting for %s'):format(ms or timeout, what), 2)
  end
  return value
end

local function eq(actual, expected, what)
  if not vim.deep_equal(actual, expected) then
    error(('%s: expected %s, got %s'):format(what or 'value', vim.inspect(expected), vim.inspect(actual)), 2)
  end
end

-- Notifications, recorded (the plugin reports builds with vim.notify).
local notes = {}
vim.notify = function(message, level)
  table.insert(notes, { message = message, level = level })
end

local path = workspace .. '/broken.op2'
local lines = vim.fn.readfile(path)
local broken_row, broken_col
for i, line in ipairs(lines) do
  local col = line:find('p_c', 1, true)
  if col then
    broken_row, broken_col = i - 1, col - 1
  end
end
assert(broken_row, 'the test program has no p_c')

local bufnr, client

check('Neovim is 0.11 or newer', function()
  assert(vim.fn.has('nvim-0.11') == 1, 'Neovim ' .. tostring(vim.version()))
end)

check('ftdetect: .op2 files get filetype op2', function()
  vim.cmd.edit(vim.fn.fnameescape(path))
  bufnr = vim.api.nvim_get_current_buf()
  eq(vim.bo[bufnr].filetype, 'op2', 'filetype')
end)

check('ftplugin: comments and indentation', function()
  eq(vim.bo[bufnr].commentstring, '// %s', 'commentstring')
  eq(vim.bo[bufnr].shiftwidth, 4, 'shiftwidth')
  eq(vim.bo[bufnr].cindent, true, 'cindent')
end)

check('tree-sitter: the plugin queries parse against the parser', function()
  for _, name in ipairs({ 'highlights', 'locals', 'folds', 'indents' }) do
    local files = vim.treesitter.query.get_files('op2', name)
    assert(#files >= 1, 'no queries/op2/' .. name .. '.scm on the runtimepath')
    assert(files[1]:find('editors/nvim/queries/op2/', 1, true), name .. ' comes from ' .. files[1])
    assert(vim.treesitter.query.get('op2', name), name .. ' did not parse')
  end
end)

check('tree-sitter: highlighting is active with the op2 captures', function()
  assert(vim.treesitter.highlighter.active[bufnr], 'no tree-sitter highlighter on the buffer')
  -- The highlighter parses on redraw, which a headless editor may not have
  -- done yet; parse now so that the captures can be asked for.
  vim.treesitter.get_parser(bufnr, 'op2'):parse(true)
  local function captures_at(pattern, offset)
    for i, line in ipairs(lines) do
      local col = line:find(pattern)
      if col then
        local names = {}
        for _, c in ipairs(vim.treesitter.get_captures_at_pos(bufnr, i - 1, col - 1 + (offset or 0))) do
          names[c.capture] = true
        end
        return names
      end
    end
    error('pattern not in the program: ' .. pattern)
  end
  assert(captures_at('^kernel ')['keyword.function'], 'kernel is @keyword.function')
  assert(captures_at('^set ')['keyword'], 'set is @keyword')
  assert(captures_at('^set ', 4)['type'], 'a set name is @type')
  assert(captures_at('par_loop')['keyword.repeat'], 'par_loop is @keyword.repeat')
  assert(captures_at(' READ')['constant.builtin'] == nil, 'the space before READ is not a capture')
  assert(captures_at(' READ', 1)['constant.builtin'], 'READ is @constant.builtin')
  assert(captures_at('^//')['comment'], 'comments are @comment')
  -- Folding works from the same parser and folds query.
  local kernel_row
  for i, line in ipairs(lines) do
    if line:match('^kernel ') then
      kernel_row = i
    end
  end
  local fold = vim.api.nvim_buf_call(bufnr, function()
    return vim.treesitter.foldexpr(kernel_row)
  end)
  eq(fold, '>1', 'foldexpr on the kernel line')
end)

check('lsp: op2 lsp attaches with UTF-8 positions', function()
  client = wait_for('the op2 client to attach', function()
    local c = vim.lsp.get_clients({ bufnr = bufnr, name = 'op2' })[1]
    return c and c.initialized and c or nil
  end)
  eq(client.offset_encoding, 'utf-8', 'offset encoding')
  eq(client.server_info and client.server_info.name, 'op2', 'server name')
end)

check('lsp: diagnostics arrive (vim.diagnostic.get)', function()
  local e101 = wait_for('an E101 diagnostic', function()
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.code == 'E101' then
        return d
      end
    end
  end)
  eq(e101.severity, vim.diagnostic.severity.ERROR, 'severity')
  eq({ e101.lnum, e101.col, e101.end_col }, { broken_row, broken_col, broken_col + 3 }, 'range (bytes, after multi-byte text)')
  assert(e101.message:find('p_c', 1, true), e101.message)
end)

check('lsp: hover answers', function()
  local row, col
  for i, line in ipairs(lines) do
    local c = line:find('p_a[pick_a', 1, true)
    if c then
      row, col = i - 1, c
    end
  end
  local params = { textDocument = vim.lsp.util.make_text_document_params(bufnr), position = { line = row, character = col } }
  local response = client:request_sync('textDocument/hover', params, timeout, bufnr)
  assert(response and response.err == nil, 'hover failed: ' .. vim.inspect(response))
  if response.result == nil then
    not_yet('hover', 'null on p_a')
    return
  end
  local contents = response.result.contents
  local text = type(contents) == 'string' and contents or contents.value or vim.inspect(contents)
  assert(text:find('p_a', 1, true), text)
end)

check('lsp: an edit clears the error', function()
  local line = lines[broken_row + 1]
  local start = line:find('/*', 1, true) - 1
  vim.api.nvim_buf_set_text(bufnr, broken_row, start, broken_row, broken_col + 3, { 'p_b' })
  wait_for('the E101 to go', function()
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.code == 'E101' then
        return nil
      end
    end
    return true
  end)
  eq(#vim.diagnostic.get(bufnr, { severity = { min = vim.diagnostic.severity.WARN } }), 0, 'errors and warnings left')
end)

local graph = workspace .. '/broken.graph.xml'

check('lsp: inlay hints are requested (vim.lsp.inlay_hint)', function()
  assert(vim.lsp.inlay_hint.is_enabled({ bufnr = bufnr }), 'lsp/op2.lua enables inlay hints')
  local params = {
    textDocument = vim.lsp.util.make_text_document_params(bufnr),
    range = { start = { line = 0, character = 0 }, ['end'] = { line = #lines, character = 0 } },
  }
  -- The program is valid again, so the server has a graph and labels each
  -- argument with the pins it generates (while it has errors there is no
  -- graph, and dot_pair is named after its kernel: no hint at all). Asked
  -- until the analysis of the edit has answered.
  local answered
  wait_for('inlay hints from the server', function()
    local response = client:request_sync('textDocument/inlayHint', params, timeout, bufnr)
    assert(response, 'inlay hint request timed out')
    assert(response.err == nil, 'inlay hint request failed: ' .. vim.inspect(response.err))
    answered = response.result
    return answered and #answered > 0
  end)
  assert(answered[1].label, 'a hint has a label')
  local hints = wait_for('inlay hints in the buffer', function()
    local got = vim.lsp.inlay_hint.get({ bufnr = bufnr })
    return #got > 0 and got or nil
  end)
  assert(hints[1].inlay_hint.position, 'a hint has a position')
end)

check('build on save writes the graph and reports it', function()
  assert(vim.fn.filereadable(graph) == 0, 'no graph before saving')
  vim.api.nvim_buf_call(bufnr, function()
    vim.cmd('silent write')
  end)
  wait_for(graph, function()
    return vim.fn.filereadable(graph) == 1
  end)
  local build = wait_for('the build report', function()
    return require('op2').last_build
  end)
  assert(build.ok, vim.inspect(build))
  assert(require('op2').status():match('^op2 built'), require('op2').status())
  wait_for('a build notification', function()
    for _, n in ipairs(notes) do
      if n.message:match('^op2 build:') then
        return true
      end
    end
  end)
  local text = table.concat(vim.fn.readfile(graph), '\n')
  assert(text:find('DeviceType', 1, true), 'the graph has device types')
end)

check(':Op2Build builds through the server command', function()
  require('op2').last_build = nil
  vim.fn.delete(graph)
  vim.cmd('Op2Build')
  wait_for('the graph after :Op2Build', function()
    return vim.fn.filereadable(graph) == 1 and require('op2').last_build
  end)
end)

check(':Op2OpenGraph opens the graph file', function()
  local opened
  require('op2').open_graph(bufnr, function(ok)
    opened = { ok = ok }
  end)
  wait_for('the graph to open', function()
    return opened
  end)
  eq(opened.ok, true, 'opened')
  eq(vim.api.nvim_buf_get_name(0), vim.fn.resolve(graph), 'buffer name')
  vim.cmd('buffer ' .. bufnr)
  -- The user command runs without error.
  vim.cmd('Op2OpenGraph')
  wait_for('the graph opened by the command', function()
    return vim.api.nvim_buf_get_name(0) == vim.fn.resolve(graph)
  end)
  vim.cmd('buffer ' .. bufnr)
end)

check(':Op2OpenGraph opens the graph the build wrote through a link to the source', function()
  -- A program opened through a link in another directory: the build writes
  -- beside the file the link leads to, and the server says so (worked out
  -- from the buffer's name, the graph would be beside the link).
  local real, elsewhere = workspace .. '/real', workspace .. '/linked'
  vim.fn.mkdir(real, 'p')
  vim.fn.mkdir(elsewhere, 'p')
  assert(vim.fn.writefile(vim.fn.readfile(path), real .. '/linked.op2') == 0)
  assert(vim.uv.fs_symlink(real .. '/linked.op2', elsewhere .. '/linked.op2'))
  vim.cmd('edit ' .. vim.fn.fnameescape(elsewhere .. '/linked.op2'))
  local linked = vim.api.nvim_get_current_buf()
  wait_for('the client on the link', function()
    return #vim.lsp.get_clients({ bufnr = linked, name = 'op2' }) == 1
  end)
  local written = vim.fn.resolve(real) .. '/linked.graph.xml'
  vim.cmd('silent write')
  wait_for('the graph beside the real file', function()
    return vim.fn.filereadable(written) == 1
  end)
  local opened
  require('op2').open_graph(linked, function(ok)
    opened = { ok = ok }
  end)
  wait_for('the graph to open', function()
    return opened
  end)
  eq(opened.ok, true, 'opened: ' .. vim.inspect(notes[#notes]))
  eq(vim.api.nvim_buf_get_name(0), written, 'the graph beside the real file')
  vim.cmd('buffer ' .. bufnr)
  vim.api.nvim_buf_delete(linked, { force = true })
end)

check(':Op2ShowDeviceType shows the server answer', function()
  local before = #notes
  local result
  require('op2').show_device_type('pairs', bufnr, nil, function(buf)
    result = { buf = buf }
  end)
  wait_for('the device type answer', function()
    return result
  end)
  if result.buf == nil then
    local said = notes[before + 1] and notes[before + 1].message or '(nothing)'
    assert(said:find('no generated device type', 1, true), said)
    not_yet('op2.showDeviceType', 'null for set pairs')
    return
  end
  eq(vim.bo[result.buf].filetype, 'text', 'filetype')
  assert(table.concat(vim.api.nvim_buf_get_lines(result.buf, 0, -1, false), '\n'):find('pairs', 1, true), 'the text names the set')
  eq(vim.bo[result.buf].modifiable, false, 'read-only')
  vim.cmd('close')
  -- The user command itself runs without error.
  vim.cmd('Op2ShowDeviceType pairs')
end)

check(':checkhealth op2 finds the server, the parser and the queries', function()
  vim.cmd('silent checkhealth op2')
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  vim.cmd('bwipeout!')
  assert(text:find('server: ', 1, true) and text:find('OK', 1, true), text)
  assert(not text:find('ERROR', 1, true), text)
  assert(text:find('tree-sitter parser: ', 1, true), text)
end)

check(':Op2Import imports an OP2 application of the workspace and opens the program', function()
  local compiler = (os.getenv('CXX') or '') ~= '' or vim.fn.executable('c++') == 1 or vim.fn.executable('g++') == 1
    or vim.fn.executable('clang++') == 1
  if not compiler then
    out('SKIPPED :Op2Import: no C++ compiler (set CXX or install c++/g++/clang++); op2 import needs one')
    return
  end
  local repo = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h:h')
  local grid = repo .. '/server/import/tests/apps/grid'
  local app = vim.uv.fs_realpath(workspace) .. '/app'
  vim.fn.mkdir(app, 'p')
  for _, name in ipairs({ 'grid.cpp', 'grid.dat', 'grid_kernels.h' }) do
    assert(vim.fn.writefile(vim.fn.readfile(grid .. '/' .. name, 'b'), app .. '/' .. name, 'b') == 0, name)
  end
  vim.cmd.edit(app .. '/grid.cpp')
  eq(#vim.lsp.get_clients({ bufnr = 0, name = 'op2' }), 0, 'op2 clients attached to the C++ buffer')
  local result
  assert(require('op2').import(nil, function(answer)
    result = { answer = answer }
  end), 'the import started')
  wait_for('the import', function()
    return result
  end, 120000)
  assert(result.answer, 'the import failed: ' .. vim.inspect(notes[#notes]))
  eq(result.answer.faithful, true, 'faithful')
  eq(vim.api.nvim_buf_get_name(0), app .. '/grid.op2', 'the buffer shown')
  eq(vim.bo.filetype, 'op2', 'filetype of the program')
  eq(vim.fn.filereadable(app .. '/grid.json'), 1, 'the instance is written')
  assert(notes[#notes].message:find('imported grid.cpp into grid.op2 and grid.json', 1, true), vim.inspect(notes[#notes]))
  eq(#result.answer.units, 0, 'no other translation unit without a compilation database')
  -- The program opened is analysed by the server like any other.
  wait_for('the imported program to be attached', function()
    return #vim.lsp.get_clients({ bufnr = 0, name = 'op2' }) == 1
  end)
  vim.cmd('bwipeout!')
  vim.cmd('bwipeout! ' .. vim.fn.fnameescape(app .. '/grid.cpp'))
  -- An application of two units with a compilation database: both are
  -- imported, each with its entry's flags.
  local from = repo .. '/server/import/tests/apps/database'
  local db = vim.uv.fs_realpath(workspace) .. '/db'
  for _, dir in ipairs({ 'main_inc', 'mesh_inc', 'kernels', 'pre', 'build' }) do
    vim.fn.mkdir(db .. '/' .. dir, 'p')
  end
  local files = { 'database.cpp', 'database_mesh.cpp', 'main_inc/params.h', 'mesh_inc/mesh.h', 'kernels/step.h', 'pre/forced.h' }
  for _, name in ipairs(files) do
    assert(vim.fn.writefile(vim.fn.readfile(from .. '/' .. name, 'b'), db .. '/' .. name, 'b') == 0, name)
  end
  local entries = {
    { directory = db, file = 'database.cpp', command = "c++ -std=c++17 -Imain_inc -iquote kernels '-DHALF=(0.5 * 1.0)' -DFAST -include pre/forced.h -c database.cpp" },
    { directory = db, file = 'database_mesh.cpp', arguments = { 'c++', '-std=gnu++14', '-Imesh_inc', '-DNCELLS=7', '-c', 'database_mesh.cpp' } },
  }
  assert(vim.fn.writefile({ vim.json.encode(entries) }, db .. '/build/compile_commands.json') == 0)
  result = nil
  assert(require('op2').import(db .. '/database.cpp', function(answer)
    result = { answer = answer }
  end), 'the import of several units started')
  wait_for('the import of several units', function()
    return result
  end, 120000)
  assert(result.answer, 'the import failed: ' .. vim.inspect(notes[#notes]))
  eq(result.answer.faithful, true, 'faithful')
  assert(
    notes[#notes].message:find('imported database.cpp with database_mesh.cpp into database.op2 and database.json', 1, true),
    vim.inspect(notes[#notes])
  )
  vim.cmd('bwipeout!')
  -- A file that is not C or C++ is refused before anything is asked.
  eq(require('op2').import(workspace .. '/broken.op2'), false, 'an .op2 file is not imported')
end)

--- Runs `fn` with the server's command set to `cmd`, the notifications it
--- makes recorded, and the real command back afterwards; returns them.
local function with_server_command(cmd, fn)
  local recorded = {}
  local notify = vim.notify
  vim.notify = function(message, level)
    table.insert(recorded, { message = message, level = level })
  end
  vim.lsp.config('op2', { cmd = cmd })
  local ok, err = pcall(fn)
  vim.lsp.config('op2', { cmd = { os.getenv('OP2_BIN') or 'op2', 'lsp' } })
  vim.notify = notify
  assert(ok, err)
  return recorded
end

-- A C++ file outside the workspace, whose import must start a server of its
-- own (the running client serves the workspace).
local outside = vim.fn.tempname()
vim.fn.mkdir(outside, 'p')
local outside_cpp = outside .. '/missing.cpp'
vim.fn.writefile({ 'int main() { return 0; }' }, outside_cpp)

check('a server that is not installed is named once, and :Op2Build and :Op2Import say so', function()
  vim.g.op2_server_missing_warned = nil
  local missing = workspace .. '/no-such-op2'
  local buffers = {}
  local recorded = with_server_command({ missing, 'lsp' }, function()
    for _, name in ipairs({ 'missing1.op2', 'missing2.op2' }) do
      vim.cmd('edit ' .. vim.fn.fnameescape(workspace .. '/' .. name))
      table.insert(buffers, vim.api.nvim_get_current_buf())
    end
    eq(require('op2').build(), false, ':Op2Build without a server')
    eq(require('op2').import(outside_cpp), false, ':Op2Import without a server')
  end)
  for _, buffer in ipairs(buffers) do
    pcall(vim.api.nvim_buf_delete, buffer, { force = true })
  end
  eq(#recorded, 3, 'notifications: ' .. vim.inspect(recorded))
  -- Neovim 0.11.0 and 0.11.1 have no `vim.lsp.is_enabled`: the table
  -- `vim.lsp.enable` fills tells the same.
  local is_enabled = vim.lsp.is_enabled
  vim.lsp.is_enabled = nil
  local enabled = require('op2').enabled()
  vim.lsp.is_enabled = is_enabled
  eq(enabled, true, 'enabled, found without vim.lsp.is_enabled')
  assert(recorded[1].message:find('`' .. missing .. '` is not found', 1, true), vim.inspect(recorded[1]))
  eq(recorded[1].level, vim.log.levels.WARN, 'one warning for two buffers')
  for i = 2, 3 do
    assert(recorded[i].message:find('is not found', 1, true), vim.inspect(recorded[i]))
    eq(recorded[i].level, vim.log.levels.ERROR, 'the command fails with the reason')
  end
end)

check('the server is found by an absolute path, never from the current directory or a relative PATH entry', function()
  local op2 = require('op2')
  local function program(file)
    vim.fn.mkdir(vim.fs.dirname(file), 'p')
    assert(vim.fn.writefile({ '#!/bin/sh', 'exit 0' }, file) == 0)
    vim.uv.fs_chmod(file, tonumber('755', 8))
  end
  -- A cloned repository with programs of its own named op2, at its root
  -- and in its bin/, and an op2 installed elsewhere.
  local repo = vim.fs.normalize(vim.fn.tempname())
  program(repo .. '/op2')
  program(repo .. '/bin/op2')
  local installed = vim.fs.normalize(vim.fn.tempname()) .. '/installed'
  program(installed .. '/op2')
  local lsp_config = assert(vim.api.nvim_get_runtime_file('lsp/op2.lua', false)[1], 'lsp/op2.lua')
  local saved_path, saved_cwd, saved_server = vim.env.PATH, vim.fn.getcwd(), vim.g.op2_server_path
  local saved_home = vim.env.HOME
  local missing, health
  local ok, err = pcall(function()
    vim.g.op2_server_path = nil
    vim.cmd.cd(vim.fn.fnameescape(repo))
    -- `~` and `$HOME` in an entry are taken literally, as the system does:
    -- relative entries, skipped.
    vim.env.HOME = vim.fs.normalize(vim.fn.tempname())
    program(vim.env.HOME .. '/op2')
    -- The repository also through a link to it.
    local link = vim.fs.normalize(vim.fn.tempname())
    assert(vim.uv.fs_symlink(repo, link))
    vim.env.PATH = 'bin:.::~:$HOME:' .. link .. ':' .. repo .. ':' .. installed
    -- What a bare `op2` started: the repository's.
    assert(vim.fn.exepath('op2') ~= installed .. '/op2', vim.fn.exepath('op2'))
    eq(op2.server_path(), installed .. '/op2', 'the op2 found')
    eq(dofile(lsp_config).cmd[1], installed .. '/op2', 'the default command')
    vim.env.PATH = 'bin:.:' .. repo
    local path, why = op2.server_path()
    eq(path, nil, 'no op2 outside the repository')
    assert(why:find('`op2` is not on $PATH', 1, true), why)
    eq(dofile(lsp_config).cmd[1], op2.NOT_FOUND, 'the default command without an op2')
    eq(vim.fn.executable(op2.NOT_FOUND), 0, 'the command of none is not executable')
    -- The configured path: `~` expanded, a relative one refused.
    vim.g.op2_server_path = '~/op2'
    eq(op2.server_path(), vim.fn.expand('~/op2'), 'g:op2_server_path')
    vim.g.op2_server_path = 'bin/op2'
    path, why = op2.server_path()
    eq(path, nil, 'a relative g:op2_server_path')
    assert(why:find('a relative path', 1, true), why)
    vim.g.op2_server_path = nil
    -- Named once per session when .op2 buffers open, and by :checkhealth.
    with_server_command({ op2.NOT_FOUND, 'lsp' }, function()
      missing = op2.missing_server()
      vim.cmd('silent checkhealth op2')
      health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
      vim.cmd('bwipeout!')
    end)
  end)
  vim.env.PATH = saved_path
  vim.env.HOME = saved_home
  vim.cmd.cd(vim.fn.fnameescape(saved_cwd))
  vim.g.op2_server_path = saved_server
  assert(ok, err)
  assert(missing and missing:find('no language server was found: `op2` is not on $PATH', 1, true), missing)
  assert(health:find('server: none found: `op2` is not on $PATH', 1, true), health)
end)

--- The `false` program, a server that exits at once; nil, with a loud
--- skip of `what`, where there is none.
local function exits_at_once(what)
  local program = vim.fn.exepath('false')
  if program == '' then
    out('SKIPPED ' .. what .. ': no `false` program on PATH')
    return nil
  end
  return program
end

check(':Op2Import says at once when the server stops before it starts', function()
  local stopping = exits_at_once('the stopped-server check')
  if stopping == nil then
    return
  end
  local started = vim.uv.hrtime()
  local answer
  local recorded = with_server_command({ stopping }, function()
    answer = require('op2').import(outside_cpp)
  end)
  eq(answer, false, ':Op2Import with a server that exits')
  local message = recorded[#recorded] and recorded[#recorded].message or ''
  assert(message:find('stopped before it started', 1, true), vim.inspect(recorded))
  -- Not the 10 s wait for a server that never answers.
  assert((vim.uv.hrtime() - started) / 1e6 < 5000, 'waited the whole timeout')
end)

check(':checkhealth op2 reports a server binary that does not run, and trusts a wrapper', function()
  -- An `op2` that fails, as a broken build does.
  local broken = outside .. '/bin/op2'
  vim.fn.mkdir(outside .. '/bin', 'p')
  assert(vim.fn.writefile({ '#!/bin/sh', 'echo "cannot load a library" >&2', 'exit 1' }, broken) == 0)
  vim.uv.fs_chmod(broken, tonumber('755', 8))
  local function health(cmd)
    local text
    with_server_command(cmd, function()
      vim.cmd('silent checkhealth op2')
      text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
      vim.cmd('bwipeout!')
    end)
    return text
  end
  local text = health({ broken, 'lsp' })
  assert(text:find('--version` failed: it exited with 1: cannot load a library', 1, true), text)
  -- A command that starts op2 through another program is not run with
  -- `--version` (`env --version` would say nothing about the server).
  local env = vim.fn.exepath('env')
  if env ~= '' then
    text = health({ env, os.getenv('OP2_BIN') or 'op2', 'lsp' })
    assert(text:find('server: started through ' .. env, 1, true), text)
    assert(not text:find('ERROR', 1, true), text)
  end
end)

check('a parser older than the queries turns highlighting off with one warning, not an error per buffer', function()
  -- A query naming a node type the parser lacks, as after a grammar change
  -- that the parser built by hand has not caught up with.
  local highlights = vim.treesitter.query.get_files('op2', 'highlights')
  local saved = table.concat(vim.fn.readfile(highlights[1]), '\n')
  vim.treesitter.query.set('op2', 'highlights', '(no_such_node) @keyword')
  local notes = {}
  local notify = vim.notify
  vim.notify = function(message, level)
    table.insert(notes, { message = message, level = level })
  end
  vim.g.op2_parser_warned = nil
  local opened, buffers = true, {}
  for _, name in ipairs({ 'stale1.op2', 'stale2.op2' }) do
    opened = opened and pcall(vim.cmd, 'edit ' .. vim.fn.fnameescape(workspace .. '/' .. name))
    table.insert(buffers, vim.api.nvim_get_current_buf())
  end
  vim.notify = notify
  vim.treesitter.query.set('op2', 'highlights', saved)
  for _, buffer in ipairs(buffers) do
    pcall(vim.api.nvim_buf_delete, buffer, { force = true })
  end
  assert(opened, 'opening a buffer raised an error')
  eq(#notes, 1, 'one warning for two buffers')
  assert(notes[1].message:find('parser does not fit the queries', 1, true), vim.inspect(notes))
  eq(notes[1].level, vim.log.levels.WARN, 'a warning')
end)

check('the client stops cleanly', function()
  client:stop()
  wait_for('the client to stop', function()
    return client:is_stopped()
  end, 10000)
end)

out(('nvim: %d passed, %d failed, %d pending'):format(passes, failures, #pending))
if failures > 0 then
  vim.cmd('cquit 1')
else
  vim.cmd('qall!')
end
