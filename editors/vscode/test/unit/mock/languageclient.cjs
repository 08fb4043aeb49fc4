// A mock of vscode-languageclient/node: records what the extension asks of
// the client, and answers requests through `__mock.respond`.
'use strict';

const State = { Stopped: 1, Starting: 3, Running: 2 };
const mock = { instances: [], failStart: undefined, respond: () => null };

class LanguageClient {
  constructor(id, name, serverOptions, clientOptions) {
    this.id = id;
    this.name = name;
    this.serverOptions = serverOptions;
    this.clientOptions = clientOptions;
    this.state = State.Stopped;
    this.stateListeners = [];
    this.notificationHandlers = new Map();
    this.requests = [];
    this.notifications = [];
    this.started = 0;
    this.stopped = 0;
    this.disposed = false;
    mock.instances.push(this);
  }
  get outputChannel() {
    return this.clientOptions.outputChannel;
  }
  setState(state) {
    const oldState = this.state;
    this.state = state;
    for (const listener of this.stateListeners) listener({ oldState, newState: state });
  }
  onDidChangeState(listener) {
    this.stateListeners.push(listener);
    return { dispose() {} };
  }
  onNotification(type, handler) {
    this.notificationHandlers.set(typeof type === 'string' ? type : type.method, handler);
    return { dispose() {} };
  }
  async start() {
    this.started += 1;
    this.setState(State.Starting);
    if (mock.failStart) {
      this.setState(State.Stopped);
      throw new Error(mock.failStart);
    }
    this.setState(State.Running);
  }
  async stop() {
    this.stopped += 1;
    // Like the real client with tracing on: the shutdown is traced to the
    // output channel after a turn of the event loop.
    await new Promise((resolve) => setImmediate(resolve));
    this.outputChannel?.appendLine('[Trace] Sending notification \'exit\'.');
    this.setState(State.Stopped);
  }
  async dispose() {
    this.disposed = true;
  }
  isRunning() {
    return this.state === State.Running;
  }
  async sendRequest(type, params) {
    const method = typeof type === 'string' ? type : type.method;
    this.requests.push({ method, params });
    return mock.respond(method, params);
  }
  async sendNotification(type, params) {
    this.notifications.push({ method: typeof type === 'string' ? type : type.method, params });
  }
  log(level, message) {
    this.outputChannel.appendLine(`[${level}] ${message}`);
  }
  info(message) {
    this.log('Info', message);
  }
  warn(message) {
    this.log('Warn', message);
  }
  error(message) {
    this.log('Error', message);
  }
  /** Test helper: the server sent a notification. */
  receive(method, params) {
    const handler = this.notificationHandlers.get(method);
    if (!handler) throw new Error(`no handler for ${method}`);
    return handler(params);
  }
  /** Test helper: a code lens' command went through the middleware. */
  async executeThroughMiddleware(command, args) {
    const next = (c, a) => this.sendRequest({ method: 'workspace/executeCommand' }, { command: c, arguments: a });
    const middleware = this.clientOptions.middleware && this.clientOptions.middleware.executeCommand;
    return middleware ? middleware(command, args, next) : next(command, args);
  }
}

module.exports = {
  LanguageClient,
  State,
  RevealOutputChannelOn: { Debug: 0, Info: 1, Warn: 2, Error: 3, Never: 4 },
  TransportKind: { stdio: 0, ipc: 1, pipe: 2, socket: 3 },
  ExecuteCommandRequest: { type: { method: 'workspace/executeCommand' } },
  DidChangeConfigurationNotification: { type: { method: 'workspace/didChangeConfiguration' } },
  LogMessageNotification: { type: { method: 'window/logMessage' } },
  __mock: mock,
  __reset() {
    mock.instances = [];
    mock.failStart = undefined;
    mock.respond = () => null;
  },
};
