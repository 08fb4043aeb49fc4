// The OP2 extension: starts `op2 lsp` through vscode-languageclient, sends it
// the `op2` settings, and adds the commands and the status item.

import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  LogMessageNotification,
  RevealOutputChannelOn,
  ServerOptions,
  State,
} from 'vscode-languageclient/node';

import { DiscoveryHost, findServer, nodeHost } from './discovery';
import { DEVICE_TYPE_SCHEME, graphPath } from './graph';
import { serverSection } from './settings';
import { BuildReport, parseBuildMessage, ServerState, statusView } from './status';

/** The extension's own commands (package.json `contributes.commands`). */
export const COMMANDS = {
  buildGraph: 'op2.buildGraph',
  showDeviceType: 'op2.showGeneratedDeviceType',
  openGraphFile: 'op2.openGraphFile',
  restartServer: 'op2.restartServer',
  showServerOutput: 'op2.showServerOutput',
  importApplication: 'op2.importApplication',
} as const;

/**
 * The server's commands (`workspace/executeCommand`). vscode-languageclient
 * registers these ids itself, so the extension's commands use other ids.
 */
export const SERVER_COMMANDS = {
  build: 'op2.build',
  showDeviceType: 'op2.showDeviceType',
  import: 'op2.import',
  graphPath: 'op2.graphPath',
} as const;

/** The C and C++ sources an OP2 application's main file may be. */
const C_SOURCE = /\.(c|cc|cpp|cxx|C)$/;

/** The server's answer to `op2.import` (server/lsp/src/handlers/import.rs). */
interface Imported {
  program: string | null;
  instance: string | null;
  /** The application's other translation units imported with the main file (from its compilation database). */
  units?: string[];
  faithful: boolean;
  report: string;
}

const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/;

/**
 * `op2.server.path` from the user's (or the remote machine's) settings only.
 * The setting is machine-scoped, so VS Code should never hand over a
 * workspace's value; this reads the user's value by name anyway, so that a
 * repository's `.vscode/settings.json` can never choose what the extension
 * runs, whatever the VS Code version and whether or not the folder is trusted.
 */
export function serverPathSetting(config: vscode.WorkspaceConfiguration): string {
  const value = config.inspect<unknown>('server.path');
  const chosen = value?.globalValue ?? value?.defaultValue;
  return typeof chosen === 'string' ? chosen : '';
}

