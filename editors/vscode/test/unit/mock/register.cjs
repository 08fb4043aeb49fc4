// Loaded with `node --require`: makes `require('vscode')` and
// `require('vscode-languageclient/node')` return the mocks in this folder, so
// that the extension's activation runs under plain Node.
'use strict';
const Module = require('node:module');
const path = require('node:path');

const mocks = {
  vscode: path.join(__dirname, 'vscode.cjs'),
  'vscode-languageclient/node': path.join(__dirname, 'languageclient.cjs'),
  'vscode-languageclient': path.join(__dirname, 'languageclient.cjs'),
};
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (Object.prototype.hasOwnProperty.call(mocks, request)) return mocks[request];
  return resolve.call(this, request, ...rest);
};
