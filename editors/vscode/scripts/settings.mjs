#!/usr/bin/env node
// Generates the extension's settings from the server's own list of them, so
// that the two cannot drift apart.
//
// The source of truth is `Settings::schema()` in server/lsp/src/config.rs:
// one `SettingDescription { key, kind, default, description, values }`
// literal per setting. This script reads those literals and writes
//
//   - package.json  `contributes.configuration` (the client-only settings
//     below first, then every server setting in the server's order), and
//   - src/generated/settings.ts  the keys and defaults of the server's
//     settings, which the extension sends as the `op2` section.
//
//   node scripts/settings.mjs          rewrite both files
//   node scripts/settings.mjs --check  exit 1 if either is stale

import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The files this script reads and writes, for the extension in `extensionDir`. */
export function paths(extensionDir) {
  const repoRoot = join(extensionDir, '..', '..');
  return {
    repoRoot,
    configRs: join(repoRoot, 'server', 'lsp', 'src', 'config.rs'),
    packageJson: join(extensionDir, 'package.json'),
    generatedTs: join(extensionDir, 'src', 'generated', 'settings.ts'),
  };
}

/** Settings that only the extension reads; never sent to the server. */
export const CLIENT_SETTINGS = {
  'op2.server.path': {
    type: 'string',
    default: '',
    // `machine`: user and remote settings only. A workspace's
    // .vscode/settings.json (an untrusted repository's) never chooses what
    // runs; the extension also reads only the user's value (src/extension.ts).
    scope: 'machine',
    markdownDescription:
      'Path to the `op2` binary that runs the language server (`op2 lsp`), from your user (or remote) settings only: a workspace cannot set it. An absolute path, or one starting with `~`; a relative path or a variable such as `${workspaceFolder}` is refused. Empty: the binary bundled with the extension, then `op2` on `PATH`.',
  },
};

/**
 * Reads a Rust string literal (plain or raw) starting at `text[i]`.
 * Returns [value, index after the literal].
 */
function readRustString(text, i) {
  const raw = /^r(#*)"/.exec(text.slice(i));
  if (raw) {
    const close = '"' + raw[1];
    const start = i + raw[0].length;
    const end = text.indexOf(close, start);
    if (end < 0) throw new Error(`unterminated raw string at offset ${i}`);
    return [text.slice(start, end), end + close.length];
  }
  if (text[i] !== '"') throw new Error(`expected a string literal at offset ${i}: ${text.slice(i, i + 30)}`);
  let out = '';
  i += 1;
  for (;;) {
    const c = text[i];
    if (c === undefined) throw new Error('unterminated string literal');
    if (c === '"') return [out, i + 1];
    if (c !== '\\') {
      out += c;
      i += 1;
      continue;
    }
    const e = text[i + 1];
    i += 2;
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '0': out += '\0'; break;
      case '\\': out += '\\'; break;
      case '"': out += '"'; break;
      case "'": out += "'"; break;
      case '\n':
        // A line continuation: the newline and the next line's indentation go.
        while (/\s/.test(text[i])) i += 1;
        break;
      case 'u': {
        const m = /^\{([0-9a-fA-F]+)\}/.exec(text.slice(i));
        if (!m) throw new Error('bad \\u escape');
        out += String.fromCodePoint(parseInt(m[1], 16));
        i += m[0].length;
        break;
      }
      case 'x':
        out += String.fromCharCode(parseInt(text.slice(i, i + 2), 16));
        i += 2;
        break;
      default:
        throw new Error(`unknown escape \\${e}`);
    }
  }
}

