#!/usr/bin/env node
// Run by `npm run package` before vsce: a generic .vsix (one for every
// platform) must not carry a server. `.vscodeignore` lets server/op2 into any
// package, and the extension prefers a bundled server to `op2` on PATH, so a
// binary left in server/ by an earlier `scripts/bundle-server.mjs` would ship
// that old build, for one platform, to everyone who installs this package.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bundled = ['op2', 'op2.exe'].map((name) => join(root, 'server', name)).filter(existsSync);
if (bundled.length > 0) {
  console.error(
    `error: ${bundled.join(' and ')} would go into a generic .vsix, which must not carry a server\n` +
      '  remove editors/vscode/server for a generic package, or make a package for this platform:\n' +
      '  npx vsce package --no-dependencies --target "$(node scripts/bundle-server.mjs --target)"',
  );
  process.exit(1);
}
