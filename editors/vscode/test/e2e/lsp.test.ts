// End to end: a client built on vscode-languageserver-protocol (the protocol
// library under VS Code's own client) drives a real `op2 lsp` through what an
// editor does: initialize with the extension's settings, open, diagnostics,
// edit, hover, completion, inlay hints, save (build on save), commands,
// shutdown.
//
// OP2_BIN: the op2 binary (default: target/debug/op2 of this repository).
// OP2_E2E_STRICT=1: a feature the server answers with null (hover,
//   completion, inlay hints, device type) fails the test; otherwise it is
//   reported as pending, also in the file named by OP2_E2E_PENDING_FILE.
// OP2_E2E_TIMEOUT_MS: bound of every wait (default 20000).

import assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import {
  createProtocolConnection,
  DiagnosticSeverity,
  ProtocolConnection,
  PublishDiagnosticsParams,
  StreamMessageReader,
  StreamMessageWriter,
  WorkDoneProgress,
} from 'vscode-languageserver-protocol/node';

import { serverSection } from '../../src/settings';

const extensionRoot = resolve(__dirname, '..', '..', '..');
const repo = resolve(extensionRoot, '..', '..');
const binary = process.env.OP2_BIN ? resolve(process.env.OP2_BIN) : join(repo, 'target', 'debug', 'op2');
const strict = process.env.OP2_E2E_STRICT === '1';
const timeoutMs = Number(process.env.OP2_E2E_TIMEOUT_MS ?? 20000);

const pending: string[] = [];
function notYet(feature: string, detail: string): void {
  const line = `${feature}: ${detail}`;
  if (strict) assert.fail(`${line} (OP2_E2E_STRICT=1)`);
  pending.push(line);
  console.log(`PENDING ${line}`);
  if (process.env.OP2_E2E_PENDING_FILE) appendFileSync(process.env.OP2_E2E_PENDING_FILE, `e2e ${line}\n`);
}

