// npm install's patches (package.json postinstall): every patch in patches/, and the patches of
// optional dependencies in patches-optional/ when those are installed. An install without optional
// dependencies (the Docker image: --omit=optional, no PGlite) has nothing to patch there, and
// patch-package fails on a patch whose package is missing. Any patch that does not apply fails the
// install (--error-on-fail).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(root, 'package.json'));
const patchPackageDir = path.dirname(require.resolve('patch-package/package.json'));
const { bin: binField } = JSON.parse(readFileSync(path.join(patchPackageDir, 'package.json'), 'utf8'));
const bin = path.join(patchPackageDir, typeof binField === 'string' ? binField : binField['patch-package']);

function apply(dir) {
  const res = spawnSync(process.execPath, [bin, '--error-on-fail', '--patch-dir', dir], { cwd: root, stdio: 'inherit' });
  if (res.status !== 0) process.exit(res.status ?? 1);
}

/** The package a patch file is for: "@scope+name+1.2.3.patch" -> "@scope/name". */
const packageOf = (file) => file.replace(/\+[^+]+\.patch$/, '').replace('+', '/');

apply('patches');
const optional = existsSync(path.join(root, 'patches-optional')) ? readdirSync(path.join(root, 'patches-optional')).filter((f) => f.endsWith('.patch')) : [];
const installed = optional.filter((f) => existsSync(path.join(root, 'node_modules', packageOf(f), 'package.json')));
if (installed.length === optional.length) {
  if (optional.length > 0) apply('patches-optional');
} else if (installed.length === 0) {
  console.log(`optional dependencies not installed, their patches skipped: ${optional.map(packageOf).join(', ')}`);
} else {
  console.error(`patches-optional/: some of these packages are installed and some not (${optional.map(packageOf).join(', ')}); install all or none`);
  process.exit(1);
}