/** Everything the extension holds while active. */
export class Op2Extension implements vscode.Disposable {
  client: LanguageClient | undefined;
  state: ServerState = 'stopped';
  lastBuild: BuildReport | undefined;
  serverPath: string | undefined;
  /** The user's `op2.server.path` the last start used. */
  private serverSetting: string | undefined;
  readonly output: vscode.OutputChannel;
  readonly status: vscode.LanguageStatusItem;
  private readonly deviceTypes = new Map<string, string>();
  private readonly deviceTypeChanged = new vscode.EventEmitter<vscode.Uri>();
  private readonly disposables: vscode.Disposable[] = [];
  private starting: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly host: DiscoveryHost,
  ) {
    this.output = vscode.window.createOutputChannel('OP2 Language Server');
    this.status = vscode.languages.createLanguageStatusItem('op2.status', { language: 'op2' });
    this.status.name = 'OP2 language server';
    this.status.command = { title: 'Show Output', command: COMMANDS.showServerOutput };
    // The output channel and the status item are not among these: they
    // close only after the client has stopped (see `dispose`).
    this.disposables.push(this.deviceTypeChanged);
    this.updateStatus();
  }

  /** Registers commands, the device-type documents and the settings listener. */
  register(): void {
    const register = (id: string, handler: (...args: any[]) => unknown) =>
      this.disposables.push(vscode.commands.registerCommand(id, handler));
    register(COMMANDS.buildGraph, (uri?: vscode.Uri) => this.buildGraph(uri));
    register(COMMANDS.showDeviceType, (uri?: vscode.Uri | string, set?: string) => this.showDeviceType(uri, set));
    register(COMMANDS.openGraphFile, (uri?: vscode.Uri) => this.openGraphFile(uri));
    register(COMMANDS.restartServer, () => this.restart());
    register(COMMANDS.showServerOutput, () => this.output.show(true));
    register(COMMANDS.importApplication, (uri?: vscode.Uri) => this.importApplication(uri));

    const deviceTypes = this.deviceTypes;
    const onDidChange = this.deviceTypeChanged.event;
    this.disposables.push(
      vscode.workspace.registerTextDocumentContentProvider(DEVICE_TYPE_SCHEME, {
        onDidChange,
        provideTextDocumentContent: (uri: vscode.Uri) => deviceTypes.get(uri.toString()) ?? '',
      }),
      vscode.workspace.onDidChangeConfiguration((event) => this.onConfigurationChanged(event)),
    );
  }

  private config(): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration('op2');
  }

  /** The `op2` section for the server. */
  settingsSection(): Record<string, unknown> {
    const config = this.config();
    return serverSection((key, defaultValue) => config.get(key, defaultValue));
  }

  private updateStatus(): void {
    const view = statusView(this.state, this.lastBuild, this.serverPath);
    this.status.text = view.text;
    this.status.detail = view.detail;
    this.status.busy = view.busy;
    this.status.severity =
      view.severity === 'error'
        ? vscode.LanguageStatusSeverity.Error
        : view.severity === 'warning'
          ? vscode.LanguageStatusSeverity.Warning
          : vscode.LanguageStatusSeverity.Information;
  }

  private setState(state: ServerState): void {
    this.state = state;
    this.updateStatus();
  }

  async start(): Promise<void> {
    if (this.starting) return this.starting;
    this.starting = this.startClient().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async startClient(): Promise<void> {
    this.serverSetting = serverPathSetting(this.config());
    const found = findServer({ setting: this.serverSetting, extensionPath: this.context.extensionPath }, this.host);
    if (found.kind === 'missing') {
      this.serverPath = undefined;
      this.setState('missing');
      this.output.appendLine(found.message);
      this.output.appendLine(`Looked for: ${found.tried.join(', ') || '(nothing: PATH is empty)'}`);
      void vscode.window.showErrorMessage(found.message, 'Open Settings', 'Show Output').then((choice) => {
        if (choice === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'op2.server.path');
        if (choice === 'Show Output') this.output.show(true);
      });
      return;
    }
    this.serverPath = found.path;
    this.output.appendLine(`Starting ${found.path} lsp (found through ${found.source === 'setting' ? 'op2.server.path' : found.source === 'bundled' ? 'the bundled binary' : 'PATH'})`);
    const serverOptions: ServerOptions = {
      run: { command: found.path, args: ['lsp'] },
      debug: { command: found.path, args: ['lsp'], options: { env: { ...process.env, RUST_BACKTRACE: '1' } } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: 'op2' },
        { scheme: 'untitled', language: 'op2' },
      ],
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: this.settingsSection(),
      synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher('**/*.op2') },
      middleware: {
        // A code lens or code action may carry the server's own command;
        // its answer (the device type's text) is shown, not dropped.
        executeCommand: async (command, args, next) => {
          // The server's `op2.import` is a VS Code command too (the client
          // registers it): the same trust as the extension's own.
          if (command === SERVER_COMMANDS.import && !(await this.trustedForImport())) return undefined;
          const result = await next(command, args);
          if (command === SERVER_COMMANDS.showDeviceType && typeof result === 'string') {
            const source = typeof args[0] === 'string' ? vscode.Uri.parse(args[0]) : undefined;
            await this.openDeviceType(source, typeof args[1] === 'string' ? args[1] : undefined, result);
          }
          return result;
        },
      },
    };
    const client = new LanguageClient('op2', 'OP2 Language Server', serverOptions, clientOptions);
    this.client = client;
    client.onDidChangeState((event) => {
      if (this.client !== client) return;
      this.setState(event.newState === State.Running ? 'running' : event.newState === State.Starting ? 'starting' : 'stopped');
    });
    // Replaces the client's own handler: the same output, plus the status.
    client.onNotification(LogMessageNotification.type, (params) => {
      switch (params.type) {
        case 1:
          client.error(params.message, undefined, false);
          break;
        case 2:
          client.warn(params.message, undefined, false);
          break;
        default:
          client.info(params.message, undefined, false);
      }
      const build = parseBuildMessage(params.type, params.message);
      if (build) {
        this.lastBuild = build;
        this.updateStatus();
      }
    });
    this.setState('starting');
    try {
      await client.start();
      this.setState('running');
    } catch (error) {
      this.setState('stopped');
      const message = `The op2 language server (${found.path}) failed to start: ${error instanceof Error ? error.message : String(error)}`;
      this.output.appendLine(message);
      void vscode.window.showErrorMessage(message, 'Show Output').then((choice) => {
        if (choice) this.output.show(true);
      });
    }
  }

  /** Stops the server; a second call while it stops waits for the first. */
  stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      const previous = this.stopping ?? Promise.resolve();
      this.stopping = previous.then(async () => {
        try {
          await client.stop(5000);
        } catch {
          // Already stopped, or never started.
        }
        await client.dispose().catch(() => undefined);
      });
    }
    const stopping = this.stopping ?? Promise.resolve();
    return stopping.then(() => {
      if (this.stopping === stopping) this.stopping = undefined;
      this.setState('stopped');
    });
  }

  async restart(): Promise<void> {
    if (this.starting) await this.starting.catch(() => undefined);
    await this.stop();
    await this.start();
  }

  private async onConfigurationChanged(event: vscode.ConfigurationChangeEvent): Promise<void> {
    // A change of the workspace's value, which is never used, restarts nothing.
    if (event.affectsConfiguration('op2.server.path') && serverPathSetting(this.config()) !== this.serverSetting) {
      await this.restart();
      return;
    }
    if (event.affectsConfiguration('op2') && this.client?.isRunning()) {
      await this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: { op2: this.settingsSection() } });
    }
  }

  /** The op2 document a command applies to: its argument, else the active editor's. */
  private targetUri(uri: vscode.Uri | string | undefined): vscode.Uri | undefined {
    if (typeof uri === 'string') return vscode.Uri.parse(uri);
    if (uri instanceof Object && 'scheme' in uri) return uri;
    const document = vscode.window.activeTextEditor?.document;
    if (document && document.languageId === 'op2') return document.uri;
    void vscode.window.showWarningMessage('Open an .op2 file first.');
    return undefined;
  }

  private async runningClient(): Promise<LanguageClient | undefined> {
    if (this.starting) await this.starting;
    if (this.client?.isRunning()) return this.client;
    const message =
      this.state === 'missing' ? 'The op2 language server was not found; see the OP2 output.' : 'The op2 language server is not running; try "OP2: Restart Server".';
    void vscode.window.showErrorMessage(message, 'Show Output').then((choice) => {
      if (choice) this.output.show(true);
    });
    return undefined;
  }

  async buildGraph(uri?: vscode.Uri): Promise<void> {
    const target = this.targetUri(uri);
    if (!target) return;
    const client = await this.runningClient();
    if (!client) return;
    vscode.window.setStatusBarMessage('$(sync~spin) op2: building graph…', 3000);
    try {
      await client.sendRequest(ExecuteCommandRequest.type, { command: SERVER_COMMANDS.build, arguments: [target.toString()] });
    } catch (error) {
      void vscode.window.showErrorMessage(`op2 build failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /**
   * "Import OP2 Application…": the server runs `op2 import` on the C/C++
   * file (the explorer's or the active editor's), showing its progress with
   * a cancel button, and writes `<stem>.op2` and the instance beside it;
   * the program is then opened and the report is in the output.
   */
  async importApplication(uri?: vscode.Uri): Promise<Imported | undefined> {
    const editor = vscode.window.activeTextEditor?.document;
    const target = uri instanceof Object && 'scheme' in uri ? uri : editor?.uri;
    if (!target || target.scheme !== 'file' || !C_SOURCE.test(target.path)) {
      void vscode.window.showWarningMessage('op2: open the main C/C++ file of an OP2 application (the one that calls op_init) first.');
      return undefined;
    }
    if (!(await this.trustedForImport())) return undefined;
    if (editor && editor.uri.toString() === target.toString() && editor.isDirty) await editor.save();
    const client = await this.runningClient();
    if (!client) return undefined;
    let answer: Imported;
    try {
      answer = (await client.sendRequest(ExecuteCommandRequest.type, {
        command: SERVER_COMMANDS.import,
        arguments: [target.toString()],
      })) as Imported;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      void vscode.window.showErrorMessage(`op2 import failed: ${message}`, 'Show Output').then((choice) => {
        if (choice) this.output.show(true);
      });
      return undefined;
    }
    if (typeof answer?.program !== 'string') return answer;
    const program = vscode.Uri.parse(answer.program);
    const written = [program, answer.instance ? vscode.Uri.parse(answer.instance) : undefined]
      .filter((u): u is vscode.Uri => u !== undefined)
      .map((u) => path.posix.basename(u.path))
      .join(' and ');
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(program), { preview: false });
    const units = (answer.units ?? []).map((u) => path.posix.basename(vscode.Uri.parse(u).path));
    const from = path.posix.basename(target.path) + (units.length > 0 ? ` with ${units.join(', ')}` : '');
    const shown = answer.faithful
      ? vscode.window.showInformationMessage(`op2: imported ${from} into ${written}.`, 'Show Report')
      : vscode.window.showWarningMessage(
          `op2: imported ${from} into ${written}, but the result is not faithful to the application: see the report.`,
          'Show Report',
        );
    void shown.then((choice) => {
      if (choice) this.output.show(true);
    });
    return answer;
  }

  /**
   * An import compiles the application with the system's compiler and runs
   * its set-up: code of the workspace, which Restricted Mode does not run.
   * Says so, with a way to trust the folder, and answers whether to go on.
   */
  async trustedForImport(): Promise<boolean> {
    if (vscode.workspace.isTrusted) return true;
    const choice = await vscode.window.showWarningMessage(
      'op2: importing compiles the application and runs its set-up, which is code of this workspace: trust the workspace first (Restricted Mode runs none of it).',
      'Manage Workspace Trust',
    );
    if (choice) void vscode.commands.executeCommand('workbench.trust.manage');
    return false;
  }

  async showDeviceType(uri?: vscode.Uri | string, setName?: string): Promise<string | undefined> {
    const target = this.targetUri(uri);
    if (!target) return undefined;
    const client = await this.runningClient();
    if (!client) return undefined;
    let set = setName;
    if (set === undefined) {
      const editor = vscode.window.activeTextEditor;
      if (editor && editor.document.uri.toString() === target.toString()) {
        const range = editor.document.getWordRangeAtPosition(editor.selection.active, IDENTIFIER);
        if (range) set = editor.document.getText(range);
      }
    }
    const ask = (args: string[]) => client.sendRequest(ExecuteCommandRequest.type, { command: SERVER_COMMANDS.showDeviceType, arguments: args });
    let text: unknown;
    try {
      text = await ask(set === undefined ? [target.toString()] : [target.toString(), set]);
      if ((text === null || text === undefined) && set !== undefined && setName === undefined) {
        // The word under the cursor was not a set: ask for the default.
        set = undefined;
        text = await ask([target.toString()]);
      }
    } catch (error) {
      void vscode.window.showErrorMessage(`op2: cannot show the device type: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    }
    if (typeof text !== 'string') {
      void vscode.window.showInformationMessage('op2: no generated device type here. Put the cursor on a set name, or fix the errors in the program first.');
      return undefined;
    }
    await this.openDeviceType(target, set, text);
    return text;
  }

  /** Opens `text` in a read-only virtual document. */
  async openDeviceType(source: vscode.Uri | undefined, set: string | undefined, text: string): Promise<vscode.Uri> {
    const stem = source ? path.posix.basename(source.path).replace(/\.op2$/, '') : 'op2';
    const uri = vscode.Uri.from({
      scheme: DEVICE_TYPE_SCHEME,
      path: `/${stem}/${set ?? 'all-device-types'}.txt`,
      query: source?.toString() ?? '',
    });
    this.deviceTypes.set(uri.toString(), text);
    this.deviceTypeChanged.fire(uri);
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(document, { preview: true, viewColumn: vscode.ViewColumn.Beside });
    return uri;
  }

  /**
   * Where build on save writes the graph of `source`: the server's answer
   * (`op2.graphPath`, the very path the build decides, links resolved), or,
   * with no server running or one too old to know the command, the same
   * rule worked out here. When the server would write nothing, says why and
   * gives undefined.
   */
  private async graphFile(source: vscode.Uri): Promise<string | undefined> {
    const client = this.client?.isRunning() ? this.client : undefined;
    if (client) {
      try {
        const answer = (await client.sendRequest(ExecuteCommandRequest.type, {
          command: SERVER_COMMANDS.graphPath,
          arguments: [source.toString()],
        })) as { uri?: unknown } | null;
        if (answer && typeof answer.uri === 'string') return vscode.Uri.parse(answer.uri).fsPath;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (!/unknown command/.test(message)) {
          void vscode.window.showWarningMessage(`op2: no graph is written for this file: ${message}`);
          return undefined;
        }
      }
    }
    const folder = vscode.workspace.getWorkspaceFolder(source)?.uri.fsPath;
    return graphPath(source.fsPath, this.config().get<string>('build.outDir', ''), folder);
  }

  async openGraphFile(uri?: vscode.Uri): Promise<void> {
    const target = this.targetUri(uri);
    if (!target) return;
    if (target.scheme !== 'file') {
      void vscode.window.showWarningMessage('op2: save the program to a file first; the graph is written beside it.');
      return;
    }
    const file = await this.graphFile(target);
    if (file === undefined) return;
    const graph = vscode.Uri.file(file);
    try {
      await vscode.workspace.fs.stat(graph);
    } catch {
      const choice = await vscode.window.showInformationMessage(`op2: no graph at ${file} yet.`, 'Build Now');
      if (choice === 'Build Now') await this.buildGraph(target);
      return;
    }
    const document = await vscode.workspace.openTextDocument(graph);
    await vscode.window.showTextDocument(document, { preview: false });
  }

  /**
   * VS Code disposes an extension's subscriptions right after it calls
   * `deactivate`, without waiting for the promise `deactivate` returns. The
   * client is then still stopping and writes its last log and trace lines
   * (`op2.trace.server`) to the output channel, so the channel and the
   * status item close only once the client has stopped; closing them
   * earlier makes VS Code log `Channel has been closed`.
   */
  dispose(): void {
    for (const disposable of this.disposables.splice(0)) disposable.dispose();
    void this.stop().finally(() => {
      this.output.dispose();
      this.status.dispose();
    });
  }
}

let active: Op2Extension | undefined;

export async function activate(context: vscode.ExtensionContext, host: DiscoveryHost = nodeHost()): Promise<Op2Extension> {
  const extension = new Op2Extension(context, host);
  active = extension;
  context.subscriptions.push(extension);
  extension.register();
  await extension.start();
  return extension;
}

export async function deactivate(): Promise<void> {
  const extension = active;
  active = undefined;
  await extension?.stop();
}
