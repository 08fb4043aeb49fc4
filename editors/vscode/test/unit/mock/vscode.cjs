// A mock of the parts of the `vscode` module the extension uses. Everything
// the extension does is recorded in `__mock` for the tests to inspect.
'use strict';
const nodePath = require('node:path');
const fs = require('node:fs');

class Uri {
  constructor(scheme, authority, path, query, fragment) {
    this.scheme = scheme;
    this.authority = authority || '';
    this.path = path || '';
    this.query = query || '';
    this.fragment = fragment || '';
  }
  get fsPath() {
    return this.path;
  }
  static file(path) {
    return new Uri('file', '', nodePath.resolve(path));
  }
  static parse(text) {
    const m = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(text);
    if (!m) throw new Error(`not a URI: ${text}`);
    return new Uri(m[1], m[2], decodeURIComponent(m[3]), m[4], m[5]);
  }
  static from(parts) {
    return new Uri(parts.scheme, parts.authority, parts.path, parts.query, parts.fragment);
  }
  with(change) {
    return new Uri(change.scheme ?? this.scheme, change.authority ?? this.authority, change.path ?? this.path, change.query ?? this.query, change.fragment ?? this.fragment);
  }
  toString() {
    const authority = this.scheme === 'file' || this.authority ? `//${this.authority}` : '';
    const query = this.query ? `?${encodeURIComponent(this.query)}` : '';
    return `${this.scheme}:${authority}${encodeURI(this.path)}${query}`;
  }
  toJSON() {
    return this.toString();
  }
}

class Disposable {
  constructor(fn) {
    this.fn = fn;
  }
  dispose() {
    if (this.fn) this.fn();
    this.fn = undefined;
  }
  static from(...items) {
    return new Disposable(() => items.forEach((i) => i.dispose()));
  }
}

class EventEmitter {
  constructor() {
    this.listeners = [];
    this.event = (listener) => {
      this.listeners.push(listener);
      return new Disposable(() => (this.listeners = this.listeners.filter((l) => l !== listener)));
    };
  }
  fire(value) {
    for (const listener of [...this.listeners]) listener(value);
  }
  dispose() {
    this.listeners = [];
  }
}

class Position {
  constructor(line, character) {
    this.line = line;
    this.character = character;
  }
}

class Range {
  constructor(start, end) {
    this.start = start;
    this.end = end;
  }
}

const mock = {};

function reset() {
  mock.commands = new Map();
  mock.executed = [];
  mock.messages = [];
  mock.choices = [];
  mock.outputChannels = [];
  mock.statusItems = [];
  mock.statusBarMessages = [];
  // User settings, and the values a workspace's .vscode/settings.json gives
  // (which win in `get`, as in VS Code for a setting a workspace may set).
  mock.settings = {};
  mock.workspaceSettings = {};
  mock.configurationListeners = [];
  mock.contentProviders = new Map();
  mock.shownDocuments = [];
  mock.workspaceFolders = undefined;
  mock.files = new Set();
  mock.watchers = [];
  vscode.window.activeTextEditor = undefined;
  vscode.workspace.workspaceFolders = undefined;
  vscode.workspace.isTrusted = true;
}

/** A text document for `activeTextEditor`. */
function textDocument(uri, text, languageId = 'op2') {
  const lines = text.split('\n');
  return {
    uri,
    languageId,
    getText(range) {
      if (!range) return text;
      return lines[range.start.line].slice(range.start.character, range.end.character);
    },
    getWordRangeAtPosition(position, regex) {
      const line = lines[position.line] ?? '';
      const re = new RegExp(regex.source, 'g');
      let m;
      while ((m = re.exec(line))) {
        if (m.index <= position.character && position.character <= m.index + m[0].length) {
          return new Range(new Position(position.line, m.index), new Position(position.line, m.index + m[0].length));
        }
      }
      return undefined;
    },
  };
}

function nextChoice() {
  return Promise.resolve(mock.choices.length > 0 ? mock.choices.shift() : undefined);
}

