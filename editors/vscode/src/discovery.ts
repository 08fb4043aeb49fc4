// Finding the `op2` binary: the `op2.server.path` setting, then the binary
// bundled with the extension, then `op2` on PATH. Pure: everything it needs
// from the machine comes in through `DiscoveryHost`, so that tests can run it
// for any platform.

import * as path from 'node:path';

export interface DiscoveryHost {
  platform: NodeJS.Platform;
  /** The PATH environment variable. */
  pathEnv: string | undefined;
  /** PATHEXT on Windows. */
  pathExt?: string | undefined;
  homedir: string;
  /** Whether `file` is an executable regular file. */
  isExecutable(file: string): boolean;
  /** Restores the executable bit of the bundled binary if unpacking lost it. */
  prepareBundled?(file: string): void;
}

export type ServerSource = 'setting' | 'bundled' | 'path';

export interface Found {
  kind: 'found';
  path: string;
  source: ServerSource;
}

export interface Missing {
  kind: 'missing';
  /** What to tell the user: what was tried and how to fix it. */
  message: string;
  /** Whether the `op2.server.path` setting pointed nowhere. */
  badSetting: boolean;
  tried: string[];
}

export interface DiscoveryInput {
  /**
   * The `op2.server.path` setting from the user's (or remote machine's)
   * settings only, never a workspace's (empty or undefined: not set).
   */
  setting: string | undefined;
  /** The extension's install directory. */
  extensionPath: string;
}

function pathApi(platform: NodeJS.Platform): path.PlatformPath {
  return platform === 'win32' ? path.win32 : path.posix;
}

/**
 * The file names `op2` may have on this platform. On Windows, those of
 * PATHEXT that a process can be started from without a shell, as the
 * language client starts the server: `.exe` and `.com`. An `op2.cmd` or
 * `op2.bat` (an npm shim) would be found first and then fail to start
 * (Node refuses batch files without a shell since CVE-2024-27980), hiding an
 * `op2.exe` later on PATH.
 */
export function executableNames(host: Pick<DiscoveryHost, 'platform' | 'pathExt'>): string[] {
  if (host.platform !== 'win32') return ['op2'];
  const extensions = (host.pathExt ?? '.EXE;.CMD;.BAT')
    .split(';')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e === '.com');
  return ['op2.exe', ...extensions.map((e) => 'op2' + e)];
}

/**
 * The setting as an absolute path: `~` is the user's home; anything else must
 * be absolute. Nothing is resolved against a workspace folder: the folder may
 * be a repository the user has not read, and a path into it would run its
 * code (docs/editors.md, "What a workspace can set").
 */
export function expandSetting(setting: string, host: DiscoveryHost): { path: string } | { error: string } {
  const p = pathApi(host.platform);
  let value = setting.trim();
  if (value.includes('${')) {
    return { error: 'variables such as ${workspaceFolder} are not expanded; give an absolute path, or one starting with ~' };
  }
  if (value === '~' || value.startsWith('~/') || value.startsWith('~\\')) {
    value = p.join(host.homedir, value.slice(1));
  }
  if (!p.isAbsolute(value)) {
    return { error: 'it is a relative path; give an absolute path, or one starting with ~' };
  }
  return { path: p.normalize(value) };
}

/** The bundled binary's path inside the extension. */
export function bundledPath(extensionPath: string, host: Pick<DiscoveryHost, 'platform'>): string {
  const p = pathApi(host.platform);
  return p.join(extensionPath, 'server', host.platform === 'win32' ? 'op2.exe' : 'op2');
}

const HOW_TO_INSTALL =
  'Build it with `cargo install --path server/cli` in the op2 repository (which puts `op2` on PATH), ' +
  'or set `op2.server.path` to the binary.';

export function findServer(input: DiscoveryInput, host: DiscoveryHost): Found | Missing {
  const p = pathApi(host.platform);
  const setting = input.setting?.trim() ?? '';
  if (setting.length > 0) {
    const expansion = expandSetting(setting, host);
    if ('error' in expansion) {
      return {
        kind: 'missing',
        badSetting: true,
        tried: [],
        message: `op2.server.path is set to "${setting}", which is not used: ${expansion.error}. Fix the setting in your user settings, or clear it to use the bundled server or \`op2\` on PATH.`,
      };
    }
    const expanded = expansion.path;
    if (host.isExecutable(expanded)) return { kind: 'found', path: expanded, source: 'setting' };
    return {
      kind: 'missing',
      badSetting: true,
      tried: [expanded],
      message: `op2.server.path is set to "${setting}", but there is no executable at ${expanded}. Fix the setting, or clear it to use the bundled server or \`op2\` on PATH.`,
    };
  }
  const tried: string[] = [];
  const bundled = bundledPath(input.extensionPath, host);
  tried.push(bundled);
  host.prepareBundled?.(bundled);
  if (host.isExecutable(bundled)) return { kind: 'found', path: bundled, source: 'bundled' };
  const delimiter = host.platform === 'win32' ? ';' : ':';
  // A relative entry (`.`, `bin`) would be taken from the extension host's
  // working directory, which may be the workspace: such entries are skipped.
  const dirs = (host.pathEnv ?? '')
    .split(delimiter)
    .map((d) => d.replace(/^"(.*)"$/, '$1'))
    .filter((d) => d.length > 0 && p.isAbsolute(d));
  for (const dir of dirs) {
    for (const name of executableNames(host)) {
      const candidate = p.join(dir, name);
      tried.push(candidate);
      if (host.isExecutable(candidate)) return { kind: 'found', path: candidate, source: 'path' };
    }
  }
  return {
    kind: 'missing',
    badSetting: false,
    tried,
    message: `The op2 language server was not found: no bundled binary and no \`op2\` on PATH. ${HOW_TO_INSTALL}`,
  };
}

/** The real host, for the extension. */
export function nodeHost(): DiscoveryHost {
  // Required lazily so that tests of the pure functions need no filesystem.
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  const fs = require('node:fs') as typeof import('node:fs');
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  const os = require('node:os') as typeof import('node:os');
  return {
    platform: process.platform,
    pathEnv: process.env.PATH ?? process.env.Path,
    pathExt: process.env.PATHEXT,
    homedir: os.homedir(),
    prepareBundled(file: string): void {
      if (process.platform === 'win32') return;
      try {
        const stat = fs.statSync(file);
        if (stat.isFile() && (stat.mode & 0o111) === 0) fs.chmodSync(file, stat.mode | 0o755);
      } catch {
        // No bundled binary: nothing to prepare.
      }
    },
    isExecutable(file: string): boolean {
      try {
        const stat = fs.statSync(file);
        if (!stat.isFile()) return false;
        if (process.platform === 'win32') return true;
        fs.accessSync(file, fs.constants.X_OK);
        return true;
      } catch {
        return false;
      }
    },
  };
}
