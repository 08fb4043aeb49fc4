// Activation under a mocked `vscode` and vscode-languageclient
// (test/unit/mock): commands, server discovery and start, the settings sent,
// the status item, and every command's request to the server.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, it } from 'node:test';
import * as vscode from 'vscode';
import * as languageclient from 'vscode-languageclient/node';

import { DiscoveryHost } from '../../src/discovery';
import { activate, COMMANDS, deactivate, Op2Extension, SERVER_COMMANDS } from '../../src/extension';

const root = join(__dirname, '..', '..', '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const vs = vscode as any;
const lc = languageclient as any;
const mock = vs.__mock;

function host(executables: string[]): DiscoveryHost {
  return { platform: 'linux', pathEnv: '/usr/bin', homedir: '/home/ada', isExecutable: (f) => executables.includes(f) };
}

function context(): any {
  return { extensionPath: '/ext/op2', subscriptions: [] as { dispose(): void }[] };
}

function clients(): any[] {
  return lc.__mock.instances;
}

const SOURCE = '/work/proj/src/airfoil.op2';
const TEXT = 'set cells;\nset edges;\nmain {\n    par_loop k over cells ();\n}\n';

function openEditor(line = 0, character = 5) {
  const document = vs.__textDocument(vscode.Uri.file(SOURCE), TEXT);
  vs.window.activeTextEditor = { document, selection: { active: new vscode.Position(line, character) } };
  return document;
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('activation', () => {
  let extension: Op2Extension | undefined;

  beforeEach(async () => {
    await deactivate();
    extension?.dispose();
    extension = undefined;
    vs.__reset();
    lc.__reset();
    vs.workspace.workspaceFolders = [{ uri: vscode.Uri.file('/work/proj'), name: 'proj', index: 0 }];
  });

  it('registers exactly the commands package.json contributes, none clashing with the server commands', async () => {
    extension = await activate(context(), host(['/usr/bin/op2']));
    const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual([...mock.commands.keys()].sort(), contributed);
    assert.deepEqual(Object.values(COMMANDS).sort(), contributed);
    for (const command of Object.values(SERVER_COMMANDS)) assert.ok(!contributed.includes(command), command);
    for (const entry of manifest.contributes.menus.commandPalette) assert.ok(contributed.includes(entry.command));
  });

  it('starts `op2 lsp` found on PATH with the op2 settings as initialization options', async () => {
    mock.settings['op2.build.onSave'] = false;
    mock.settings['op2.server.path'] = '';
    extension = await activate(context(), host(['/usr/bin/op2']));
    assert.equal(clients().length, 1);
    const client = clients()[0];
    assert.equal(client.id, 'op2', 'the id makes op2.trace.server the client trace setting');
    assert.deepEqual(client.serverOptions.run, { command: '/usr/bin/op2', args: ['lsp'] });
    assert.equal(client.serverOptions.debug.command, '/usr/bin/op2');
    assert.deepEqual(client.clientOptions.documentSelector, [
      { scheme: 'file', language: 'op2' },
      { scheme: 'untitled', language: 'op2' },
    ]);
    assert.deepEqual(client.clientOptions.initializationOptions, {
      build: { onSave: false, outDir: '', instance: '' },
      inlayHints: { invocationNames: true, generatedPins: true },
      trace: { server: 'off' },
    });
    assert.deepEqual(mock.watchers.map((w: any) => w.glob), ['**/*.op2']);
    assert.equal(client.started, 1);
    assert.equal(extension.state, 'running');
    const status = mock.statusItems[0];
    assert.deepEqual(status.selector, { language: 'op2' });
    assert.equal(status.text, '$(check) op2');
    assert.match(status.detail, /no build yet/);
    assert.match(status.detail, /\/usr\/bin\/op2/);
    assert.equal(status.command.command, COMMANDS.showServerOutput);
    assert.deepEqual(mock.messages, []);
  });

  it('prefers the setting, then the bundled binary', async () => {
    mock.settings['op2.server.path'] = '/opt/op2/bin/op2';
    extension = await activate(context(), host(['/opt/op2/bin/op2', '/ext/op2/server/op2', '/usr/bin/op2']));
    assert.equal(clients()[0].serverOptions.run.command, '/opt/op2/bin/op2');
    await deactivate();
    extension.dispose();
    vs.__reset();
    lc.__reset();
    extension = await activate(context(), host(['/ext/op2/server/op2', '/usr/bin/op2']));
    assert.equal(clients()[0].serverOptions.run.command, '/ext/op2/server/op2');
  });

  it('says clearly when the server is missing, and offers the setting', async () => {
    mock.choices.push('Open Settings');
    extension = await activate(context(), host([]));
    await flush();
    assert.equal(clients().length, 0);
    assert.equal(extension.state, 'missing');
    assert.equal(mock.messages.length, 1);
    const [message] = mock.messages;
    assert.equal(message.level, 'error');
    assert.match(message.message, /op2 language server was not found/);
    assert.match(message.message, /op2\.server\.path/);
    assert.deepEqual(message.items, ['Open Settings', 'Show Output']);
    assert.deepEqual(mock.executed.at(-1), { id: 'workbench.action.openSettings', args: ['op2.server.path'] });
    assert.match(mock.statusItems[0].text, /not found/);
    assert.equal(mock.statusItems[0].severity, vscode.LanguageStatusSeverity.Error);
    assert.ok(mock.outputChannels[0].lines.some((l: string) => l.includes('/ext/op2/server/op2')));
  });

  it('never runs op2.server.path from the workspace settings, which an opened repository ships', async () => {
    // A repository's .vscode/settings.json with {"op2.server.path": "tools/op2"}
    // and an executable tools/op2: the repository's binary must not run, even
    // if a VS Code version hands the workspace value over.
    for (const value of ['tools/op2', '/work/proj/tools/op2', '${workspaceFolder}/tools/op2']) {
      await deactivate();
      extension?.dispose();
      vs.__reset();
      lc.__reset();
      vs.workspace.workspaceFolders = [{ uri: vscode.Uri.file('/work/proj'), name: 'proj', index: 0 }];
      mock.workspaceSettings['op2.server.path'] = value;
      extension = await activate(context(), host(['/work/proj/tools/op2', '/usr/bin/op2', '/opt/op2']));
      assert.equal(clients().length, 1, value);
      assert.equal(clients()[0].serverOptions.run.command, '/usr/bin/op2', value);
      assert.equal(clients()[0].serverOptions.debug.command, '/usr/bin/op2', value);
      assert.deepEqual(mock.messages, [], value);
    }
    // Nor when the workspace value changes while the server runs, which
    // restarts nothing.
    await vs.__changeSettings({ 'op2.server.path': '/work/proj/tools/op2' }, 'workspace');
    assert.equal(clients().length, 1);
    assert.equal(clients()[0].stopped, 0);
    // The user's own setting still wins over PATH.
    await vs.__changeSettings({ 'op2.server.path': '/opt/op2' });
    assert.equal(clients().at(-1).serverOptions.run.command, '/opt/op2');
    assert.equal(extension?.state, 'running');
  });

  it('refuses a relative op2.server.path in the user settings, saying why', async () => {
    mock.settings['op2.server.path'] = 'target/debug/op2';
    extension = await activate(context(), host(['/work/proj/target/debug/op2', '/home/ada/target/debug/op2', '/usr/bin/op2']));
    assert.equal(clients().length, 0);
    assert.equal(extension.state, 'missing');
    assert.match(mock.messages[0].message, /op2\.server\.path is set to "target\/debug\/op2", which is not used: it is a relative path/);
  });

  it('names the bad path when op2.server.path points nowhere', async () => {
    mock.settings['op2.server.path'] = '/opt/missing/op2';
    extension = await activate(context(), host(['/usr/bin/op2']));
    assert.equal(clients().length, 0);
    assert.match(mock.messages[0].message, /\/opt\/missing\/op2/);
  });

  it('reports a server that fails to start', async () => {
    lc.__mock.failStart = 'spawn EACCES';
    extension = await activate(context(), host(['/usr/bin/op2']));
    await flush();
    assert.equal(extension.state, 'stopped');
    assert.match(mock.messages[0].message, /failed to start: spawn EACCES/);
    assert.match(mock.statusItems[0].text, /stopped/);
  });

  it('shows the last build from the server log in the status item and the output', async () => {
    extension = await activate(context(), host(['/usr/bin/op2']));
    const client = clients()[0];
    client.receive('window/logMessage', { type: 3, message: 'op2 language server ready' });
    assert.match(mock.statusItems[0].detail, /no build yet/);
    client.receive('window/logMessage', { type: 3, message: 'op2 build: wrote /work/proj/src/airfoil.graph.xml' });
    assert.match(mock.statusItems[0].detail, /last build \d\d:\d\d:\d\d: wrote \/work\/proj\/src\/airfoil\.graph\.xml/);
    assert.equal(mock.statusItems[0].text, '$(check) op2');
    client.receive('window/logMessage', { type: 1, message: 'op2 build: nothing written: the program has errors' });
    assert.equal(mock.statusItems[0].text, '$(warning) op2');
    assert.match(mock.statusItems[0].detail, /failed: nothing written/);
    const lines = mock.outputChannels[0].lines;
    assert.ok(lines.includes('[Info] op2 build: wrote /work/proj/src/airfoil.graph.xml'));
    assert.ok(lines.includes('[Error] op2 build: nothing written: the program has errors'));
  });

  it('builds the active document through op2.build', async () => {
    extension = await activate(context(), host(['/usr/bin/op2']));
    openEditor();
    await vscode.commands.executeCommand(COMMANDS.buildGraph);
    const client = clients()[0];
    assert.deepEqual(client.requests, [
      { method: 'workspace/executeCommand', params: { command: 'op2.build', arguments: [vscode.Uri.file(SOURCE).toString()] } },
    ]);
  });

  it('asks for a document when none is open', async () => {
    extension = await activate(context(), host(['/usr/bin/op2']));
    await vscode.commands.executeCommand(COMMANDS.buildGraph);
    assert.equal(clients()[0].requests.length, 0);
    assert.match(mock.messages[0].message, /Open an \.op2 file/);
  });

  it('shows the device type of the set under the cursor in a read-only document', async () => {
    extension = await activate(context(), host(['/usr/bin/op2']));
    lc.__mock.respond = (_method: string, params: any) => (params.arguments[1] === 'cells' ? '<DeviceType id="cells"/>' : null);
    openEditor(0, 6);
    const text = await vscode.commands.executeCommand(COMMANDS.showDeviceType);
    assert.equal(text, '<DeviceType id="cells"/>');
    const uri = vscode.Uri.file(SOURCE).toString();
    assert.deepEqual(clients()[0].requests[0].params, { command: 'op2.showDeviceType', arguments: [uri, 'cells'] });
    const shown = mock.shownDocuments[0];
    assert.equal(shown.document.uri.scheme, 'op2-device-type');
    assert.equal(shown.document.uri.path, '/airfoil/cells.txt');
    assert.equal(shown.document.getText(), '<DeviceType id="cells"/>');
    assert.equal(shown.options.viewColumn, vscode.ViewColumn.Beside);
  });

  it('falls back to the document default when the word under the cursor is not a set', async () => {
    extension = await activate(context(), host(['/usr/bin/op2']));
    lc.__mock.respond = (_method: string, params: any) => (params.arguments.length === 1 ? '<DeviceType id="default"/>' : null);
    openEditor(2, 1);
    await vscode.commands.executeCommand(COMMANDS.showDeviceType);
    const requests = clients()[0].requests.map((r: any) => r.params.arguments.length);
    assert.deepEqual(requests, [2, 1]);
    assert.equal(mock.shownDocuments[0].document.getText(), '<DeviceType id="default"/>');
  });

  it('says so when there is no device type', async () => {
    extension = await activate(context(), host(['/usr/bin/op2']));
    openEditor();
    await vscode.commands.executeCommand(COMMANDS.showDeviceType, undefined, 'edges');
    assert.equal(clients()[0].requests.length, 1);
    assert.match(mock.messages[0].message, /no generated device type/);
    assert.equal(mock.shownDocuments.length, 0);
  });

  it('opens the device type when a code lens runs the server command', async () => {
    extension = await activate(context(), host(['/usr/bin/op2']));
    lc.__mock.respond = () => '<DeviceType id="edges"/>';
    const uri = vscode.Uri.file(SOURCE).toString();
    await clients()[0].executeThroughMiddleware('op2.showDeviceType', [uri, 'edges']);
    assert.equal(mock.shownDocuments[0].document.uri.path, '/airfoil/edges.txt');
  });

  it('opens the graph file where the server says the build writes it, or says why there is none', async () => {
    extension = await activate(context(), host(['/usr/bin/op2']));
    openEditor();
    // Through a link, the build writes beside the file it leads to.
    lc.__mock.respond = () => ({ uri: vscode.Uri.file('/work/proj/real/airfoil.graph.xml').toString() });
    mock.files.add('/work/proj/real/airfoil.graph.xml');
    await vscode.commands.executeCommand(COMMANDS.openGraphFile);
    assert.deepEqual(clients()[0].requests.at(-1), {
      method: 'workspace/executeCommand',
      params: { command: 'op2.graphPath', arguments: [vscode.Uri.file(SOURCE).toString()] },
    });
    assert.equal(mock.shownDocuments.at(-1).document.uri.fsPath, '/work/proj/real/airfoil.graph.xml');
    // The server's reason, when it would write nothing.
    lc.__mock.respond = () => {
      throw new Error('`op2.build.outDir` (`../x`) could lead outside the workspace folder: it must be a relative path without `..`; nothing written');
    };
    const shown = mock.shownDocuments.length;
    await vscode.commands.executeCommand(COMMANDS.openGraphFile);
    assert.match(mock.messages.at(-1).message, /^op2: no graph is written for this file: `op2\.build\.outDir` \(`\.\.\/x`\) could lead outside/);
    assert.equal(mock.shownDocuments.length, shown);
  });

  it('opens the graph file beside the source, or in op2.build.outDir, when the server does not know op2.graphPath', async () => {
    lc.__mock.respond = (_method: string, params: any) => {
      if (params.command === 'op2.graphPath') throw new Error('unknown command `op2.graphPath`');
      return null;
    };
    extension = await activate(context(), host(['/usr/bin/op2']));
    openEditor();
    mock.files.add('/work/proj/src/airfoil.graph.xml');
    await vscode.commands.executeCommand(COMMANDS.openGraphFile);
    assert.equal(mock.shownDocuments.at(-1).document.uri.fsPath, '/work/proj/src/airfoil.graph.xml');
    mock.settings['op2.build.outDir'] = 'build/graphs';
    mock.choices.push('Build Now');
    await vscode.commands.executeCommand(COMMANDS.openGraphFile);
    assert.match(mock.messages.at(-1).message, /no graph at \/work\/proj\/build\/graphs\/airfoil\.graph\.xml/);
    assert.equal(clients()[0].requests.at(-1).params.command, 'op2.build');
  });

  it('imports the C++ file chosen in the explorer through op2.import, then opens the program', async () => {
    extension = await activate(context(), host(['/usr/bin/op2']));
    const main = vscode.Uri.file('/work/proj/app/grid.cpp');
    lc.__mock.respond = () => ({
      program: vscode.Uri.file('/work/proj/app/grid.op2').toString(),
      instance: vscode.Uri.file('/work/proj/app/grid.json').toString(),
      faithful: true,
      report: 'translated (4):\n',
    });
    mock.files.add('/work/proj/app/grid.op2');
    const answer: any = await vscode.commands.executeCommand(COMMANDS.importApplication, main);
    assert.equal(answer.faithful, true);
    assert.deepEqual(clients()[0].requests, [
      { method: 'workspace/executeCommand', params: { command: 'op2.import', arguments: [main.toString()] } },
    ]);
    assert.equal(mock.shownDocuments[0].document.uri.fsPath, '/work/proj/app/grid.op2');
    assert.equal(mock.messages[0].level, 'information');
    assert.equal(mock.messages[0].message, 'op2: imported grid.cpp into grid.op2 and grid.json.');
  });

  it('names the other translation units the server imported from the compilation database', async () => {
    extension = await activate(context(), host(['/usr/bin/op2']));
    const main = vscode.Uri.file('/work/proj/app/airfoil.cpp');
    lc.__mock.respond = () => ({
      program: vscode.Uri.file('/work/proj/app/airfoil.op2').toString(),
      instance: vscode.Uri.file('/work/proj/app/airfoil.json').toString(),
      units: [vscode.Uri.file('/work/proj/app/mesh.cpp').toString(), vscode.Uri.file('/work/proj/src/kernels.cpp').toString()],
      faithful: true,
      report: 'note: the application\'s other translation units, chosen from …\n',
    });
    mock.files.add('/work/proj/app/airfoil.op2');
    await vscode.commands.executeCommand(COMMANDS.importApplication, main);
    assert.equal(mock.messages[0].message, 'op2: imported airfoil.cpp with mesh.cpp, kernels.cpp into airfoil.op2 and airfoil.json.');
  });

  it('imports the active C++ editor, and warns when the result is not faithful', async () => {
    extension = await activate(context(), host(['/usr/bin/op2']));
    const main = vscode.Uri.file('/work/proj/app/airfoil.cpp');
    vs.window.activeTextEditor = { document: vs.__textDocument(main, 'int main() {}\n', 'cpp') };
    lc.__mock.respond = () => ({
      program: vscode.Uri.file('/work/proj/app/airfoil.op2').toString(),
      instance: vscode.Uri.file('/work/proj/app/airfoil.json').toString(),
      faithful: false,
      report: 'not translated (1):\n',
    });
    mock.files.add('/work/proj/app/airfoil.op2');
    await vscode.commands.executeCommand(COMMANDS.importApplication);
    assert.deepEqual(clients()[0].requests[0].params.arguments, [main.toString()]);
    assert.equal(mock.messages[0].level, 'warning');
    assert.match(mock.messages[0].message, /airfoil\.op2 and airfoil\.json, but the result is not faithful/);
  });

  it('imports nothing in Restricted Mode, through its own command or the server\'s, and says how to trust the folder', async () => {
    extension = await activate(context(), host(['/usr/bin/op2']));
    vs.workspace.isTrusted = false;
    const main = vscode.Uri.file('/work/proj/app/grid.cpp');
    mock.choices.push('Manage Workspace Trust');
    const answer = await vscode.commands.executeCommand(COMMANDS.importApplication, main);
    assert.equal(answer, undefined);
    assert.equal(mock.messages[0].level, 'warning');
    assert.match(mock.messages[0].message, /compiles the application and runs its set-up.*trust the workspace first/);
    assert.ok(mock.executed.some((e: any) => e.id === 'workbench.trust.manage'), JSON.stringify(mock.executed));
    // The server's own command, which the client registers in VS Code.
    const viaServer = await clients()[0].executeThroughMiddleware('op2.import', [main.toString()]);
    assert.equal(viaServer, undefined);
    assert.equal(mock.messages.length, 2);
    assert.equal(clients()[0].requests.length, 0, 'no request reached the server');
  });

  it('shows why an import failed, and imports nothing that is not a C/C++ file', async () => {
    extension = await activate(context(), host(['/usr/bin/op2']));
    lc.__mock.respond = () => {
      throw new Error('`hello.cpp` does not call `op_init`');
    };
    await vscode.commands.executeCommand(COMMANDS.importApplication, vscode.Uri.file('/work/proj/hello.cpp'));
    assert.equal(mock.messages[0].level, 'error');
    assert.equal(mock.messages[0].message, 'op2 import failed: `hello.cpp` does not call `op_init`');
    assert.equal(mock.shownDocuments.length, 0);

    openEditor();
    await vscode.commands.executeCommand(COMMANDS.importApplication);
    assert.equal(clients()[0].requests.length, 1, 'no request for an .op2 file');
    assert.match(mock.messages[1].message, /open the main C\/C\+\+ file of an OP2 application/);
  });

  it('sends changed settings to the server, and restarts it when the server path changes', async () => {
    extension = await activate(context(), host(['/usr/bin/op2', '/opt/op2']));
    await vs.__changeSettings({ 'op2.inlayHints.generatedPins': false });
    const first = clients()[0];
    assert.deepEqual(first.notifications, [
      {
        method: 'workspace/didChangeConfiguration',
        params: {
          settings: {
            op2: {
              build: { onSave: true, outDir: '', instance: '' },
              inlayHints: { invocationNames: true, generatedPins: false },
              trace: { server: 'off' },
            },
          },
        },
      },
    ]);
    await vs.__changeSettings({ 'op2.server.path': '/opt/op2' });
    assert.equal(clients().length, 2);
    assert.equal(first.stopped, 1);
    assert.equal(first.disposed, true);
    assert.equal(clients()[1].serverOptions.run.command, '/opt/op2');
    assert.equal(extension.state, 'running');
  });

  it('restarts the server and shows its output on request', async () => {
    extension = await activate(context(), host(['/usr/bin/op2']));
    await vscode.commands.executeCommand(COMMANDS.restartServer);
    assert.equal(clients().length, 2);
    assert.equal(clients()[0].stopped, 1);
    assert.equal(clients()[1].started, 1);
    await vscode.commands.executeCommand(COMMANDS.showServerOutput);
    assert.equal(mock.outputChannels[0].shown, 1);
    assert.equal(clients()[1].clientOptions.outputChannel, mock.outputChannels[0], 'one output channel across restarts');
  });

  it('closes its output channel only after the server has stopped, as VS Code shuts down', async () => {
    const ctx = context();
    extension = await activate(ctx, host(['/usr/bin/op2']));
    // VS Code calls deactivate, then disposes the subscriptions at once,
    // without waiting for deactivate's promise.
    const deactivating = deactivate();
    for (const subscription of ctx.subscriptions) subscription.dispose();
    await deactivating;
    await flush();
    const channel = mock.outputChannels[0];
    assert.equal(clients()[0].stopped, 1);
    assert.ok(channel.lines.some((line: string) => line.includes("Sending notification 'exit'")), 'the last trace line was written');
    assert.equal(channel.disposed, true, 'the channel is closed afterwards');
    assert.equal(mock.statusItems[0].disposed, true);
    extension = undefined;
  });

  it('stops the server on deactivate', async () => {
    extension = await activate(context(), host(['/usr/bin/op2']));
    await deactivate();
    assert.equal(clients()[0].stopped, 1);
    assert.equal(extension.state, 'stopped');
  });
});