const vscode = {
  Uri,
  Disposable,
  EventEmitter,
  Position,
  Range,
  ViewColumn: { Active: -1, Beside: -2, One: 1 },
  LanguageStatusSeverity: { Information: 0, Warning: 1, Error: 2 },
  StatusBarAlignment: { Left: 1, Right: 2 },
  commands: {
    registerCommand(id, handler) {
      if (mock.commands.has(id)) throw new Error(`command '${id}' already exists`);
      mock.commands.set(id, handler);
      return new Disposable(() => mock.commands.delete(id));
    },
    async executeCommand(id, ...args) {
      mock.executed.push({ id, args });
      const handler = mock.commands.get(id);
      return handler ? handler(...args) : undefined;
    },
  },
  window: {
    activeTextEditor: undefined,
    createOutputChannel(name) {
      const channel = {
        name,
        lines: [],
        shown: 0,
        disposed: false,
        // VS Code's channels throw once disposed.
        append(text) {
          if (this.disposed) throw new Error('Channel has been closed');
          this.lines.push(text);
        },
        appendLine(text) {
          if (this.disposed) throw new Error('Channel has been closed');
          this.lines.push(text);
        },
        replace() {},
        clear() {
          this.lines = [];
        },
        show() {
          this.shown += 1;
        },
        hide() {},
        dispose() {
          this.disposed = true;
        },
      };
      mock.outputChannels.push(channel);
      return channel;
    },
    showErrorMessage(message, ...items) {
      mock.messages.push({ level: 'error', message, items });
      return nextChoice();
    },
    showWarningMessage(message, ...items) {
      mock.messages.push({ level: 'warning', message, items });
      return nextChoice();
    },
    showInformationMessage(message, ...items) {
      mock.messages.push({ level: 'information', message, items });
      return nextChoice();
    },
    setStatusBarMessage(text) {
      mock.statusBarMessages.push(text);
      return new Disposable();
    },
    async showTextDocument(document, options) {
      mock.shownDocuments.push({ document, options });
      return { document };
    },
  },
  languages: {
    createLanguageStatusItem(id, selector) {
      const item = { id, selector, text: '', detail: '', busy: false, severity: 0, disposed: false, dispose() { this.disposed = true; } };
      mock.statusItems.push(item);
      return item;
    },
    createDiagnosticCollection() {
      return { set() {}, delete() {}, clear() {}, dispose() {} };
    },
  },
  workspace: {
    workspaceFolders: undefined,
    getConfiguration(section) {
      return {
        get(key, defaultValue) {
          const full = section ? `${section}.${key}` : key;
          if (Object.prototype.hasOwnProperty.call(mock.workspaceSettings, full)) return mock.workspaceSettings[full];
          return Object.prototype.hasOwnProperty.call(mock.settings, full) ? mock.settings[full] : defaultValue;
        },
        has(key) {
          const full = section ? `${section}.${key}` : key;
          return Object.prototype.hasOwnProperty.call(mock.settings, full) || Object.prototype.hasOwnProperty.call(mock.workspaceSettings, full);
        },
        inspect(key) {
          const full = section ? `${section}.${key}` : key;
          const own = (layer) => (Object.prototype.hasOwnProperty.call(layer, full) ? layer[full] : undefined);
          const manifest = require(nodePath.join(__dirname, '..', '..', '..', 'package.json'));
          const declared = manifest.contributes.configuration.properties[full];
          return {
            key: full,
            defaultValue: declared ? declared.default : undefined,
            globalValue: own(mock.settings),
            workspaceValue: own(mock.workspaceSettings),
            workspaceFolderValue: own(mock.workspaceSettings),
          };
        },
      };
    },
    onDidChangeConfiguration(listener) {
      mock.configurationListeners.push(listener);
      return new Disposable(() => (mock.configurationListeners = mock.configurationListeners.filter((l) => l !== listener)));
    },
    getWorkspaceFolder(uri) {
      return (vscode.workspace.workspaceFolders ?? []).find((f) => uri.path.startsWith(f.uri.path + '/'));
    },
    registerTextDocumentContentProvider(scheme, provider) {
      mock.contentProviders.set(scheme, provider);
      return new Disposable(() => mock.contentProviders.delete(scheme));
    },
    async openTextDocument(uri) {
      const provider = mock.contentProviders.get(uri.scheme);
      const text = provider ? provider.provideTextDocumentContent(uri) : mock.files.has(uri.fsPath) ? '' : fs.readFileSync(uri.fsPath, 'utf8');
      return textDocument(uri, text, uri.path.endsWith('.op2') ? 'op2' : 'plaintext');
    },
    createFileSystemWatcher(glob) {
      const watcher = { glob, dispose() {} };
      mock.watchers.push(watcher);
      return watcher;
    },
    fs: {
      async stat(uri) {
        if (mock.files.has(uri.fsPath)) return { type: 1, size: 0 };
        throw new Error(`ENOENT: ${uri.fsPath}`);
      },
    },
  },
  __mock: mock,
  __reset: reset,
  __textDocument: textDocument,
  /** Fires onDidChangeConfiguration for the given changed keys; resolves when the listeners have. */
  async __changeSettings(changes, target = 'user') {
    Object.assign(target === 'workspace' ? mock.workspaceSettings : mock.settings, changes);
    const keys = Object.keys(changes);
    const event = {
      affectsConfiguration: (section) => keys.some((k) => k === section || k.startsWith(section + '.')),
    };
    await Promise.all(mock.configurationListeners.map((l) => l(event)));
  },
};

reset();
module.exports = vscode;