/** Every `SettingDescription { … }` literal of config.rs, in order. */
export function parseSchema(source) {
  const start = source.indexOf('pub fn schema()');
  if (start < 0) throw new Error('`pub fn schema()` not found in config.rs');
  // The function's body: from its `{` to the matching `}`, skipping strings.
  let i = source.indexOf('{', start);
  let depth = 0;
  let end = -1;
  while (i < source.length) {
    const c = source[i];
    if (c === '"' || (c === 'r' && /^r#*"/.test(source.slice(i, i + 8)) && !/\w/.test(source[i - 1]))) {
      i = readRustString(source, i)[1];
      continue;
    }
    if (c === '/' && source[i + 1] === '/') {
      i = source.indexOf('\n', i);
      continue;
    }
    if (c === '{') depth += 1;
    if (c === '}' && --depth === 0) {
      end = i;
      break;
    }
    i += 1;
  }
  if (end < 0) throw new Error('the body of `schema()` does not end');
  const text = source.slice(source.indexOf('{', start) + 1, end);
  const settings = [];
  const opener = /SettingDescription\s*\{/g;
  let m;
  while ((m = opener.exec(text))) {
    let i = m.index + m[0].length;
    const fields = {};
    for (;;) {
      while (/[\s,]/.test(text[i])) i += 1;
      if (text[i] === '}') break;
      const name = /^([a-z_]+)\s*:\s*/.exec(text.slice(i));
      if (!name) throw new Error(`cannot read a field at: ${text.slice(i, i + 40)}`);
      i += name[0].length;
      if (name[1] === 'values') {
        const list = /^&\s*\[/.exec(text.slice(i));
        if (!list) throw new Error('`values` must be a `&[…]` literal');
        i += list[0].length;
        const values = [];
        for (;;) {
          while (/[\s,]/.test(text[i])) i += 1;
          if (text[i] === ']') { i += 1; break; }
          const [value, next] = readRustString(text, i);
          values.push(value);
          i = next;
        }
        fields.values = values;
      } else {
        const [value, next] = readRustString(text, i);
        fields[name[1]] = value;
        i = next;
      }
    }
    opener.lastIndex = i;
    for (const field of ['key', 'kind', 'default', 'description', 'values']) {
      if (!(field in fields)) throw new Error(`setting ${fields.key ?? '?'} has no \`${field}\``);
    }
    let parsedDefault;
    try {
      parsedDefault = JSON.parse(fields.default);
    } catch (error) {
      throw new Error(`the default of ${fields.key} is not JSON: ${fields.default}`);
    }
    settings.push({ ...fields, default: parsedDefault });
  }
  if (settings.length === 0) throw new Error('no SettingDescription literals found');
  return settings;
}

/** `contributes.configuration` for the given server settings. */
export function configuration(settings) {
  const properties = { ...CLIENT_SETTINGS };
  for (const setting of settings) {
    if (!setting.key.startsWith('op2.')) throw new Error(`setting ${setting.key} is not under op2.`);
    if (setting.key in CLIENT_SETTINGS) throw new Error(`setting ${setting.key} clashes with a client setting`);
    const property = { type: setting.kind, default: setting.default, markdownDescription: setting.description };
    if (setting.values.length > 0) property.enum = setting.values;
    properties[setting.key] = property;
  }
  return { title: 'OP2', properties };
}

export function generatedModule(settings) {
  const entries = settings.map((s) => `  { key: ${JSON.stringify(s.key)}, default: ${JSON.stringify(s.default)} },`);
  return [
    '// Generated by scripts/settings.mjs from Settings::schema() in',
    '// server/lsp/src/config.rs. Do not edit: run `npm run settings`.',
    '',
    '/** Every setting the server reads, in the `op2` section, with its default. */',
    'export const SERVER_SETTINGS: ReadonlyArray<{ key: string; default: unknown }> = [',
    ...entries,
    '];',
    '',
  ].join('\n');
}

function main() {
  const check = process.argv.includes('--check');
  const { repoRoot, configRs, packageJson, generatedTs } = paths(join(dirname(fileURLToPath(import.meta.url)), '..'));
  const settings = parseSchema(readFileSync(configRs, 'utf8'));
  const manifestText = readFileSync(packageJson, 'utf8');
  const manifest = JSON.parse(manifestText);
  manifest.contributes.configuration = configuration(settings);
  const wantManifest = JSON.stringify(manifest, null, 2) + '\n';
  const wantModule = generatedModule(settings);
  let haveModule = '';
  try {
    haveModule = readFileSync(generatedTs, 'utf8');
  } catch {}
  const stale = [];
  if (manifestText !== wantManifest) stale.push(relative(repoRoot, packageJson));
  if (haveModule !== wantModule) stale.push(relative(repoRoot, generatedTs));
  if (check) {
    if (stale.length > 0) {
      console.error(`stale: ${stale.join(', ')} do not match Settings::schema() in server/lsp/src/config.rs`);
      console.error('run `npm run settings` in editors/vscode and commit the result');
      process.exit(1);
    }
    console.log(`settings are up to date (${settings.length} server settings)`);
    return;
  }
  writeFileSync(packageJson, wantManifest);
  mkdirSync(dirname(generatedTs), { recursive: true });
  writeFileSync(generatedTs, wantModule);
  console.log(`wrote ${settings.length} server settings${stale.length ? ` (updated ${stale.join(', ')})` : ''}`);
}

if (typeof import.meta.url === 'string' && process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
