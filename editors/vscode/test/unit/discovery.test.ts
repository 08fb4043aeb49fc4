// Server discovery: setting, then bundled binary, then PATH, for Linux,
// macOS and Windows, with the messages a user sees when nothing is found.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { DiscoveryHost, executableNames, expandSetting, findServer } from '../../src/discovery';

function host(executables: string[], overrides: Partial<DiscoveryHost> = {}): DiscoveryHost {
  const set = new Set(executables);
  return {
    platform: 'linux',
    pathEnv: '/usr/local/bin:/usr/bin',
    homedir: '/home/ada',
    isExecutable: (file) => set.has(file),
    ...overrides,
  };
}

const input = { setting: '', extensionPath: '/ext/op2' };

describe('findServer', () => {
  it('uses op2.server.path when it points at an executable', () => {
    const found = findServer({ ...input, setting: '/opt/op2/bin/op2' }, host(['/opt/op2/bin/op2', '/ext/op2/server/op2', '/usr/bin/op2']));
    assert.deepEqual(found, { kind: 'found', path: '/opt/op2/bin/op2', source: 'setting' });
  });

  it('expands ~, and refuses ${workspaceFolder} and relative settings without resolving them in the workspace', () => {
    // A path into the workspace would run a binary the opened repository ships.
    const h = host(['/home/ada/.cargo/bin/op2', '/work/proj/target/debug/op2', '/ext/op2/server/op2', '/usr/bin/op2']);
    assert.deepEqual(findServer({ ...input, setting: '~/.cargo/bin/op2' }, h), { kind: 'found', path: '/home/ada/.cargo/bin/op2', source: 'setting' });
    for (const setting of ['${workspaceFolder}/target/debug/op2', 'target/debug/op2', './op2', '${userHome}/op2']) {
      const found = findServer({ ...input, setting }, h);
      assert.equal(found.kind, 'missing', setting);
      if (found.kind !== 'missing') return;
      assert.equal(found.badSetting, true);
      assert.deepEqual(found.tried, [], `${setting}: nothing is looked at`);
      assert.match(found.message, /absolute path, or one starting with ~/);
      assert.ok(found.message.includes(setting), found.message);
    }
    assert.deepEqual(expandSetting('  /a/../op2 ', h), { path: '/op2' });
    assert.ok('error' in expandSetting('a/../op2', h));
  });

  it('skips relative PATH entries, which would be taken from the working directory', () => {
    const found = findServer(input, host(['op2', 'bin/op2', '/usr/bin/op2'], { pathEnv: '.:bin::/usr/bin' }));
    assert.deepEqual(found, { kind: 'found', path: '/usr/bin/op2', source: 'path' });
    const none = findServer(input, host(['op2'], { pathEnv: '.' }));
    assert.equal(none.kind, 'missing');
    if (none.kind === 'missing') assert.deepEqual(none.tried, ['/ext/op2/server/op2']);
  });

  it('does not fall back when the setting points nowhere, and says which path it tried', () => {
    const found = findServer({ ...input, setting: '/nope/op2' }, host(['/ext/op2/server/op2', '/usr/bin/op2']));
    assert.equal(found.kind, 'missing');
    if (found.kind !== 'missing') return;
    assert.equal(found.badSetting, true);
    assert.deepEqual(found.tried, ['/nope/op2']);
    assert.match(found.message, /op2\.server\.path/);
    assert.match(found.message, /\/nope\/op2/);
  });

  it('prefers the bundled binary to PATH', () => {
    const found = findServer(input, host(['/ext/op2/server/op2', '/usr/bin/op2']));
    assert.deepEqual(found, { kind: 'found', path: '/ext/op2/server/op2', source: 'bundled' });
  });

  it('searches PATH in order', () => {
    const found = findServer(input, host(['/usr/bin/op2', '/usr/local/bin/op2']));
    assert.deepEqual(found, { kind: 'found', path: '/usr/local/bin/op2', source: 'path' });
    const later = findServer(input, host(['/usr/bin/op2']));
    assert.deepEqual(later, { kind: 'found', path: '/usr/bin/op2', source: 'path' });
  });

  it('explains what to do when op2 is nowhere', () => {
    const found = findServer(input, host([]));
    assert.equal(found.kind, 'missing');
    if (found.kind !== 'missing') return;
    assert.equal(found.badSetting, false);
    assert.deepEqual(found.tried, ['/ext/op2/server/op2', '/usr/local/bin/op2', '/usr/bin/op2']);
    assert.match(found.message, /not found/);
    assert.match(found.message, /op2\.server\.path/);
    assert.match(found.message, /PATH/);
    assert.match(found.message, /cargo install --path server\/cli/);
  });

  it('copes with an empty or missing PATH', () => {
    assert.equal(findServer(input, host([], { pathEnv: undefined })).kind, 'missing');
    assert.equal(findServer(input, host([], { pathEnv: '' })).kind, 'missing');
  });

  it('finds op2.exe on Windows through PATH and PATHEXT', () => {
    const h = host(['C:\\tools\\op2.exe'], { platform: 'win32', pathEnv: 'C:\\Windows;"C:\\tools"', homedir: 'C:\\Users\\ada' });
    const found = findServer({ setting: '', extensionPath: 'C:\\ext' }, h);
    assert.deepEqual(found, { kind: 'found', path: 'C:\\tools\\op2.exe', source: 'path' });
    assert.deepEqual(findServer({ setting: '', extensionPath: 'C:\\ext' }, host(['C:\\ext\\server\\op2.exe'], { platform: 'win32' })), {
      kind: 'found',
      path: 'C:\\ext\\server\\op2.exe',
      source: 'bundled',
    });
    assert.deepEqual(executableNames({ platform: 'win32', pathExt: '.COM;.EXE;.CMD;.BAT;.JS' }), ['op2.exe', 'op2.com']);
    // An npm shim earlier on PATH, which the client could not start without a
    // shell, does not hide the op2.exe after it.
    const shim = host(['C:\\npm\\op2.cmd', 'C:\\tools\\op2.exe'], {
      platform: 'win32',
      pathEnv: 'C:\\npm;C:\\tools',
      pathExt: '.COM;.EXE;.BAT;.CMD',
      homedir: 'C:\\Users\\ada',
    });
    assert.deepEqual(findServer({ setting: '', extensionPath: 'C:\\ext' }, shim), {
      kind: 'found',
      path: 'C:\\tools\\op2.exe',
      source: 'path',
    });
    assert.deepEqual(executableNames({ platform: 'darwin' }), ['op2']);
  });
});
