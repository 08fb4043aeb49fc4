#!/usr/bin/env node
// Copies an op2 binary into server/ so that `vsce package --target …` makes a
// platform-specific .vsix that needs no op2 on PATH:
//
//   node scripts/bundle-server.mjs ../../target/release/op2
//   npx vsce package --no-dependencies --target "$(node scripts/bundle-server.mjs --target)"
//
// `--target` prints the vsce target of this machine (linux-x64, darwin-arm64, …).
import { chmodSync, copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = `${process.platform === 'win32' ? 'win32' : process.platform}-${process.arch}`;
const arg = process.argv[2];
if (arg === '--target') {
  console.log(target);
} else if (arg) {
  const source = resolve(arg);
  if (!existsSync(source)) {
    console.error(`no binary at ${source}: build it with \`cargo build --release -p op2-cli\``);
    process.exit(1);
  }
  const out = join(root, 'server', process.platform === 'win32' ? 'op2.exe' : 'op2');
  mkdirSync(dirname(out), { recursive: true });
  copyFileSync(source, out);
  chmodSync(out, 0o755);
  console.log(`bundled ${source} as ${out} (vsce target ${target})`);
} else {
  console.error('usage: node scripts/bundle-server.mjs PATH_TO_OP2 | --target');
  process.exit(2);
}