/** Polls `probe` until it returns a value, or fails after the timeout. */
async function waitFor<T>(what: string, probe: () => T | undefined | false, ms = timeoutMs): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value as T;
    if (Date.now() > deadline) assert.fail(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Races a request against the timeout. */
async function bounded<T>(what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms: ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const example = readFileSync(join(repo, 'docs', 'examples', 'dot_product.op2'), 'utf8');
const exampleLines = example.split('\n');
// A line with non-ASCII text before an unknown name: the diagnostic's
// UTF-16 column must be right.
const brokenLineIndex = exampleLines.findIndex((l) => l.includes('p_b[pick_b[0]] READ'));
const brokenLine = exampleLines[brokenLineIndex].replace('p_b[pick_b[0]] READ', '/* é → β */ p_c[pick_b[0]] READ');
const broken = exampleLines.map((l, i) => (i === brokenLineIndex ? brokenLine : l)).join('\n');

describe(`op2 lsp end to end (${binary})`, () => {
  let workspace: string;
  let server: ChildProcess;
  let connection: ProtocolConnection;
  let stderr = '';
  const diagnostics = new Map<string, PublishDiagnosticsParams[]>();
  const logs: { type: number; message: string }[] = [];
  const shown: { type: number; message: string }[] = [];
  const progressCreated: unknown[] = [];
  const progress: { token: unknown; value: { kind: string } }[] = [];
  let exited: number | null | undefined;
  let sourcePath: string;
  let uri: string;

  const latest = (u: string, version?: number) => {
    const all = diagnostics.get(u) ?? [];
    const matching = version === undefined ? all : all.filter((d) => d.version === version);
    return matching.at(-1);
  };

  before(async () => {
    assert.ok(existsSync(binary), `no op2 binary at ${binary}: build it with \`cargo build -p op2-cli\` or set OP2_BIN`);
    workspace = mkdtempSync(join(tmpdir(), 'op2-e2e-'));
    sourcePath = join(workspace, 'dot_product.op2');
    copyFileSync(join(repo, 'docs', 'examples', 'dot_product.op2'), sourcePath);
    uri = pathToFileURL(sourcePath).toString();

    server = spawn(binary, ['lsp'], { cwd: workspace, stdio: ['pipe', 'pipe', 'pipe'] });
    server.stderr!.on('data', (chunk) => (stderr += chunk));
    server.on('exit', (code) => (exited = code));
    connection = createProtocolConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
    connection.onRequest('window/workDoneProgress/create', (params: { token: string | number }) => {
      progressCreated.push(params);
      connection.onProgress(WorkDoneProgress.type, params.token, (value) => progress.push({ token: params.token, value }));
      return null;
    });
    connection.onRequest('client/registerCapability', () => null);
    connection.onRequest('client/unregisterCapability', () => null);
    connection.onRequest('workspace/configuration', (params: { items: unknown[] }) => params.items.map(() => serverSection((_k, d) => d)));
    connection.onRequest('workspace/inlayHint/refresh', () => null);
    connection.onRequest('workspace/semanticTokens/refresh', () => null);
    connection.onRequest('workspace/codeLens/refresh', () => null);
    connection.onRequest('workspace/diagnostic/refresh', () => null);
    connection.onRequest('window/showMessageRequest', () => null);
    connection.onNotification('textDocument/publishDiagnostics', (params: PublishDiagnosticsParams) => {
      const list = diagnostics.get(params.uri) ?? [];
      list.push(params);
      diagnostics.set(params.uri, list);
    });
    connection.onNotification('window/logMessage', (params: { type: number; message: string }) => logs.push(params));
    connection.onNotification('window/showMessage', (params: { type: number; message: string }) => shown.push(params));
    connection.listen();
  });

  after(async () => {
    if (exited === undefined) server?.kill('SIGKILL');
    connection?.dispose();
    if (workspace) rmSync(workspace, { recursive: true, force: true });
    if (pending.length > 0) console.log(`pending server features (null answers): ${pending.length}`);
  });

  it('initializes with the settings the extension sends', async () => {
    const result = await bounded(
      'initialize',
      connection.sendRequest('initialize', {
        processId: process.pid,
        clientInfo: { name: 'op2-e2e', version: 'vscode-languageserver-protocol' },
        rootUri: pathToFileURL(workspace).toString(),
        workspaceFolders: [{ uri: pathToFileURL(workspace).toString(), name: 'workspace' }],
        initializationOptions: serverSection((_k, d) => d),
        capabilities: {
          general: { positionEncodings: ['utf-16'] },
          window: { workDoneProgress: true, showMessage: { messageActionItem: { additionalPropertiesSupport: true } } },
          workspace: {
            configuration: true,
            workspaceFolders: true,
            applyEdit: true,
            didChangeConfiguration: { dynamicRegistration: true },
            didChangeWatchedFiles: { dynamicRegistration: true },
            executeCommand: { dynamicRegistration: true },
            inlayHint: { refreshSupport: true },
            semanticTokens: { refreshSupport: true },
            codeLens: { refreshSupport: true },
          },
          textDocument: {
            synchronization: { dynamicRegistration: true, didSave: true, willSave: true, willSaveWaitUntil: true },
            publishDiagnostics: { relatedInformation: true, versionSupport: true, codeDescriptionSupport: true, dataSupport: true, tagSupport: { valueSet: [1, 2] } },
            hover: { dynamicRegistration: true, contentFormat: ['markdown', 'plaintext'] },
            completion: {
              dynamicRegistration: true,
              contextSupport: true,
              completionItem: { snippetSupport: true, documentationFormat: ['markdown', 'plaintext'], labelDetailsSupport: true, insertReplaceSupport: true },
            },
            inlayHint: { dynamicRegistration: true, resolveSupport: { properties: ['tooltip', 'textEdits', 'label.tooltip', 'label.location', 'label.command'] } },
            semanticTokens: {
              dynamicRegistration: true,
              requests: { range: true, full: { delta: true } },
              tokenTypes: ['namespace', 'type', 'class', 'enum', 'interface', 'struct', 'typeParameter', 'parameter', 'variable', 'property', 'enumMember', 'event', 'function', 'method', 'macro', 'keyword', 'modifier', 'comment', 'string', 'number', 'regexp', 'operator', 'decorator'],
              tokenModifiers: ['declaration', 'definition', 'readonly', 'static', 'deprecated', 'abstract', 'async', 'modification', 'documentation', 'defaultLibrary'],
              formats: ['relative'],
              overlappingTokenSupport: false,
              multilineTokenSupport: false,
            },
            codeLens: { dynamicRegistration: true },
          },
        },
      }),
    );
    const capabilities = (result as any).capabilities;
    assert.equal((result as any).serverInfo?.name, 'op2');
    assert.ok(capabilities.positionEncoding === undefined || capabilities.positionEncoding === 'utf-16', `utf-16 for VS Code, got ${capabilities.positionEncoding}`);
    assert.equal(capabilities.textDocumentSync.openClose, true);
    assert.equal(capabilities.textDocumentSync.change, 2, 'incremental sync');
    assert.ok(capabilities.textDocumentSync.save, 'didSave wanted');
    assert.ok(capabilities.hoverProvider, 'hover');
    assert.ok(capabilities.completionProvider, 'completion');
    assert.ok(capabilities.inlayHintProvider, 'inlay hints');
    assert.deepEqual([...capabilities.executeCommandProvider.commands].sort(), ['op2.build', 'op2.graphPath', 'op2.import', 'op2.showDeviceType', 'op2.status']);
    await connection.sendNotification('initialized', {});
    await waitFor('the ready log message', () => logs.some((l) => l.message.includes('ready')));
    assert.deepEqual(shown, [], 'no warning about the initialization options');
  });

  it('publishes diagnostics for an opened file, with UTF-16 columns', async () => {
    await connection.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'op2', version: 1, text: broken } });
    const published = await waitFor('diagnostics for version 1', () => latest(uri, 1));
    const error = published.diagnostics.find((d) => d.code === 'E101');
    assert.ok(error, `an E101 for p_c, got ${JSON.stringify(published.diagnostics)}`);
    assert.equal(error.severity, DiagnosticSeverity.Error);
    assert.match(error.message, /p_c/);
    assert.equal(error.range.start.line, brokenLineIndex);
    assert.equal(error.range.start.character, brokenLine.indexOf('p_c'), 'the column counts UTF-16 code units');
    assert.equal(error.range.end.character, brokenLine.indexOf('p_c') + 3);
    const warning = published.diagnostics.find((d) => d.code === 'W604');
    assert.equal(warning?.severity, DiagnosticSeverity.Warning);
  });

  it('clears the error after an incremental edit', async () => {
    const start = brokenLine.indexOf('/* é');
    const end = brokenLine.indexOf('p_c') + 3;
    await connection.sendNotification('textDocument/didChange', {
      textDocument: { uri, version: 2 },
      contentChanges: [{ range: { start: { line: brokenLineIndex, character: start }, end: { line: brokenLineIndex, character: end } }, text: 'p_b' }],
    });
    const published = await waitFor('diagnostics for version 2', () => latest(uri, 2));
    assert.deepEqual(
      published.diagnostics.filter((d) => d.severity === DiagnosticSeverity.Error || d.severity === DiagnosticSeverity.Warning),
      [],
      'the example has no errors or warnings once fixed',
    );
  });

  it('answers hover on a dat', async () => {
    const line = exampleLines.findIndex((l) => l.includes('p_a[pick_a[0]] READ'));
    const character = exampleLines[line].indexOf('p_a') + 1;
    const hover: any = await bounded('hover', connection.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line, character } }));
    if (hover === null) return notYet('hover', 'null on `p_a` in a par_loop argument');
    const text = typeof hover.contents === 'string' ? hover.contents : hover.contents.value ?? JSON.stringify(hover.contents);
    assert.match(text, /p_a/);
    assert.match(text, /double|dat|a_entries/);
  });

  it('answers completion in a par_loop argument', async () => {
    const line = exampleLines.findIndex((l) => l.includes('p_a[pick_a[0]] READ'));
    const character = exampleLines[line].indexOf('p_a');
    const completion: any = await bounded(
      'completion',
      connection.sendRequest('textDocument/completion', { textDocument: { uri }, position: { line, character }, context: { triggerKind: 1 } }),
    );
    if (completion === null) return notYet('completion', 'null at the start of a par_loop argument');
    const items: any[] = Array.isArray(completion) ? completion : completion.items;
    const labels = items.map((i) => (typeof i.label === 'string' ? i.label : i.label.label));
    for (const name of ['p_a', 'p_b', 'g_dot']) assert.ok(labels.includes(name), `completion offers ${name}: ${labels.join(', ')}`);
  });

  it('answers inlay hints for the whole file', async () => {
    const hints: any = await bounded(
      'inlayHint',
      connection.sendRequest('textDocument/inlayHint', {
        textDocument: { uri },
        range: { start: { line: 0, character: 0 }, end: { line: exampleLines.length, character: 0 } },
      }),
    );
    if (hints === null || (Array.isArray(hints) && hints.length === 0)) return notYet('inlayHint', `${JSON.stringify(hints)} for a file with a par_loop`);
    assert.ok(Array.isArray(hints));
    for (const hint of hints) {
      assert.equal(typeof hint.position.line, 'number');
      assert.ok(typeof hint.label === 'string' || Array.isArray(hint.label));
    }
    const parLoopLine = exampleLines.findIndex((l) => l.includes('par_loop dot_pair'));
    assert.ok(
      hints.some((h: any) => h.position.line >= parLoopLine),
      'a hint on or after the par_loop (invocation names are on by default)',
    );
  });

  it('builds the graph on save', async () => {
    const graph = join(workspace, 'dot_product.graph.xml');
    assert.equal(existsSync(graph), false);
    const before = logs.length;
    await connection.sendNotification('textDocument/didSave', { textDocument: { uri } });
    const log = await waitFor('the build log message', () => logs.slice(before).find((l) => l.message.startsWith('op2 build')));
    assert.equal(log.type, 3, `an info message: ${log.message}`);
    assert.ok(existsSync(graph), `${graph} written (${log.message})`);
    const xml = readFileSync(graph, 'utf8');
    assert.match(xml, /<\?xml|<Graphs/);
    assert.match(xml, /DeviceType/);
    assert.ok(progressCreated.length >= 1, 'a work-done progress was created');
    await waitFor('the end of the build progress', () => progress.some((p) => p.value?.kind === 'end'));
    assert.ok(progress.some((p) => p.value?.kind === 'begin'));
  });

  it('builds through the op2.build command', async () => {
    const graph = join(workspace, 'dot_product.graph.xml');
    const before = logs.length;
    const mtime = statSync(graph).mtimeMs;
    await new Promise((r) => setTimeout(r, 20));
    const result = await bounded('op2.build', connection.sendRequest('workspace/executeCommand', { command: 'op2.build', arguments: [uri] }));
    assert.equal(result, null);
    const log = await waitFor('the build log message', () => logs.slice(before).find((l) => l.message.startsWith('op2 build')));
    assert.equal(log.type, 3, log.message);
    assert.ok(statSync(graph).mtimeMs >= mtime);
  });

  it('writes nothing for a program with errors', async () => {
    const brokenPath = join(workspace, 'broken.op2');
    const brokenUri = pathToFileURL(brokenPath).toString();
    writeFileSync(brokenPath, broken);
    await connection.sendNotification('textDocument/didOpen', { textDocument: { uri: brokenUri, languageId: 'op2', version: 1, text: broken } });
    await waitFor('diagnostics of broken.op2', () => latest(brokenUri));
    const before = logs.length;
    await connection.sendNotification('textDocument/didSave', { textDocument: { uri: brokenUri } });
    const log = await waitFor('the build log message', () => logs.slice(before).find((l) => l.message.startsWith('op2 build')));
    assert.equal(log.type, 1, `an error message: ${log.message}`);
    assert.match(log.message, /nothing written/);
    assert.equal(existsSync(join(workspace, 'broken.graph.xml')), false);
    await connection.sendNotification('textDocument/didClose', { textDocument: { uri: brokenUri } });
    await waitFor('diagnostics cleared on close', () => latest(brokenUri)?.diagnostics.length === 0);
  });

  it('shows a generated device type as text', async () => {
    const text = await bounded('op2.showDeviceType', connection.sendRequest('workspace/executeCommand', { command: 'op2.showDeviceType', arguments: [uri, 'pairs'] }));
    if (text === null) return notYet('op2.showDeviceType', 'null for set `pairs`');
    assert.equal(typeof text, 'string');
    assert.match(text as string, /pairs/);
  });

  it('rejects an unknown command', async () => {
    await assert.rejects(bounded('unknown command', connection.sendRequest('workspace/executeCommand', { command: 'op2.nope', arguments: [] })), /unknown command/);
  });

  it('shuts down and exits cleanly', async () => {
    await bounded('shutdown', connection.sendRequest('shutdown'));
    await connection.sendNotification('exit');
    const code = await waitFor('the server to exit', () => (exited === undefined ? undefined : { code: exited }), 10000);
    assert.equal(code.code, 0, `exit code (stderr: ${stderr.slice(-2000)})`);
    assert.doesNotMatch(stderr, /panicked/);
  });
});
