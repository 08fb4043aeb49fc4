// The status item: the server's state and the last build, read from the
// server's `window/logMessage` ("op2 build: …", see server/lsp handlers/build.rs).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { MessageType, parseBuildMessage, statusView } from '../../src/status';

const at = new Date(2025, 0, 1, 9, 5, 7);

describe('parseBuildMessage', () => {
  it('reads a successful build', () => {
    const report = parseBuildMessage(MessageType.Info, 'op2 build: wrote /w/a.graph.xml (2 device types)\n  warning: big message', at);
    assert.deepEqual(report, {
      ok: true,
      summary: 'wrote /w/a.graph.xml (2 device types)',
      detail: 'op2 build: wrote /w/a.graph.xml (2 device types)\n  warning: big message',
      at,
    });
  });

  it('reads failures', () => {
    assert.equal(parseBuildMessage(MessageType.Error, 'op2 build: nothing written: the program has errors', at)?.ok, false);
    assert.equal(parseBuildMessage(MessageType.Warning, 'op2 build: `/x` is outside the workspace folder `/w`; nothing written', at)?.ok, false);
    const panic = parseBuildMessage(MessageType.Error, 'op2 build failed: task panicked', at);
    assert.equal(panic?.ok, false);
    assert.equal(panic?.summary, 'failed: task panicked');
  });

  it('ignores other log messages', () => {
    assert.equal(parseBuildMessage(MessageType.Info, 'op2 language server ready'), undefined);
    assert.equal(parseBuildMessage(MessageType.Info, 'analysis of file:///a.op2 failed'), undefined);
  });
});

describe('statusView', () => {
  it('shows the state and the last build', () => {
    assert.deepEqual(statusView('running', undefined, '/usr/bin/op2'), {
      text: '$(check) op2',
      detail: 'no build yet · /usr/bin/op2',
      severity: 'information',
      busy: false,
    });
    const ok = parseBuildMessage(MessageType.Info, 'op2 build: wrote a.graph.xml', at);
    assert.equal(statusView('running', ok, undefined).detail, 'last build 09:05:07: wrote a.graph.xml');
    const failed = parseBuildMessage(MessageType.Error, 'op2 build: nothing written: errors', at);
    const view = statusView('running', failed, undefined);
    assert.equal(view.severity, 'warning');
    assert.equal(view.detail, 'last build 09:05:07: failed: nothing written: errors');
    assert.equal(statusView('starting', undefined, undefined).busy, true);
    assert.equal(statusView('missing', undefined, undefined).severity, 'error');
    assert.match(statusView('missing', undefined, undefined).text, /not found/);
    assert.match(statusView('stopped', undefined, undefined).text, /stopped/);
  });
});
